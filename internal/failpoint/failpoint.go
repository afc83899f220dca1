//go:build !nexatest

package failpoint

// Enabled is false: this build has no failpoints, so tests that need one
// skip (the crash stories check it through their [testknobs] condition).
const Enabled = false

// Hit does nothing in a production build: whatever the environment says,
// a user's process is never stopped by a test's failpoint.
func Hit(string) {}

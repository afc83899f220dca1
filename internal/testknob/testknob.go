//go:build !nexatest

package testknob

import "time"

// Enabled is false: this build has no test knobs, so tests that need one
// skip (the stories check it through their [testknobs] condition).
const Enabled = false

// LeaseTTL is zero in a production build: executors take the runtime's
// default lease whatever the environment says.
func LeaseTTL() time.Duration { return 0 }

// ClockOffset is zero in a production build: runs use the wall clock
// whatever the environment says.
func ClockOffset() time.Duration { return 0 }

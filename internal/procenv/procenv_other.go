//go:build !linux

package procenv

// HideSecrets does nothing on systems other than Linux: the environment
// block and the dumpable flag it relies on are Linux's. Elsewhere, run
// tools that must not see nexa's keys under another user.
func HideSecrets() error { return nil }

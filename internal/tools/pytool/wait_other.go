//go:build !linux

package pytool

import (
	"errors"
	"os"
)

// errUnsupported is why no Python tool runs here: a call's process group
// is stopped only after waiting for its leader without reaping it (waitid),
// and warm interpreters need SOCK_SEQPACKET with close-on-exec; nexa uses
// both on Linux only.
var errUnsupported = errors.New("this system cannot run Python tools: nexa runs them on Linux only")

// supported refuses every call on this system, before anything starts.
func supported() error { return errUnsupported }

// controlSocketpair is never called on this system: Execute refuses first.
func controlSocketpair() ([2]int, error) { return [2]int{-1, -1}, errUnsupported }

// openPidfd is never called on this system: Execute refuses first.
func openPidfd(int) *os.File { return nil }

//go:build unix

package engine_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used, for
// benchmarks that report CPU per step beside wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build unix

package sqlite

import (
	"syscall"
	"time"
)

// cpuTimes is the user and system CPU time this process has used, for
// benchmarks that report CPU per step beside wall time.
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

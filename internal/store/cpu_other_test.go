//go:build !unix

package store

import "time"

// cpuTimes is not measured on this system; benchmarks report 0.
func cpuTimes() (user, sys time.Duration) { return 0, 0 }

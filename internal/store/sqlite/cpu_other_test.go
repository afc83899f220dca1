//go:build !unix

package sqlite

import "time"

// cpuTimes is not measured on this system; benchmarks report 0.
func cpuTimes() (user, sys time.Duration) { return 0, 0 }

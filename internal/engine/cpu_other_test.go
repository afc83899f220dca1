//go:build !unix

package engine_test

import "time"

// cpuTime is not measured on this system; benchmarks report 0.
func cpuTime() time.Duration { return 0 }

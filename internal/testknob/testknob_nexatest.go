//go:build nexatest

package testknob

import (
	"os"
	"time"
)

// Enabled is true: this test build reads the knobs' environment variables.
const Enabled = true

// LeaseTTL is the lease a test asks for in NEXA_TEST_LEASE_TTL (a Go
// duration); zero, the runtime's default, when it is unset, not a
// duration, or not positive.
func LeaseTTL() time.Duration {
	d, err := time.ParseDuration(os.Getenv(LeaseTTLVar))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// ClockOffset is how far a test moves the clock with
// NEXA_TEST_CLOCK_OFFSET (a Go duration, negative to move it back); zero,
// the wall clock, when it is unset or not a duration.
func ClockOffset() time.Duration {
	d, err := time.ParseDuration(os.Getenv(ClockOffsetVar))
	if err != nil {
		return 0
	}
	return d
}

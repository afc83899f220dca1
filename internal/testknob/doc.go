// Package testknob holds the settings that only tests may turn: a shorter
// lease, so a story can let a killed executor's lease run out in a second,
// and an offset of the clock, so a story can let an approval's wait expire
// without waiting for it.
//
// The knobs exist only in test builds. Built with the tag nexatest (as
// `make test` builds), LeaseTTL and ClockOffset read their environment
// variables; in every other build, the binaries users run among them, they
// return zero and the package reads no environment at all, so a variable
// left set in a user's shell cannot change how a run behaves.
package testknob

// The environment variables the knobs read in a test build.
const (
	// LeaseTTLVar holds a Go duration (such as "1s"): the lease a test's
	// executors take.
	LeaseTTLVar = "NEXA_TEST_LEASE_TTL"
	// ClockOffsetVar holds a Go duration (such as "31m" or "-1h"): how far
	// a test moves the clock of the process.
	ClockOffsetVar = "NEXA_TEST_CLOCK_OFFSET"
)

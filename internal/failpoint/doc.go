// Package failpoint lets crash tests stop the process at a named point of
// the journal protocol.
//
// Failpoints exist only in test builds: built with the tag nexatest (as
// `make test` builds), Hit kills the process when the environment variable
// NEXA_TEST_FAILPOINT names the point. In every other build, the binaries
// users run among them, Hit is an empty function that the compiler removes,
// and the package reads no environment at all.
package failpoint

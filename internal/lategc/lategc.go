// Package lategc holds Go's garbage collector back at the start of a
// process, until it has allocated a set amount.
//
// Most nexa commands are short: a resume decodes a run of thousands of
// steps and ends a few tens of milliseconds later, with all of it still
// live. With the collector's default (a first cycle at 4 MiB of heap) such
// a process spends about a tenth of its CPU marking memory it never frees
// (docs/benchmarks.md#resume). A long process (a many-step run, a
// 3,000-tool compile, nexa serve) must still be collected as usual, so the
// collector is off only until the process's memory first reaches the
// threshold; from that first cycle on, the settings it had apply again.
package lategc

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// Default is the threshold nexa's commands use: more than a short command
// allocates, a small part of what a long one does.
const Default = 32 << 20

// started is set by the first Start that may change the settings: a second
// one would take the collector's "off" for the settings to restore.
var started atomic.Bool

// Start turns the collector off until the Go runtime's memory reaches
// threshold bytes, then restores the collector's settings. It does nothing
// when the user chose settings (GOGC or GOMEMLIMIT in the environment),
// threshold is not positive, or an earlier Start in the process did
// something (main calls it once; a second call must not take the first
// one's "off" for the settings to restore). It returns whether it
// changed anything.
func Start(threshold int64) bool {
	if threshold <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return false
	}
	if !started.CompareAndSwap(false, true) {
		return false
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(threshold)
	// The first cycle (the memory limit reached, or one forced) finds
	// the sentinel unreachable and queues its finalizer, which puts the
	// settings back. The sentinel holds a pointer and is larger than
	// 16 bytes, so it is never batched with other tiny objects, whose
	// finalizers may not run.
	sentinel := &struct {
		self *int
		pad  [32]byte
	}{}
	runtime.SetFinalizer(sentinel, func(any) {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	return true
}

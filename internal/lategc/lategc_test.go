package lategc

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// current reads the collector's percent and memory limit without changing
// them (a finalizer may be changing them at the same time).
func current() (int, int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

var sink [][]byte

// TestCollectorComesBackAfterTheThreshold: the collector is off at first,
// and once the process's memory passes the threshold the first cycle puts
// the earlier settings back, without anyone forcing it.
func TestCollectorComesBackAfterTheThreshold(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := current()
	defer func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	threshold := int64(before.Sys) + 16<<20
	if !Start(threshold) {
		t.Fatal("Start changed nothing with no settings in the environment")
	}
	if p, l := current(); p != -1 || l != threshold {
		t.Fatalf("after Start: GOGC %d, memory limit %d; want off and %d", p, l, threshold)
	}
	// A second Start (main's, after a resume's read ahead made the first)
	// must not take "off" for the settings to put back.
	if Start(threshold) {
		t.Fatal("a second Start changed the collector again")
	}
	// Allocate (and drop) well past the threshold: the limit starts a
	// cycle, whose finalizer restores the settings. Finalizers run on
	// their own goroutine, so give it each allocation's chance to.
	for i := 0; i < 4096; i++ {
		sink = append(sink, make([]byte, 64<<10))
		if len(sink) > 64 {
			sink = sink[:0]
		}
		if p, _ := current(); p == percent {
			break
		}
		runtime.Gosched()
	}
	sink = nil
	if p, l := current(); p != percent || l != limit {
		t.Fatalf("after 256 MiB of allocations: GOGC %d, memory limit %d; want %d and %d back", p, l, percent, limit)
	}
}

// TestUserSettingsWin: GOGC or GOMEMLIMIT in the environment are the
// user's choice and are left alone.
func TestUserSettingsWin(t *testing.T) {
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "200")
			percent, limit := current()
			if Start(1 << 30) {
				t.Fatalf("Start changed the collector although %s is set", name)
			}
			if p, l := current(); p != percent || l != limit {
				t.Fatalf("settings changed: %d %d", p, l)
			}
		})
	}
	if Start(0) || Start(math.MinInt64) {
		t.Fatal("Start with no threshold changed the collector")
	}
}

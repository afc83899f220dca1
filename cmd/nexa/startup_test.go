package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Start-up budget per nexa package, in what its init allocates (counts of
// allocations do not depend on the machine's load; milliseconds do). Today
// the largest is internal/stdlib (its catalogue, ~35 KB, ~60 allocations).
// A parser, template set or schema built at package level costs far more
// (the participle grammars: 0.6 MB, 4,400 allocations; the serve
// templates: 80 KB, 1,400), so it fails here: build such things on first
// use (sync.OnceValue) instead. See docs/benchmarks.md, "Start-up".
const (
	maxInitBytes  = 64 << 10
	maxInitAllocs = 400
)

// TestStartupInitIsLight runs this test binary with GODEBUG=inittrace=1 and
// no tests, so that only package initialisation runs, and checks every nexa
// package's init against the budget above.
func TestStartupInitIsLight(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("running the test binary for its init trace: %v\n%s", err, stderr.String())
	}
	const prefix = "github.com/nexa-run/nexa/"
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, D ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		if !strings.HasPrefix(f[1], prefix) {
			continue
		}
		seen++
		bytesN, err1 := strconv.Atoi(f[7])
		allocs, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			t.Fatalf("cannot read init trace line %q", sc.Text())
		}
		if bytesN > maxInitBytes || allocs > maxInitAllocs {
			t.Errorf("init of %s allocates %d bytes in %d allocations at start-up (budget %d bytes, %d allocations): build it on first use",
				f[1], bytesN, allocs, maxInitBytes, maxInitAllocs)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace line for a nexa package; GODEBUG=inittrace=1 printed:\n%s", stderr.String())
	}
}

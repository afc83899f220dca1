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
// the largest are internal/stdlib (its catalogue, ~35 KB, ~60 allocations)
// and internal/secrets (~140 allocations).
// A parser, template set or schema built at package level costs far more
// (the participle grammars: 0.6 MB, 4,400 allocations; the serve
// templates: 80 KB, 1,400), so it fails here: build such things on first
// use (sync.OnceValue) instead. See docs/benchmarks.md#start-up.
const (
	maxInitBytes  = 48 << 10
	maxInitAllocs = 200
)

// Start-up budget of any one package, nexa's or a dependency's, and of all
// of them together. Today the largest dependency but one is openai-go
// (145 KB, 1,083 allocations). A dependency that does real work in init
// fails here: choose another, or keep it off the import graph.
//
// The one exception is chosen: the JSON Schema validator
// santhosh-tekuri/jsonschema compiles the meta-schemas of its drafts in
// init (1.7 MB, 21,300 allocations, 3-7 ms of every nexa process). It gives
// every error at its instance location for drafts 4 to 2020-12, which
// nexa's messages are built on, and that start-up cost was accepted and
// written down (docs/benchmarks.md). It has its own budget, so that it
// cannot grow unnoticed either; the total budget includes it.
const (
	maxDepInitBytes    = 192 << 10
	maxDepInitAllocs   = 1500
	maxTotalInitBytes  = 3 << 20
	maxTotalInitAllocs = 30000
)

// exceptions are the dependencies with a budget of their own, in bytes
// and allocations of their init.
var exceptions = map[string][2]int{
	"github.com/santhosh-tekuri/jsonschema/v6": {2 << 20, 24000},
}

// TestStartupInitIsLight runs this test binary with GODEBUG=inittrace=1 and
// no tests, so that only package initialisation runs, and checks every nexa
// package's init, every package's and their sum against the budgets above.
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
	totalBytes, totalAllocs := 0, 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, D ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		bytesN, err1 := strconv.Atoi(f[7])
		allocs, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			t.Fatalf("cannot read init trace line %q", sc.Text())
		}
		totalBytes += bytesN
		totalAllocs += allocs
		maxBytes, maxAllocs := maxDepInitBytes, maxDepInitAllocs
		if ex, ok := exceptions[f[1]]; ok {
			maxBytes, maxAllocs = ex[0], ex[1]
		}
		if bytesN > maxBytes || allocs > maxAllocs {
			t.Errorf("init of %s allocates %d bytes in %d allocations at start-up (budget of any package %d bytes, %d allocations)",
				f[1], bytesN, allocs, maxBytes, maxAllocs)
		}
		if !strings.HasPrefix(f[1], prefix) {
			continue
		}
		seen++
		if bytesN > maxInitBytes || allocs > maxInitAllocs {
			t.Errorf("init of %s allocates %d bytes in %d allocations at start-up (budget %d bytes, %d allocations): build it on first use",
				f[1], bytesN, allocs, maxInitBytes, maxInitAllocs)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace line for a nexa package; GODEBUG=inittrace=1 printed:\n%s", stderr.String())
	}
	if totalBytes > maxTotalInitBytes || totalAllocs > maxTotalInitAllocs {
		t.Errorf("package inits allocate %d bytes in %d allocations in all (budget %d bytes, %d allocations)",
			totalBytes, totalAllocs, maxTotalInitBytes, maxTotalInitAllocs)
	}
}

package runtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/runtime"
	"github.com/nexa-run/nexa/internal/runtime/state"
	"github.com/nexa-run/nexa/internal/store"
)

// manyRunsEnv names the store the helper processes of TestManyRunsOneStore
// share; manyRunsCount how many runs each drives.
const (
	manyRunsEnv   = "NEXA_MANYRUNS_STORE"
	manyRunsCount = "NEXA_MANYRUNS_RUNS"
)

// TestManyRunsHelper is one process of TestManyRunsOneStore: it drives runs
// one after the other, each with two rounds of a pure tool, and prints one
// line per run. It does nothing in a normal test run.
func TestManyRunsHelper(t *testing.T) {
	path := os.Getenv(manyRunsEnv)
	if path == "" {
		t.Skip("helper process for TestManyRunsOneStore")
	}
	n, _ := strconv.Atoi(os.Getenv(manyRunsCount))
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		fmt.Printf("error open: %v\n", err)
		return
	}
	defer s.Close()
	prog := &compile.Program{
		Hash: "sha256:many",
		Tools: []*compile.Tool{{Name: "echo", Description: "Echo", Risk: "low", Timeout: 5,
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
			Body:       compile.Body{Kind: compile.BodyNative}}},
		Agents: []*compile.Agent{{Name: "A", Prompt: "p", Tools: []string{"echo"}, Retry: -1}},
	}
	r, err := runtime.NewRunner(runtime.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: loopProvider{rounds: 2},
		Executors: map[compile.BodyKind]runtime.Executor{compile.BodyNative: echoExec{}}})
	if err != nil {
		fmt.Printf("error runner: %v\n", err)
		return
	}
	for i := 0; i < n; i++ {
		st, err := r.Start(ctx, runtime.NewRun{Task: "t", WorkDir: "/w"})
		switch {
		case err != nil && st != nil:
			fmt.Printf("error %s %s: %v\n", st.ID, st.Status, err)
		case err != nil:
			fmt.Printf("error - -: %v\n", err)
		default:
			fmt.Printf("run %s %s\n", st.ID, st.Status)
		}
	}
}

// manyRuns starts procs helper processes that each drive runs runs on one
// store at the same time, and returns what they printed, by line.
func manyRuns(t testing.TB, path string, procs, runs int) []string {
	var (
		mu    sync.Mutex
		lines []string
		wg    sync.WaitGroup
	)
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestManyRunsHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), manyRunsEnv+"="+path, manyRunsCount+"="+strconv.Itoa(runs))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "run ") || strings.HasPrefix(l, "error ") {
					mu.Lock()
					lines = append(lines, l)
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				mu.Lock()
				lines = append(lines, fmt.Sprintf("error process: %v: %s", err, stderr.String()))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return lines
}

// TestManyRunsOneStore is the load of issue 10: 16 processes × 25 runs in
// parallel on one SQLite store. Every run completes: none fails because
// the store was busy, none is left running part-way, no call is left with
// an unknown outcome.
func TestManyRunsOneStore(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 16 processes")
	}
	const procs, runs = 16, 25
	path := t.TempDir() + "/runs.sqlite3"
	lines := manyRuns(t, path, procs, runs)
	completed := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if f[0] == "run" && len(f) == 3 && f[2] == string(state.StatusCompleted) {
			completed++
			continue
		}
		t.Errorf("%s", l)
	}
	if completed != procs*runs {
		t.Fatalf("%d of %d runs completed", completed, procs*runs)
	}

	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sums, err := s.List(context.Background(), state.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != procs*runs {
		t.Fatalf("the store holds %d runs, want %d", len(sums), procs*runs)
	}
	for _, sum := range sums {
		st, err := s.Load(context.Background(), sum.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != state.StatusCompleted || len(runtime.UnknownCalls(st)) != 0 || st.Holder != nil {
			t.Errorf("run %s: %s, %d unknown calls, holder %+v", st.ID, st.Status, len(runtime.UnknownCalls(st)), st.Holder)
		}
	}
}

// BenchmarkManyRunsOneStore measures the same load: runs per second of 16
// processes × 25 runs (two tool rounds each) on one store.
func BenchmarkManyRunsOneStore(b *testing.B) {
	const procs, runs = 16, 25
	for i := 0; i < b.N; i++ {
		path := b.TempDir() + "/runs.sqlite3"
		began := time.Now()
		lines := manyRuns(b, path, procs, runs)
		for _, l := range lines {
			if !strings.HasSuffix(l, " completed") {
				b.Fatalf("%s", l)
			}
		}
		b.ReportMetric(float64(procs*runs)/time.Since(began).Seconds(), "runs/s")
	}
}

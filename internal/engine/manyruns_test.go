package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
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
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Printf("error open: %v\n", err)
		return
	}
	defer s.Close()
	prog := echoProgram("sha256:many", ir.BodyNative)
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0], Store: s, Provider: loopProvider{rounds: 2},
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyNative: echoExec{}}})
	if err != nil {
		fmt.Printf("error runner: %v\n", err)
		return
	}
	for i := 0; i < n; i++ {
		st, err := r.Start(ctx, engine.NewRun{Task: "t", WorkDir: "/w"})
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

	s, err := sqlite.Open(context.Background(), path)
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
		if st.Status != state.StatusCompleted || len(engine.UnknownCalls(st)) != 0 || st.Holder != nil {
			t.Errorf("run %s: %s, %d unknown calls, holder %+v", st.ID, st.Status, len(engine.UnknownCalls(st)), st.Holder)
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

// blockingExec runs until release returns.
type blockingExec struct{ release func() }

func (b blockingExec) Execute(_ context.Context, inv tool.Invocation) (tool.Outcome, error) {
	b.release()
	return tool.Outcome{Output: "done", Success: true}, nil
}

// renewWatch is a store that reports each lease renewal it made (the new
// expiry) on renewed, so a test can wait for one instead of polling. It
// never blocks a renewal: a report that finds the channel full is dropped.
type renewWatch struct {
	state.Store
	renewed chan<- time.Time
}

func (w renewWatch) Renew(ctx context.Context, id string, l *state.Lease) error {
	err := w.Store.Renew(ctx, id, l)
	if err == nil {
		select {
		case w.renewed <- l.Expires:
		default:
		}
	}
	return err
}

// testClock is a clock that moves only when the test advances it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// hangBound only guards against a hang: no outcome depends on it.
const hangBound = time.Minute

// TestLeaseRenewedDuringLongTool: while a tool runs far longer than the
// lease lasts, the executor keeps renewing it every third of the lease
// (the stored expiry moves on with the clock), so the run stays held and
// the result is saved; afterwards the run is free and the renewals have
// stopped. The store's and the runner's clock is the test's, and the
// renewals come on the test's ticks: nothing waits for the wall clock.
func TestLeaseRenewedDuringLongTool(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	path := t.TempDir() + "/runs.sqlite3"
	s, err := sqlite.Open(ctx, path, sqlite.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	watcher, err := sqlite.Open(ctx, path, sqlite.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	prog := &ir.Program{
		Hash: "sha256:long",
		Tools: []*ir.Tool{{Name: "echo", Description: "Echo", Risk: "low", Timeout: 600,
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
			Body:       ir.Body{Kind: ir.BodyNative}}},
		Agents: []*ir.Agent{{Name: "A", Prompt: "p", Tools: []string{"echo"}, Retry: -1}},
	}
	const id = "run_LONG"
	const ttl = engine.LeaseTTL // the executors' own lease: the test need not shorten it

	ticks := make(chan time.Time)
	renewed := make(chan time.Time, 8)
	var (
		period      time.Duration
		tickerMade  int
		tickerEnded int
	)
	ticker := func(p time.Duration) (<-chan time.Time, func()) {
		period = p
		tickerMade++
		return ticks, func() { tickerEnded++ }
	}

	// The tool runs for four thirds of the lease on the test's clock: at
	// each third the renewal ticker fires and the test waits for the
	// renewal, which must move the stored expiry a third further on.
	decl := blockingExec{release: func() {
		st, err := watcher.Load(ctx, id)
		if err != nil || st.Holder == nil {
			t.Errorf("while the tool runs: %v, holder %+v", err, st.Holder)
			return
		}
		first := st.Holder.Expires
		if want := clock.Now().Add(ttl); !first.Equal(want) {
			t.Errorf("the run's first lease expires at %s, want %s", first, want)
		}
		for i := 1; i <= 4; i++ {
			clock.Advance(ttl / 3)
			select {
			case ticks <- clock.Now():
			case <-time.After(hangBound):
				t.Errorf("tick %d: nobody renews the lease", i)
				return
			}
			var got time.Time
			select {
			case got = <-renewed:
			case <-time.After(hangBound):
				t.Errorf("tick %d: no renewal", i)
				return
			}
			if want := clock.Now().Add(ttl); !got.Equal(want) {
				t.Errorf("renewal %d: expiry %s, want %s (a lease from now)", i, got, want)
			}
			st, err := watcher.Load(ctx, id)
			if err != nil || st.Holder == nil || !st.Holder.Expires.Equal(got) {
				t.Errorf("after renewal %d: %v, holder %+v, want it held until %s", i, err, st.Holder, got)
			}
		}
		// The first lease has run out; the run is held all the same.
		if now := clock.Now(); !now.After(first) {
			t.Errorf("the tool ran until %s, not past the first expiry %s", now, first)
		}
	}}
	r, err := engine.NewRunner(engine.Config{Program: prog, Agent: prog.Agents[0],
		Store: renewWatch{Store: s, renewed: renewed}, Provider: loopProvider{rounds: 1}, Now: clock.Now,
		Executors: map[ir.BodyKind]tool.Executor{ir.BodyNative: decl}, LeaseTicker: ticker})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Start(ctx, engine.NewRun{ID: id, Task: "t", WorkDir: "/w"})
	if err != nil || st.Status != state.StatusCompleted {
		t.Fatalf("run: %v %v", err, st.Status)
	}
	if period != ttl/3 || tickerMade != 1 || tickerEnded != 1 {
		t.Errorf("renewal ticker: period %v (want %v), made %d and stopped %d times (want once each)", period, ttl/3, tickerMade, tickerEnded)
	}
	got, err := watcher.Load(ctx, id)
	if err != nil || got.Holder != nil || got.Journal[0].Result != "done" {
		t.Fatalf("after the run: %v, holder %+v, result %q", err, got.Holder, got.Journal[0].Result)
	}
}

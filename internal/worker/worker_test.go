package worker_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/cli"
	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
	"github.com/nexa-run/nexa/internal/worker"
)

const program = `agent A {
    prompt: "Answer."
}
`

const other = `agent O {
    prompt: "Answer otherwise."
}
`

// recorder is a Telemetry that counts what the worker reports.
type recorder struct {
	mu       sync.Mutex
	claimed  []string
	now, max int
	finished map[string]state.Status
	done     chan struct{} // closed when want runs finished
	want     int
	closed   bool
}

func (r *recorder) Claimed(id, _ string, _, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claimed = append(r.claimed, id)
	r.now++
	r.max = max(r.max, r.now)
}
func (r *recorder) LeaseRenewed(string, error) {}
func (r *recorder) Event(engine.Event)         {}
func (r *recorder) Finished(id, _ string, st state.Status, _ time.Duration, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now--
	r.finished[id] = st
	if len(r.finished) == r.want && !r.closed {
		close(r.done)
		r.closed = true
	}
}

func submit(t *testing.T, file, agent string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"agent", file, agent, "task", "--provider", "script:model.json", "--detach", "-q"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out.String(), errb.String())
	}
	s := out.String()
	i := strings.Index(s, `"run_id": "`) + len(`"run_id": "`)
	return s[i : i+strings.IndexByte(s[i:], '"')]
}

// restartingStore is a store whose server is down: a claim waits (as the
// PostgreSQL store waits for a restarting server) until its context ends.
type restartingStore struct {
	session.Store
	claiming chan struct{}
}

func (s restartingStore) Claim(ctx context.Context, _ state.ClaimRequest) (string, *state.Lease, error) {
	select {
	case s.claiming <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", nil, ctx.Err()
}

// TestDrainDoesNotWaitForAClaim: a worker whose claim waits for a store
// that is restarting still drains at once on SIGTERM (it has no run to
// finish), well within its drain timeout, and exits cleanly.
func TestDrainDoesNotWaitForAClaim(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("a.nx", []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	env := session.Env{Getenv: os.Getenv, Environ: os.Environ}
	s, err := session.OpenStore(env, "", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prog, diags := compile.Compile("a.nx", compile.Options{})
	if prog == nil || diags.HasErrors() {
		t.Fatalf("compile: %v", diags)
	}
	rs := restartingStore{Store: s, claiming: make(chan struct{}, 1)}
	w, err := worker.New(worker.Options{Store: rs, Env: env, Dir: dir, Programs: []worker.Program{{File: "a.nx", Program: prog}},
		PollInterval: time.Hour, DrainTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	drain := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background(), drain) }()
	<-rs.claiming
	close(drain)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run after drain: %v, want nil (nothing was driven)", err)
		}
	case <-time.After(time.Minute): // a hang guard: the drain returns at once
		t.Fatal("the drain waited for the claim")
	}
}

// TestWorkerLimitsAndPrograms: with --agent-limit A=1 the worker drives
// one run of A at a time whatever its concurrency, drives every run of its
// program to the end, never claims a run of a program it does not have,
// and drains to a clean stop holding nothing.
func TestWorkerLimitsAndPrograms(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for name, body := range map[string]string{"a.nx": program, "o.nx": other, "model.json": `{"turns": [{"content": "done"}]}`} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var ours []string
	for range 3 {
		ours = append(ours, submit(t, "a.nx", "A"))
	}
	foreign := submit(t, "o.nx", "O")

	env := session.Env{Getenv: os.Getenv, Environ: os.Environ}
	s, err := session.OpenStore(env, "", dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prog, diags := compile.Compile("a.nx", compile.Options{})
	if prog == nil || diags.HasErrors() {
		t.Fatalf("compile: %v", diags)
	}
	rec := &recorder{finished: map[string]state.Status{}, done: make(chan struct{}), want: len(ours)}
	w, err := worker.New(worker.Options{Store: s, Env: env, Dir: dir, Programs: []worker.Program{{File: "a.nx", Program: prog}},
		Concurrency: 4, AgentLimits: map[string]int{"A": 1}, PollInterval: 10 * time.Millisecond, Telemetry: rec})
	if err != nil {
		t.Fatal(err)
	}
	drain := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background(), drain) }()
	<-rec.done
	close(drain)
	if err := <-errc; err != nil {
		t.Fatalf("Run after drain: %v", err)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.max != 1 {
		t.Errorf("at most %d runs of A at once, want 1 (--agent-limit A=1)", rec.max)
	}
	for _, id := range ours {
		if rec.finished[id] != state.StatusCompleted {
			t.Errorf("run %s finished %q, want completed", id, rec.finished[id])
		}
	}
	for _, id := range rec.claimed {
		if id == foreign {
			t.Errorf("the worker claimed run %s of a program it does not have", foreign)
		}
	}
	st, err := engine.Show(context.Background(), s, foreign)
	if err != nil || st.Status != state.StatusQueued || st.Holder != nil {
		t.Fatalf("the foreign run: %v, %+v", err, st)
	}
	for _, id := range ours {
		if st, err := engine.Show(context.Background(), s, id); err != nil || st.Holder != nil {
			t.Errorf("run %s after the drain: %v, holder %+v", id, err, st.Holder)
		}
	}
}

// waitRecorder keeps the wait the worker reports for each claim.
type waitRecorder struct {
	recorder
	waited map[string]time.Duration
}

func (r *waitRecorder) Claimed(id, agent string, claim, waited time.Duration) {
	r.mu.Lock()
	r.waited[id] = waited
	r.mu.Unlock()
	r.recorder.Claimed(id, agent, claim, waited)
}

// TestClaimLatencyOfAnExpiredWait: a run claimed because its approval's
// wait ran out is reported as waiting since the expiry, not since it
// stopped for the approval an hour earlier (nexa_claim_latency_seconds);
// when the worker cannot set it up, it is saved failed like any run.
func TestClaimLatencyOfAnExpiredWait(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("a.nx", []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	prog, diags := compile.Compile("a.nx", compile.Options{})
	if prog == nil || diags.HasErrors() {
		t.Fatalf("compile: %v", diags)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := sqlite.Open(context.Background(), sqlite.DefaultPath(dir), sqlite.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stopped, expired := now.Add(-time.Hour), now.Add(-10*time.Second)
	st := &state.RunState{ID: "run_wait", Status: state.StatusWaitingApproval, Task: "task",
		Config:    state.Config{SourceFile: "a.nx", SourceHash: prog.Hash, Agent: "A", WorkDir: dir, Driver: state.DriverWorker},
		CreatedAt: stopped, UpdatedAt: stopped,
		Messages: []state.Message{{Seq: 0, Role: state.RoleUser, Content: "task"},
			{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "call_1", Name: "t", Arguments: "{}"}}}},
		Journal: []state.JournalEntry{{CallID: "call_1", Tool: "t", Turn: 1, Arguments: []byte("{}"), Valid: true,
			Stage: state.StageNotStarted, NeedsApproval: true, ExpiresAt: &expired, CreatedAt: stopped}},
	}
	if err := s.Create(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	rec := &waitRecorder{recorder: recorder{finished: map[string]state.Status{}, done: make(chan struct{}), want: 1}, waited: map[string]time.Duration{}}
	env := session.Env{Getenv: os.Getenv, Environ: os.Environ}
	w, err := worker.New(worker.Options{Store: s, Env: env, Dir: dir, Programs: []worker.Program{{File: "a.nx", Program: prog}},
		PollInterval: 10 * time.Millisecond, Now: clock, Telemetry: rec})
	if err != nil {
		t.Fatal(err)
	}
	drain := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background(), drain) }()
	<-rec.done
	close(drain)
	if err := <-errc; err != nil {
		t.Fatalf("Run after drain: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := rec.waited["run_wait"]; got != 10*time.Second {
		t.Fatalf("claim of the expired wait reported as waiting %v, want 10s (since the expiry)", got)
	}
	// The run records no provider choice, so this worker cannot set it
	// up: it is saved failed with the reason, as a runnable run would be,
	// not left claimable for the next poll to take again.
	got, err := engine.Show(context.Background(), s, "run_wait")
	if err != nil || got.Status != state.StatusFailed || got.Error == nil || !strings.Contains(got.Error.Message, "provider choice") {
		t.Fatalf("the run after the worker gave up: %v, status %s, error %+v; want failed naming the provider choice", err, got.Status, got.Error)
	}
}

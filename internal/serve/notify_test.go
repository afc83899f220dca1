package serve

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/secrets"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// receiver is a webhook endpoint that answers with the next status of its
// script (then 200) and keeps what it received.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []*http.Request
	bodies   [][]byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.got = append(rc.got, r)
	rc.bodies = append(rc.bodies, b)
	code := 200
	if len(rc.statuses) > 0 {
		code, rc.statuses = rc.statuses[0], rc.statuses[1:]
	}
	w.WriteHeader(code)
}

func newNotifier(t *testing.T, s state.Store, rc *receiver) (*Notifier, *[]time.Duration) {
	t.Helper()
	hs := httptest.NewServer(rc)
	t.Cleanup(hs.Close)
	var sleeps []time.Duration
	n := &Notifier{
		URL: hs.URL, Secret: "webhook-secret", Store: s, Client: hs.Client(),
		Now:    func() time.Time { return fixedNow },
		Sleep:  func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil },
		Redact: secrets.NewRedactor("hunter2-secret").Redact,
	}
	return n, &sleeps
}

func setStatus(t *testing.T, s state.Store, id string, st state.Status) {
	t.Helper()
	run, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	run.Status = st
	if err := s.Save(context.Background(), run, state.Delta{}); err != nil {
		t.Fatal(err)
	}
}

func TestNotifierFindsTransitionsByPolling(t *testing.T) {
	s := newStore(t)
	n, _ := newNotifier(t, s, &receiver{})
	ctx := context.Background()
	if evs, err := n.Poll(ctx); err != nil || len(evs) != 0 {
		t.Fatalf("first poll announces runs that were already there: %v %v", evs, err)
	}
	if evs, _ := n.Poll(ctx); len(evs) != 0 {
		t.Fatalf("nothing changed, yet: %+v", evs)
	}
	setStatus(t, s, runID, state.StatusRunning)
	if evs, _ := n.Poll(ctx); len(evs) != 0 {
		t.Fatalf("running is not announced: %+v", evs)
	}
	setStatus(t, s, runID, state.StatusWaitingApproval)
	evs, err := n.Poll(ctx)
	if err != nil || len(evs) != 1 {
		t.Fatalf("waiting again: %+v %v", evs, err)
	}
	ev := evs[0]
	if ev.Type != "run.waiting_approval" || ev.Data.RunID != runID || len(ev.Data.Pending) != 2 || ev.Data.Pending[0].CallID != "call_1" {
		t.Fatalf("event: %+v", ev)
	}
	if b, _ := json.Marshal(ev); strings.Contains(string(b), "hunter2-secret") {
		t.Fatalf("the event carries a secret: %s", b)
	}
	setStatus(t, s, runID, state.StatusCompleted)
	if evs, _ = n.Poll(ctx); len(evs) != 1 || evs[0].Type != "run.completed" {
		t.Fatalf("completed: %+v", evs)
	}
}

func TestDeliverSignsAndRetriesWithBackoff(t *testing.T) {
	s := newStore(t)
	rc := &receiver{statuses: []int{503, 429}}
	n, sleeps := newNotifier(t, s, rc)
	before := load(t, s).Revision
	ev := Event{Type: "run.completed", Data: EventData{RunID: runID, Status: state.StatusCompleted}}
	if err := n.Deliver(context.Background(), ev); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	if len(rc.got) != 3 || len(*sleeps) != 2 || (*sleeps)[0] != time.Second || (*sleeps)[1] != 2*time.Second {
		t.Fatalf("attempts %d, waits %v", len(rc.got), *sleeps)
	}
	// Every attempt is the same event (one webhook-id), signed over id,
	// timestamp and body.
	for i, r := range rc.got {
		id, ts := r.Header.Get(HeaderID), r.Header.Get(HeaderTimestamp)
		want := Sign([]byte("webhook-secret"), id, ts, rc.bodies[i])
		if !hmac.Equal([]byte(r.Header.Get(HeaderSignature)), []byte(want)) {
			t.Fatalf("attempt %d: signature %q, want %q", i, r.Header.Get(HeaderSignature), want)
		}
		if Sign([]byte("other-secret"), id, ts, rc.bodies[i]) == want {
			t.Fatal("the signature does not depend on the secret")
		}
		if id == "" || id != rc.got[0].Header.Get(HeaderID) || id != ev.ID() {
			t.Fatalf("attempt %d headers: %v", i, r.Header)
		}
	}
	var got Event
	if err := json.Unmarshal(rc.bodies[2], &got); err != nil || got.Data.RunID != runID || got.Type != "run.completed" {
		t.Fatalf("body: %s %v", rc.bodies[2], err)
	}
	if load(t, s).Revision != before {
		t.Fatal("a notification changed the run")
	}
}

func TestDeliverGivesUpWithoutChangingTheRun(t *testing.T) {
	s := newStore(t)
	rc := &receiver{statuses: []int{500, 500, 500, 500, 500, 500}}
	n, sleeps := newNotifier(t, s, rc)
	before := load(t, s)
	err := n.Deliver(context.Background(), Event{Type: "run.failed", Data: EventData{RunID: runID}})
	if err == nil || !strings.Contains(err.Error(), "gave up after 5 attempts") {
		t.Fatalf("err = %v", err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	if len(*sleeps) != len(want) {
		t.Fatalf("waits %v, want %v", *sleeps, want)
	}
	for i := range want {
		if (*sleeps)[i] != want[i] {
			t.Fatalf("waits %v, want %v", *sleeps, want)
		}
	}
	after := load(t, s)
	if after.Revision != before.Revision || after.Status != before.Status {
		t.Fatal("a failed notification changed the run")
	}

	// A 4xx answer other than 429 is final: the receiver refused it.
	rc2 := &receiver{statuses: []int{400}}
	n2, sleeps2 := newNotifier(t, s, rc2)
	if err := n2.Deliver(context.Background(), Event{Type: "run.failed", Data: EventData{RunID: runID}}); err == nil || len(rc2.got) != 1 || len(*sleeps2) != 0 {
		t.Fatalf("400: err %v, attempts %d", err, len(rc2.got))
	}
}

// TestNotifierRunDeliversWhatItFinds drives the polling loop through its
// clock: the first poll learns the runs, the run then completes, the next
// poll finds it and the event reaches the receiver before Run returns.
func TestNotifierRunDeliversWhatItFinds(t *testing.T) {
	s := newStore(t)
	rc := &receiver{}
	n, _ := newNotifier(t, s, rc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	polls := 0
	n.Sleep = func(ctx context.Context, d time.Duration) error {
		if d != n.Interval {
			return nil // a retry's wait
		}
		polls++
		switch polls {
		case 1:
			setStatus(t, s, runID, state.StatusCompleted)
		case 2:
			cancel()
			return ctx.Err()
		}
		return nil
	}
	n.Run(ctx)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 1 || !strings.Contains(string(rc.bodies[0]), `"type":"run.completed"`) {
		t.Fatalf("deliveries: %d", len(rc.got))
	}
}

// countingStore counts the runs List returns, to show what a poll reads.
type countingStore struct {
	state.Store
	listed int
}

func (c *countingStore) List(ctx context.Context, f state.Filter) ([]state.Summary, error) {
	runs, err := c.Store.List(ctx, f)
	c.listed += len(runs)
	return runs, err
}

func createRun(t *testing.T, s state.Store, id string, st state.Status, at time.Time) {
	t.Helper()
	run := &state.RunState{ID: id, Status: st, Task: "t", CreatedAt: at,
		Config: state.Config{SourceFile: "review.nx", SourceHash: "sha256:0", Agent: "Reviewer", WorkDir: "."}}
	if err := s.Create(context.Background(), run); err != nil {
		t.Fatal(err)
	}
}

func TestNotifierReadsOpenAndNewRunsOnly(t *testing.T) {
	base := newStore(t)
	first := load(t, base).CreatedAt
	for i := range 300 {
		createRun(t, base, fmt.Sprintf("run_01TESTSERVEOLD000000000%04d", i), state.StatusCompleted, first.Add(-time.Duration(i+1)*time.Minute))
	}
	s := &countingStore{Store: base}
	n, _ := newNotifier(t, s, &receiver{})
	ctx := context.Background()
	if evs, err := n.Poll(ctx); err != nil || len(evs) != 0 {
		t.Fatalf("first poll: %v %v", evs, err)
	}
	s.listed = 0
	if _, err := n.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if s.listed > 20 { // the open run and one page of the newest
		t.Fatalf("a poll read %d runs of a store of 301 with one open run", s.listed)
	}

	// Created and finished between two polls: announced once.
	createRun(t, s, "run_01TESTSERVENEW0000000000001", state.StatusCompleted, first.Add(time.Minute))
	createRun(t, s, "run_01TESTSERVENEW0000000000002", state.StatusWaitingApproval, first.Add(2*time.Minute))
	evs, err := n.Poll(ctx)
	if err != nil || len(evs) != 2 {
		t.Fatalf("new runs: %+v %v", evs, err)
	}
	got := map[string]string{}
	for _, ev := range evs {
		got[ev.Data.RunID] = ev.Type
	}
	if got["run_01TESTSERVENEW0000000000001"] != "run.completed" || got["run_01TESTSERVENEW0000000000002"] != "run.waiting_approval" {
		t.Fatalf("new runs announced as %v", got)
	}
	if evs, _ := n.Poll(ctx); len(evs) != 0 {
		t.Fatalf("announced twice: %+v", evs)
	}

	// Open runs that are pruned are forgotten without an event or an error.
	if _, err := base.Prune(ctx, state.Filter{Status: state.StatusWaitingApproval}); err != nil {
		t.Fatal(err)
	}
	if evs, err := n.Poll(ctx); err != nil || len(evs) != 0 {
		t.Fatalf("after a prune: %+v %v", evs, err)
	}
}

func TestNotifierOnAnEmptyStore(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	n, _ := newNotifier(t, s, &receiver{})
	ctx := context.Background()
	if evs, err := n.Poll(ctx); err != nil || len(evs) != 0 {
		t.Fatalf("first poll: %v %v", evs, err)
	}
	createRun(t, s, "run_01TESTSERVENEW0000000000001", state.StatusCompleted, fixedNow)
	createRun(t, s, "run_01TESTSERVENEW0000000000002", state.StatusFailed, fixedNow.Add(time.Second))
	if evs, err := n.Poll(ctx); err != nil || len(evs) != 2 {
		t.Fatalf("runs created after a poll of an empty store: %+v %v", evs, err)
	}
}

// TestNotifierAnnouncesAReturnToTheSameStatus: a run approved and waiting
// again on its next call between two polls is announced again; a script
// that approves through the webhooks would otherwise never hear of the
// second call. A run that did not change is not.
func TestNotifierAnnouncesAReturnToTheSameStatus(t *testing.T) {
	s := newStore(t)
	n, _ := newNotifier(t, s, &receiver{})
	ctx := context.Background()
	if _, err := n.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	setStatus(t, s, runID, state.StatusRunning)
	setStatus(t, s, runID, state.StatusWaitingApproval)
	if evs, err := n.Poll(ctx); err != nil || len(evs) != 1 || evs[0].Type != "run.waiting_approval" {
		t.Fatalf("first wait: %+v %v", evs, err)
	}
	if evs, _ := n.Poll(ctx); len(evs) != 0 {
		t.Fatalf("nothing changed, yet: %+v", evs)
	}
	setStatus(t, s, runID, state.StatusRunning)
	setStatus(t, s, runID, state.StatusWaitingApproval)
	evs, err := n.Poll(ctx)
	if err != nil || len(evs) != 1 || evs[0].Type != "run.waiting_approval" {
		t.Fatalf("waiting again between two polls was not announced: %+v %v", evs, err)
	}
	if run, err := s.Load(ctx, runID); err != nil || evs[0].Data.Revision != run.Revision {
		t.Fatalf("the event names revision %d, not the run's latest (%v)", evs[0].Data.Revision, err)
	}
}

package serve

import (
	"context"
	"crypto/hmac"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/runevents"
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

// finishedNote is a notification of a run stopped as st, for the tests of
// delivery.
func finishedNote(st state.Status) Notification {
	ev := runevents.Event{Type: runevents.RunFinished, RunID: runID, Seq: 1, Time: runevents.Stamp(fixedNow), Status: string(st)}
	return Notification{ID: notificationID(ev, 7), Event: ev}
}

// drive changes the run as a driver would, in one save.
func drive(t *testing.T, s state.Store, fn func(run *state.RunState) state.Delta) {
	t.Helper()
	run, err := s.Load(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(context.Background(), run, fn(run)); err != nil {
		t.Fatal(err)
	}
}

// summary is a poll's notifications in short: type and the field that
// says what happened, each checked against the id and seq rules.
func summary(t *testing.T, s state.Store, nts []Notification, seq *int) string {
	t.Helper()
	var out []string
	for _, nt := range nts {
		ev := nt.Event
		*seq++
		if ev.RunID != runID || ev.Seq != *seq || nt.ID != notificationID(ev, load(t, s).Revision) {
			t.Fatalf("notification %+v: run, seq (want %d) or id wrong", nt, *seq)
		}
		out = append(out, strings.Join(strings.Fields(ev.Type+" "+ev.CallID+" "+ev.Decision+ev.Outcome+ev.Status), " "))
	}
	return strings.Join(out, ", ")
}

// TestNotifierFollowsTheRunsSteps: the notifier derives a run's events from
// the store between two polls, as runs watch does, and posts those a person
// acts on: decisions, a call waiting, a call whose outcome is unknown, and
// each stop. Calls that were waiting when the server started are not news.
func TestNotifierFollowsTheRunsSteps(t *testing.T) {
	s := newStore(t)
	n, _ := newNotifier(t, s, &receiver{})
	ctx := context.Background()
	if evs, err := n.Poll(ctx); err != nil || len(evs) != 0 {
		t.Fatalf("first poll announces runs that were already there: %v %v", evs, err)
	}
	if evs, _ := n.Poll(ctx); len(evs) != 0 {
		t.Fatalf("nothing changed, yet: %+v", evs)
	}
	seq := 0
	at := fixedNow
	// A person approves call_1 and denies call_2; the run goes on.
	drive(t, s, func(run *state.RunState) state.Delta {
		yes, no := true, false
		run.Status = state.StatusRunning
		run.Journal[0].Decision, run.Journal[0].DecidedBy, run.Journal[0].DecidedAt = &yes, "ana", &at
		run.Journal[1].Decision, run.Journal[1].DecidedBy, run.Journal[1].DecidedAt, run.Journal[1].Reason = &no, "ana", &at, "not that"
		return state.Delta{Journal: run.Journal}
	})
	evs, err := n.Poll(ctx)
	if got, want := summary(t, s, evs, &seq), "call.decided call_1 approved, call.decided call_2 denied"; err != nil || got != want {
		t.Fatalf("decisions: %q (%v), want %q", got, err, want)
	}
	if evs[1].Event.DecidedBy != "ana" || evs[1].Event.Reason != "not that" || evs[1].Event.Time != runevents.Stamp(at) {
		t.Fatalf("decision: %+v", evs[1].Event)
	}
	// call_1 runs and ends well, call_2 is denied, the model asks for a
	// call that waits for a person: one poll finds it all.
	drive(t, s, func(run *state.RunState) state.Delta {
		started, done := at.Add(time.Second), at.Add(2*time.Second)
		e := &run.Journal[0]
		e.Stage, e.StartedAt, e.CompletedAt, e.Outcome, e.Success = state.StageCompleted, &started, &done, "executed", true
		d := &run.Journal[1]
		d.Stage, d.CompletedAt, d.Outcome = state.StageCompleted, &done, "denied"
		next := state.JournalEntry{CallID: "call_3", Tool: "record_review", Seq: 2, Turn: 2, Arguments: []byte(`{"content":"hunter2-secret"}`),
			Valid: true, Stage: state.StageNotStarted, NeedsApproval: true, Risk: "high", CreatedAt: done}
		run.Journal = append(run.Journal, next)
		run.Status = state.StatusWaitingApproval
		return state.Delta{Journal: run.Journal}
	})
	evs, err = n.Poll(ctx)
	if got, want := summary(t, s, evs, &seq), "call.pending call_3, run.finished waiting_approval"; err != nil || got != want {
		t.Fatalf("waiting: %q (%v), want %q", got, err, want)
	}
	if p := evs[0].Event; string(p.Arguments) != `{"content":"[REDACTED]"}` || p.Risk != "high" {
		t.Fatalf("pending call: %+v", p)
	}
	// Approved and started by another process, which dies: nobody knows
	// whether call_3 happened.
	drive(t, s, func(run *state.RunState) state.Delta {
		yes, started := true, at.Add(3*time.Second)
		e := &run.Journal[2]
		e.Decision, e.DecidedBy, e.DecidedAt, e.Stage, e.StartedAt = &yes, "bo", &started, state.StageStarted, &started
		run.Status = state.StatusUnknownOutcome
		return state.Delta{Journal: run.Journal}
	})
	evs, err = n.Poll(ctx)
	if got, want := summary(t, s, evs, &seq), "call.decided call_3 approved, tool.completed call_3 unknown, run.finished unknown_outcome"; err != nil || got != want {
		t.Fatalf("unknown: %q (%v), want %q", got, err, want)
	}
	setStatus(t, s, runID, state.StatusCompleted)
	if evs, _ = n.Poll(ctx); summary(t, s, evs, &seq) != "run.finished completed" {
		t.Fatalf("completed: %+v", evs)
	}
	if evs, _ = n.Poll(ctx); len(evs) != 0 {
		t.Fatalf("a completed run is announced again: %+v", evs)
	}
}

func TestDeliverSignsAndRetriesWithBackoff(t *testing.T) {
	s := newStore(t)
	rc := &receiver{statuses: []int{503, 429}}
	n, sleeps := newNotifier(t, s, rc)
	before := load(t, s).Revision
	ev := finishedNote(state.StatusCompleted)
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
		if id == "" || id != rc.got[0].Header.Get(HeaderID) || id != ev.ID {
			t.Fatalf("attempt %d headers: %v", i, r.Header)
		}
	}
	if want, _ := runevents.Marshal(ev.Event); string(rc.bodies[2]) != string(want) {
		t.Fatalf("body: %s, want %s", rc.bodies[2], want)
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
	err := n.Deliver(context.Background(), finishedNote(state.StatusFailed))
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
	if err := n2.Deliver(context.Background(), finishedNote(state.StatusFailed)); err == nil || len(rc2.got) != 1 || len(*sleeps2) != 0 {
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
	if len(rc.got) != 1 || !strings.Contains(string(rc.bodies[0]), `"type":"run.finished","run_id":"`+runID+`","seq":1,`) ||
		!strings.Contains(string(rc.bodies[0]), `"status":"completed"`) {
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
		got[ev.Event.RunID] = ev.Event.Type + " " + ev.Event.Status
	}
	if got["run_01TESTSERVENEW0000000000001"] != "run.finished completed" || got["run_01TESTSERVENEW0000000000002"] != "run.finished waiting_approval" {
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
	first, err := n.Poll(ctx)
	if err != nil || len(first) != 1 || first[0].Event.Type != "run.finished" || first[0].Event.Status != "waiting_approval" {
		t.Fatalf("first wait: %+v %v", first, err)
	}
	if evs, _ := n.Poll(ctx); len(evs) != 0 {
		t.Fatalf("nothing changed, yet: %+v", evs)
	}
	setStatus(t, s, runID, state.StatusRunning)
	setStatus(t, s, runID, state.StatusWaitingApproval)
	evs, err := n.Poll(ctx)
	if err != nil || len(evs) != 1 || evs[0].Event.Type != "run.finished" || evs[0].Event.Status != "waiting_approval" {
		t.Fatalf("waiting again between two polls was not announced: %+v %v", evs, err)
	}
	// Two stops, two webhook-ids: a receiver that drops duplicates keeps
	// both.
	if evs[0].ID == first[0].ID || evs[0].Event.Seq != 2 {
		t.Fatalf("the second stop has id %s and seq %d, the first %s", evs[0].ID, evs[0].Event.Seq, first[0].ID)
	}
}

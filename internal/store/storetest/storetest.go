// Package storetest is the contract every state.Store must meet, written
// against the interface alone: compare-and-set, leases and fencing, and
// prune of held runs. Each store runs it from its own tests
// (storetest.Run(t, newStore)); a new store (PostgreSQL) passes it before it
// is used. What depends on a store's files (schema migration, a newer
// schema, a corrupt file, kill -9 mid-save) is tested beside each store.
//
// No behaviour waits for the wall clock: the suite lets a lease run out by
// moving the store's clock (see Clock).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// NewStore makes a fresh, empty store and returns a function that opens one
// more handle on it: every handle sees the same runs, as separate processes
// would. The suite closes every handle it opens. It returns the store's
// clock too, which the suite moves to let a lease run out.
type NewStore func(t *testing.T) (open func() state.Store, clock Clock)

// Clock is the time a store measures its leases against, as the suite
// controls it, so that no behaviour waits for the wall clock. A store that
// takes its time from the host is given one (a ManualClock); a store whose
// clock is its database's (PostgreSQL) gets one that reads the database's
// time and ages the stored leases instead of moving that clock.
type Clock interface {
	// Now is the store's present time.
	Now() time.Time
	// Advance lets d pass for the leases of the store.
	Advance(d time.Duration)
}

// ManualClock is a Clock that moves only when Advance is called; its Now
// is what a store given it (such as SQLite's WithClock) reads.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock starts a clock at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now is the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// behaviour is one row of the contract.
type behaviour struct {
	name string
	test func(t *testing.T, h *harness)
}

var behaviours = []behaviour{
	{"count: runs counted by status in one query agree with List", countByStatus},
	{"compare-and-set: of two writers of one revision exactly one saves", compareAndSet},
	{"lease: a held run cannot be acquired, updated or saved without the lease", leaseExcludes},
	{"lease: a run created with a lease is held from its first revision", createLeased},
	{"lease: renew extends the expiry; release frees the run for the next epoch", renewRelease},
	{"fencing: after a holder dies its run is taken over and its old lease can never save", fencing},
	{"lease: acquiring a missing run is not found", acquireMissing},
	{"lease: Acquire says the revision it took the run at", acquireRevision},
	{"prune: held runs are skipped and kept whole, free ones deleted", pruneHeld},
	{"list: newest first, filtered by status and agent, limited", listFilters},
	{"list: a cursor pages without gaps or repeats while runs are created and saved", listCursor},
	{"load tail: the last rows and every open journal entry, and what was left out", loadTail},
	{"header: usage-only saves, header changes and another handle's update all load as saved", headerDelta},
	{"stub: a journal entry loaded without its body is refused, and the stored one kept", stubRefused},
	{"claim: two claimers never get the same run, and every runnable run is claimed", claimRace},
	{"claim: a live lease is never stolen; a dead holder's is, with a new epoch", claimLease},
	{"claim: a run of a program not offered, of a skipped agent or not handed to workers is never claimed", claimFilters},
	{"claim: runnable follows every save: pending calls, decisions, terminal runs", claimRunnable},
	{"claim: a worker run whose approval's wait ran out by the store's clock is claimable; a foreground one never", claimExpired},
}

// stubRefused: a save whose delta holds a journal stub (state.DriveLoader)
// fails and writes nothing, so a partial entry never replaces a whole one.
func stubRefused(t *testing.T, h *harness) {
	s := h.handle()
	mustCreate(t, s, run("stub", time.Time{}))
	st := mustLoad(t, s, "stub")
	before := mustLoad(t, s, "stub")
	stub := state.JournalEntry{CallID: "call_1", Seq: 0, Turn: 1, Stage: state.StageCompleted, Stub: true}
	if err := s.Save(ctx, st, state.Delta{Journal: []state.JournalEntry{stub}}); err == nil || !strings.Contains(err.Error(), "call_1") {
		t.Fatalf("save of a stub: %v, want a refusal naming call_1", err)
	}
	after := mustLoad(t, s, "stub")
	if after.Revision != before.Revision || len(after.Journal) != 1 || after.Journal[0].Stage != state.StageStarted || string(after.Journal[0].Arguments) != "{}" {
		t.Fatalf("after a refused save: revision %d (was %d), journal %+v", after.Revision, before.Revision, after.Journal)
	}
}

// Run checks every behaviour of the contract on the store newStore makes.
func Run(t *testing.T, newStore NewStore) {
	for _, b := range behaviours {
		t.Run(b.name, func(t *testing.T) {
			open, clock := newStore(t)
			b.test(t, &harness{t: t, open: open, clock: clock})
		})
	}
}

type harness struct {
	t     *testing.T
	open  func() state.Store
	clock Clock
}

// handle opens a handle closed at the end of the test.
func (h *harness) handle() state.Store {
	s := h.open()
	h.t.Cleanup(func() { s.Close() })
	return s
}

var ctx = context.Background()

// run is a small run whose rows a test can check.
func run(id string, updated time.Time) *state.RunState {
	st := &state.RunState{
		ID:     id,
		Status: state.StatusRunning,
		Config: state.Config{SourceFile: "a.nx", SourceHash: "sha256:0", Agent: "A", WorkDir: "."},
		Task:   "task",
		Messages: []state.Message{
			{Seq: 0, Role: state.RoleUser, Content: "task"},
			{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "call_1", Name: "t", Arguments: "{}"}}},
		},
		Journal: []state.JournalEntry{{CallID: "call_1", Tool: "t", Seq: 0, Turn: 1, Arguments: []byte("{}"), Valid: true, Stage: state.StageStarted}},
	}
	if !updated.IsZero() {
		st.CreatedAt, st.UpdatedAt = updated, updated
	}
	return st
}

func mustCreate(t *testing.T, s state.Store, st *state.RunState) {
	t.Helper()
	if err := s.Create(ctx, st); err != nil {
		t.Fatalf("Create %s: %v", st.ID, err)
	}
}

func mustLoad(t *testing.T, s state.Store, id string) *state.RunState {
	t.Helper()
	st, err := s.Load(ctx, id)
	if err != nil {
		t.Fatalf("Load %s: %v", id, err)
	}
	return st
}

func mustAcquire(t *testing.T, s state.Store, id, owner string, ttl time.Duration) *state.Lease {
	t.Helper()
	l, err := s.Acquire(ctx, id, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire %s by %s: %v", id, owner, err)
	}
	if l.Owner != owner || l.Epoch < 1 || l.TTL != ttl {
		t.Fatalf("Acquire returned %+v", l)
	}
	return l
}

func msg(seq int, text string) state.Message {
	return state.Message{Seq: seq, Role: state.RoleAssistant, Content: text}
}

func compareAndSet(t *testing.T, h *harness) {
	a, b := h.handle(), h.handle()
	mustCreate(t, a, run("run_cas", time.Time{}))
	x, y := mustLoad(t, a, "run_cas"), mustLoad(t, b, "run_cas")
	x.Messages = append(x.Messages, msg(2, "x"))
	if err := a.Save(ctx, x, state.Delta{Messages: x.Messages[2:]}); err != nil {
		t.Fatalf("first Save: %v", err)
	}
	y.Messages = append(y.Messages, msg(2, "y"))
	err := b.Save(ctx, y, state.Delta{Messages: y.Messages[2:]})
	var ce *state.ConflictError
	if !errors.As(err, &ce) || ce.Expected != 1 || ce.Actual != 2 {
		t.Fatalf("second Save of revision 1: %v, want a conflict 1 → 2", err)
	}
	got := mustLoad(t, b, "run_cas")
	if got.Revision != 2 || len(got.Messages) != 3 || got.Messages[2].Content != "x" {
		t.Fatalf("after the race: revision %d, messages %+v", got.Revision, got.Messages)
	}
}

func leaseExcludes(t *testing.T, h *harness) {
	a, b := h.handle(), h.handle()
	mustCreate(t, a, run("run_held", time.Time{}))
	before := h.clock.Now()
	l := mustAcquire(t, a, "run_held", "owner-a", time.Minute)
	after := h.clock.Now()
	if l.Expires.Before(before.Add(time.Minute)) || l.Expires.After(after.Add(time.Minute)) {
		t.Errorf("a one-minute lease taken between %s and %s expires at %s", before, after, l.Expires)
	}

	_, err := b.Acquire(ctx, "run_held", "owner-b", time.Minute)
	var he *state.HeldError
	if !errors.As(err, &he) || he.RunID != "run_held" {
		t.Fatalf("second Acquire: %v, want *HeldError", err)
	}
	st := mustLoad(t, b, "run_held")
	if st.Holder == nil || st.Holder.Owner != "owner-a" || !st.Holder.Expires.Equal(l.Expires) {
		t.Fatalf("Load's Holder = %+v, want owner-a until %s", st.Holder, l.Expires)
	}
	if st.Lease != nil {
		t.Fatalf("Load filled in the caller's lease: %+v", st.Lease)
	}

	// Without the lease, nobody writes the run.
	st.Messages = append(st.Messages, msg(2, "intruder"))
	if err := b.Save(ctx, st, state.Delta{Messages: st.Messages[2:]}); !errors.As(err, &he) {
		t.Fatalf("Save without the lease: %v, want *HeldError", err)
	}
	_, err = b.Update(ctx, "run_held", func(st *state.RunState) (state.Delta, error) {
		st.Status = state.StatusFailed
		return state.Delta{}, nil
	})
	if !errors.As(err, &he) {
		t.Fatalf("Update of a held run: %v, want *HeldError", err)
	}
	// With it, the holder does.
	own := mustLoad(t, a, "run_held")
	own.Lease = l
	own.Messages = append(own.Messages, msg(2, "holder"))
	if err := a.Save(ctx, own, state.Delta{Messages: own.Messages[2:]}); err != nil {
		t.Fatalf("holder's Save: %v", err)
	}
	if got := mustLoad(t, b, "run_held"); got.Revision != 2 || got.Messages[2].Content != "holder" || got.Status != state.StatusRunning {
		t.Fatalf("after the refused writes: revision %d, %+v, %s", got.Revision, got.Messages[2], got.Status)
	}
}

func createLeased(t *testing.T, h *harness) {
	a, b := h.handle(), h.handle()
	st := run("run_new", time.Time{})
	st.Lease = &state.Lease{Owner: "creator", TTL: time.Minute}
	mustCreate(t, a, st)
	if st.Lease.Epoch != 1 || st.Lease.Owner != "creator" || st.Lease.Expires.IsZero() {
		t.Fatalf("Create's lease: %+v", st.Lease)
	}
	var he *state.HeldError
	if _, err := b.Acquire(ctx, "run_new", "other", time.Minute); !errors.As(err, &he) {
		t.Fatalf("Acquire of a run created held: %v", err)
	}
	st.Status = state.StatusCompleted
	if err := a.Save(ctx, st, state.Delta{}); err != nil {
		t.Fatalf("creator's Save: %v", err)
	}
}

func renewRelease(t *testing.T, h *harness) {
	a, b := h.handle(), h.handle()
	mustCreate(t, a, run("run_renew", time.Time{}))
	l := mustAcquire(t, a, "run_renew", "owner-a", time.Minute)
	before := l.Expires
	l.TTL = time.Hour
	if err := a.Renew(ctx, "run_renew", l); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if !l.Expires.After(before.Add(30 * time.Minute)) {
		t.Fatalf("Renew by an hour moved expiry from %s to %s", before, l.Expires)
	}
	if got := mustLoad(t, b, "run_renew").Holder; got == nil || !got.Expires.Equal(l.Expires) {
		t.Fatalf("Holder after Renew: %+v, want expiry %s", got, l.Expires)
	}
	if err := a.Release(ctx, "run_renew", l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := mustLoad(t, b, "run_renew").Holder; got != nil {
		t.Fatalf("Holder after Release: %+v", got)
	}
	l2 := mustAcquire(t, b, "run_renew", "owner-b", time.Minute)
	if l2.Epoch <= l.Epoch {
		t.Fatalf("epoch after release and acquire: %d, was %d", l2.Epoch, l.Epoch)
	}
	if err := a.Renew(ctx, "run_renew", l); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("Renew of a released lease: %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, "run_renew", l); err != nil {
		t.Fatalf("Release of a lost lease: %v", err)
	}
	if got := mustLoad(t, a, "run_renew").Holder; got == nil || got.Owner != "owner-b" {
		t.Fatalf("a stale Release freed the new holder's lease: %+v", got)
	}
}

func fencing(t *testing.T, h *harness) {
	dying, b := h.open(), h.handle()
	mustCreate(t, dying, run("run_fence", time.Time{}))
	old := mustAcquire(t, dying, "run_fence", "dying", time.Minute)
	stale := mustLoad(t, dying, "run_fence")
	stale.Lease = old
	dying.Close() // as a crash: the lease is not released

	// The run can be taken over at the latest when the lease expires: at
	// once, or once the store's clock has passed the expiry.
	l, err := b.Acquire(ctx, "run_fence", "successor", time.Minute)
	var he *state.HeldError
	if errors.As(err, &he) {
		h.clock.Advance(time.Minute + time.Millisecond)
		l, err = b.Acquire(ctx, "run_fence", "successor", time.Minute)
	}
	if err != nil {
		t.Fatalf("Acquire after the holder died and its lease expired: %v", err)
	}
	if l.Epoch <= old.Epoch {
		t.Fatalf("successor's epoch %d, dead holder's %d", l.Epoch, old.Epoch)
	}

	// The dead holder's lease, presented by any handle, can never save.
	zombie := h.handle()
	stale.Messages = append(stale.Messages, msg(2, "zombie"))
	err = zombie.Save(ctx, stale, state.Delta{Messages: stale.Messages[2:]})
	if !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("Save with a lost lease: %v, want ErrLeaseLost", err)
	}
	if err := zombie.Renew(ctx, "run_fence", old); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("Renew of a lost lease: %v", err)
	}
	got := mustLoad(t, b, "run_fence")
	if got.Revision != 1 || len(got.Messages) != 2 {
		t.Fatalf("the fenced Save wrote: revision %d, %d messages", got.Revision, len(got.Messages))
	}
	got.Lease = l
	got.Messages = append(got.Messages, msg(2, "successor"))
	if err := b.Save(ctx, got, state.Delta{Messages: got.Messages[2:]}); err != nil {
		t.Fatalf("successor's Save: %v", err)
	}
}

// acquireRevision: the lease says the run's revision when it was taken,
// which a resume compares with the run it read ahead.
func acquireRevision(t *testing.T, h *harness) {
	a := h.handle()
	mustCreate(t, a, run("run_rev", time.Time{}))
	st := mustLoad(t, a, "run_rev")
	st.Messages = append(st.Messages, msg(len(st.Messages), "more"))
	if err := a.Save(ctx, st, state.Delta{Messages: st.Messages[len(st.Messages)-1:]}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	l := mustAcquire(t, a, "run_rev", "owner", time.Minute)
	if want := mustLoad(t, a, "run_rev").Revision; l.Revision != want || want < 2 {
		t.Fatalf("lease taken at revision %d, the run is at %d", l.Revision, want)
	}
}

func acquireMissing(t *testing.T, h *harness) {
	a := h.handle()
	if _, err := a.Acquire(ctx, "run_none", "x", time.Minute); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Acquire of a missing run: %v", err)
	}
}

func pruneHeld(t *testing.T, h *harness) {
	a, b := h.handle(), h.handle()
	old := h.clock.Now().Add(-48 * time.Hour).UTC()
	for i := 0; i < 3; i++ {
		mustCreate(t, a, run(fmt.Sprintf("run_old%d", i), old))
	}
	mustCreate(t, a, run("run_recent", time.Time{}))
	l := mustAcquire(t, a, "run_old1", "in-a-tool-call", time.Minute)

	rep, err := b.Prune(ctx, state.Filter{OlderThan: time.Hour})
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if fmt.Sprint(rep.Deleted) != "[run_old0 run_old2]" || fmt.Sprint(rep.Held) != "[run_old1]" {
		t.Fatalf("Prune reported deleted %v, held %v", rep.Deleted, rep.Held)
	}
	for _, id := range rep.Deleted {
		if _, err := b.Load(ctx, id); !errors.Is(err, state.ErrNotFound) {
			t.Errorf("pruned %s still loads: %v", id, err)
		}
	}
	kept := mustLoad(t, b, "run_old1")
	if len(kept.Journal) != 1 || kept.Journal[0].Stage != state.StageStarted || len(kept.Messages) != 2 {
		t.Fatalf("held run damaged by prune: %+v", kept.Journal)
	}
	mustLoad(t, b, "run_recent")

	// The holder finishes its step and lets go; now the run goes too.
	kept.Lease = l
	kept.Status = state.StatusCompleted
	if err := a.Save(ctx, kept, state.Delta{}); err != nil {
		t.Fatalf("holder's Save after the prune: %v", err)
	}
	if err := a.Release(ctx, "run_old1", l); err != nil {
		t.Fatal(err)
	}
	rep, err = b.Prune(ctx, state.Filter{Status: state.StatusCompleted})
	if err != nil || fmt.Sprint(rep.Deleted) != "[run_old1]" || len(rep.Held) != 0 {
		t.Fatalf("Prune after release: %+v %v", rep, err)
	}
}

// listed renders a listing as its run ids.
func listed(t *testing.T, s state.Store, f state.Filter) string {
	t.Helper()
	sums, err := s.List(ctx, f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	ids := make([]string, len(sums))
	for i, r := range sums {
		ids[i] = r.ID
	}
	return fmt.Sprint(ids)
}

func listFilters(t *testing.T, h *harness) {
	s := h.handle()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// Two runs share a creation instant: the id breaks the tie.
	for _, spec := range []struct {
		id, agent string
		status    state.Status
		at        time.Duration
	}{
		{"run_a", "A", state.StatusCompleted, 0},
		{"run_b", "B", state.StatusRunning, time.Second},
		{"run_c", "A", state.StatusWaitingApproval, 2 * time.Second},
		{"run_d", "A", state.StatusCompleted, 2 * time.Second},
		{"run_e", "B", state.StatusCompleted, 3 * time.Second},
	} {
		st := run(spec.id, t0.Add(spec.at))
		st.Config.Agent, st.Status = spec.agent, spec.status
		mustCreate(t, s, st)
	}
	for _, c := range []struct {
		f    state.Filter
		want string
	}{
		{state.Filter{}, "[run_e run_d run_c run_b run_a]"},
		{state.Filter{Limit: 2}, "[run_e run_d]"},
		{state.Filter{Status: state.StatusCompleted}, "[run_e run_d run_a]"},
		{state.Filter{Agent: "A"}, "[run_d run_c run_a]"},
		{state.Filter{Agent: "A", Status: state.StatusCompleted, Limit: 1}, "[run_d]"},
		{state.Filter{Agent: "nobody"}, "[]"},
	} {
		if got := listed(t, s, c.f); got != c.want {
			t.Errorf("List(%+v) = %s, want %s", c.f, got, c.want)
		}
	}
	sums, err := s.List(ctx, state.Filter{Limit: 1})
	if err != nil || len(sums) != 1 {
		t.Fatalf("List: %v %v", sums, err)
	}
	if r := sums[0]; r.Agent != "B" || r.Status != state.StatusCompleted || r.File != "a.nx" || r.Revision != 1 || !r.CreatedAt.Equal(t0.Add(3*time.Second)) {
		t.Errorf("summary %+v", r)
	}
}

func listCursor(t *testing.T, h *harness) {
	a, b := h.handle(), h.handle()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var all []string
	for i := 0; i < 7; i++ {
		// Pairs of runs created at one instant, so pages split ties.
		id := fmt.Sprintf("run_%d", i)
		mustCreate(t, a, run(id, t0.Add(time.Duration(i/2)*time.Second)))
		all = append([]string{id}, all...)
	}
	var (
		got   []string
		after *state.Cursor
	)
	for page := 0; ; page++ {
		sums, err := b.List(ctx, state.Filter{Limit: 3, After: after})
		if err != nil {
			t.Fatalf("List page %d: %v", page, err)
		}
		for _, r := range sums {
			got = append(got, r.ID)
		}
		if len(sums) < 3 {
			break
		}
		c := state.CursorOf(sums[len(sums)-1])
		// The token round-trips: a caller pages with the string alone.
		parsed, err := state.ParseCursor(c.String())
		if err != nil || !parsed.CreatedAt.Equal(c.CreatedAt) || parsed.ID != c.ID {
			t.Fatalf("cursor %q parsed as %+v, %v", c.String(), parsed, err)
		}
		after = &parsed
		if page == 0 {
			// Between pages: a new run, and a save of a listed one
			// (its updated_at moves, its created_at does not).
			mustCreate(t, a, run("run_new", time.Time{}))
			st := mustLoad(t, a, "run_5")
			st.Status = state.StatusCompleted
			if err := a.Save(ctx, st, state.Delta{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(all) {
		t.Fatalf("pages gave %v, want %v", got, all)
	}
	if got := listed(t, b, state.Filter{Status: state.StatusRunning, After: &state.Cursor{CreatedAt: t0.Add(2 * time.Second), ID: "run_5"}}); got != "[run_4 run_3 run_2 run_1 run_0]" {
		t.Errorf("cursor with a status filter: %s", got)
	}
	if _, err := state.ParseCursor("run_1"); !errors.Is(err, state.ErrBadCursor) {
		t.Errorf("ParseCursor of a run id: %v", err)
	}
}

func loadTail(t *testing.T, h *harness) {
	s := h.handle()
	tl, ok := s.(state.TailLoader)
	if !ok {
		t.Skip("this store loads whole runs only")
	}
	st := run("run_long", time.Time{})
	st.Messages = nil
	st.Journal = nil
	yes := true
	for i := 0; i < 20; i++ {
		st.Messages = append(st.Messages, msg(i, fmt.Sprintf("m%d", i)))
		st.ProviderItems = append(st.ProviderItems, state.ProviderItem{Seq: i, Raw: []byte(`{"n":1}`)})
		e := state.JournalEntry{CallID: fmt.Sprintf("call_%02d", i), Tool: "t", Seq: i, Arguments: []byte(`{"stage":"completed"}`), Valid: true, Stage: state.StageCompleted}
		switch i {
		case 3: // an old call whose outcome is unknown
			e.Stage = state.StageStarted
		case 5: // an old call waiting for a decision
			e.Stage, e.NeedsApproval = state.StageNotStarted, true
		case 6: // decided, not yet run
			e.Stage, e.NeedsApproval, e.Decision = state.StageNotStarted, true, &yes
		}
		st.Journal = append(st.Journal, e)
	}
	mustCreate(t, s, st)

	got, om, err := tl.LoadTail(ctx, "run_long", 2)
	if err != nil {
		t.Fatalf("LoadTail: %v", err)
	}
	var msgs, items, calls []string
	for _, m := range got.Messages {
		msgs = append(msgs, m.Content)
	}
	for _, it := range got.ProviderItems {
		items = append(items, fmt.Sprint(it.Seq))
	}
	for _, e := range got.Journal {
		calls = append(calls, e.CallID+":"+string(e.Stage))
	}
	if fmt.Sprint(msgs) != "[m18 m19]" || fmt.Sprint(items) != "[18 19]" {
		t.Errorf("tail of messages %v, provider items %v", msgs, items)
	}
	if want := "[call_03:started call_05:not_started call_06:not_started call_18:completed call_19:completed]"; fmt.Sprint(calls) != want {
		t.Errorf("tail of the journal %v, want %v", calls, want)
	}
	if om != (state.Omitted{Messages: 18, ProviderItems: 18, Journal: 15}) {
		t.Errorf("omitted %+v", om)
	}
	if got.Revision != 1 || got.Task != "task" || got.Config.Agent != "A" {
		t.Errorf("header %+v", got)
	}

	whole, om, err := tl.LoadTail(ctx, "run_long", 0)
	if err != nil || len(whole.Messages) != 20 || len(whole.Journal) != 20 || om != (state.Omitted{}) {
		t.Errorf("LoadTail(0): %d messages, %d entries, omitted %+v, %v", len(whole.Messages), len(whole.Journal), om, err)
	}
	if _, _, err := tl.LoadTail(ctx, "run_missing", 2); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("LoadTail of a missing run: %v", err)
	}
}

// headerDelta checks the header a store writes in part (stores write only
// usage and updated_at when nothing else changed since their own last
// write): every save loads back as it was saved, including a header
// change after usage-only saves and a save after another handle changed
// the header.
func headerDelta(t *testing.T, h *harness) {
	a, b := h.handle(), h.handle()
	st := run("run_hdr", time.Time{})
	mustCreate(t, a, st)
	check := func(what string, want *state.RunState) {
		t.Helper()
		got := mustLoad(t, b, "run_hdr")
		if got.Revision != want.Revision || got.Status != want.Status || got.Task != want.Task || got.Usage != want.Usage ||
			string(got.Output) != string(want.Output) || (got.Error == nil) != (want.Error == nil) || got.Config.Agent != want.Config.Agent {
			t.Fatalf("%s: loaded revision %d status %s task %q usage %+v output %s error %v, want revision %d status %s task %q usage %+v output %s error %v",
				what, got.Revision, got.Status, got.Task, got.Usage, got.Output, got.Error, want.Revision, want.Status, want.Task, want.Usage, want.Output, want.Error)
		}
	}
	for i := 1; i <= 3; i++ {
		st.Usage.ToolCalls = i
		if err := a.Save(ctx, st, state.Delta{}); err != nil {
			t.Fatalf("usage-only Save: %v", err)
		}
		check("after a usage-only save", st)
	}
	st.Status, st.Task, st.Output = state.StatusCompleted, "another task", []byte(`"done"`)
	if err := a.Save(ctx, st, state.Delta{}); err != nil {
		t.Fatalf("header Save: %v", err)
	}
	check("after a header change", st)
	upd, err := b.Update(ctx, "run_hdr", func(o *state.RunState) (state.Delta, error) {
		o.Status = state.StatusFailed
		o.Error = &state.RunError{Code: "x", Message: "set by another handle"}
		return state.Delta{}, nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	check("after another handle's update", upd)
	st = mustLoad(t, a, "run_hdr")
	st.Status, st.Error, st.Output = state.StatusRunning, nil, nil
	st.Usage.ToolCalls = 9
	if err := a.Save(ctx, st, state.Delta{}); err != nil {
		t.Fatalf("Save after the update: %v", err)
	}
	check("a save after another handle's update", st)
}

// queued is a run submitted for workers (nexa agent --detach) of the
// program hash.
func queued(id, hash string) *state.RunState {
	return &state.RunState{
		ID:     id,
		Status: state.StatusQueued,
		Config: state.Config{SourceFile: "a.nx", SourceHash: hash, Agent: "A", WorkDir: ".", Driver: state.DriverWorker},
		Task:   "task",
		Messages: []state.Message{
			{Seq: 0, Role: state.RoleUser, Content: "task"},
		},
		Journal: []state.JournalEntry{},
	}
}

func claimer(t *testing.T, s state.Store) state.Claimer {
	t.Helper()
	c, ok := s.(state.Claimer)
	if !ok {
		t.Fatalf("%T does not implement state.Claimer", s)
	}
	return c
}

func claimReq(owner string, hashes ...string) state.ClaimRequest {
	return state.ClaimRequest{Owner: owner, TTL: time.Minute, SourceHashes: hashes}
}

func claimRace(t *testing.T, h *harness) {
	const runs, claimers = 24, 4
	first := h.handle()
	for i := range runs {
		mustCreate(t, first, queued(fmt.Sprintf("run_q%02d", i), "sha256:p"))
	}
	var (
		mu  sync.Mutex
		got = map[string]string{}
		wg  sync.WaitGroup
	)
	for w := range claimers {
		s := h.handle()
		owner := fmt.Sprintf("worker-%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id, l, err := claimer(t, s).Claim(ctx, claimReq(owner, "sha256:p"))
				if err != nil {
					t.Errorf("%s: Claim: %v", owner, err)
					return
				}
				if id == "" {
					return
				}
				if l == nil || l.Owner != owner || l.Epoch < 1 {
					t.Errorf("%s: Claim of %s returned lease %+v", owner, id, l)
				}
				mu.Lock()
				if prev, ok := got[id]; ok {
					t.Errorf("run %s claimed by %s and by %s", id, prev, owner)
				}
				got[id] = owner
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != runs {
		t.Fatalf("claimed %d runs of %d: %v", len(got), runs, got)
	}
	for id, owner := range got {
		if st := mustLoad(t, first, id); st.Holder == nil || st.Holder.Owner != owner {
			t.Errorf("run %s claimed by %s is held by %+v", id, owner, st.Holder)
		}
	}
}

func claimLease(t *testing.T, h *harness) {
	holder, dying, b := h.handle(), h.open(), h.handle()
	mustCreate(t, holder, queued("run_live", "sha256:p"))
	live := mustAcquire(t, holder, "run_live", "holder", time.Minute)
	if id, _, err := claimer(t, b).Claim(ctx, claimReq("thief", "sha256:p")); err != nil || id != "" {
		t.Fatalf("Claim while a live lease holds the only run: %q, %v; want nothing", id, err)
	}

	st := queued("run_dead", "sha256:p")
	st.Status = state.StatusRunning // the holder died mid-drive
	mustCreate(t, dying, st)
	old := mustAcquire(t, dying, "run_dead", "dying", time.Minute)
	dying.Close() // as a crash: the lease is not released

	// The dead holder's run is claimed at the latest once its lease has
	// expired; the live holder's never.
	id, l, err := claimer(t, b).Claim(ctx, claimReq("rescuer", "sha256:p"))
	if err == nil && id == "" {
		h.clock.Advance(time.Minute + time.Millisecond)
		// The live holder renews its lease, as a driving executor does.
		if err := holder.Renew(ctx, "run_live", live); err != nil {
			t.Fatalf("the live holder renews: %v", err)
		}
		id, l, err = claimer(t, b).Claim(ctx, claimReq("rescuer", "sha256:p"))
	}
	if err != nil || id != "run_dead" {
		t.Fatalf("Claim after the holder died: %q, %v; want run_dead", id, err)
	}
	if l.Epoch <= old.Epoch {
		t.Fatalf("rescuer's epoch %d, dead holder's %d", l.Epoch, old.Epoch)
	}
	if id, _, err := claimer(t, b).Claim(ctx, claimReq("rescuer-2", "sha256:p")); err != nil || id != "" {
		t.Fatalf("a second Claim: %q, %v; want nothing (one run live, one claimed)", id, err)
	}
	// The rescuer's lease fences the saves: the dead holder's can never
	// write again.
	stale := mustLoad(t, b, "run_dead")
	stale.Lease = old
	if err := b.Save(ctx, stale, state.Delta{}); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("Save with the dead holder's lease: %v, want ErrLeaseLost", err)
	}
}

func claimFilters(t *testing.T, h *harness) {
	s := h.handle()
	mustCreate(t, s, queued("run_other", "sha256:other"))
	fg := queued("run_foreground", "sha256:p")
	fg.Config.Driver = "" // a run of nexa agent, never handed over
	fg.Status = state.StatusInterrupted
	mustCreate(t, s, fg)
	b := queued("run_b", "sha256:p")
	b.Config.Agent = "B"
	mustCreate(t, s, b)

	c := claimer(t, s)
	if id, _, err := c.Claim(ctx, state.ClaimRequest{Owner: "w", TTL: time.Minute}); err != nil || id != "" {
		t.Fatalf("Claim offering no program: %q, %v", id, err)
	}
	req := claimReq("w", "sha256:p", "sha256:none")
	req.SkipAgents = []string{"B"}
	if id, _, err := c.Claim(ctx, req); err != nil || id != "" {
		t.Fatalf("Claim of program sha256:p skipping agent B: %q, %v; want nothing", id, err)
	}
	if id, _, err := c.Claim(ctx, claimReq("w", "sha256:p")); err != nil || id != "run_b" {
		t.Fatalf("Claim of program sha256:p: %q, %v; want run_b", id, err)
	}
	if id, _, err := c.Claim(ctx, claimReq("w", "sha256:p")); err != nil || id != "" {
		t.Fatalf("Claim again: %q, %v; want nothing (run_foreground is not a worker run)", id, err)
	}
	if id, _, err := c.Claim(ctx, claimReq("w", "sha256:other")); err != nil || id != "run_other" {
		t.Fatalf("Claim of program sha256:other: %q, %v; want run_other", id, err)
	}
}

func claimRunnable(t *testing.T, h *harness) {
	s := h.handle()
	st := queued("run_wait", "sha256:p")
	st.Status = state.StatusWaitingApproval
	st.Messages = append(st.Messages, state.Message{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "call_1", Name: "t", Arguments: "{}"}}})
	st.Journal = []state.JournalEntry{{CallID: "call_1", Tool: "t", Seq: 0, Turn: 1, Arguments: []byte("{}"), Valid: true,
		Stage: state.StageNotStarted, NeedsApproval: true}}
	mustCreate(t, s, st)
	c := claimer(t, s)
	none := func(when string) {
		t.Helper()
		if id, _, err := c.Claim(ctx, claimReq("w", "sha256:p")); err != nil || id != "" {
			t.Fatalf("Claim %s: %q, %v; want nothing", when, id, err)
		}
	}
	none("while a call waits for a decision")

	// A decision recorded by an operator (a save of the journal row
	// only) makes the run runnable.
	got, err := s.Update(ctx, "run_wait", func(st *state.RunState) (state.Delta, error) {
		yes := true
		e := st.Entry("call_1")
		e.Decision, e.DecidedBy = &yes, "dana"
		return state.Delta{Journal: []state.JournalEntry{*e}}, nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	id, l, err := c.Claim(ctx, claimReq("w", "sha256:p"))
	if err != nil || id != "run_wait" {
		t.Fatalf("Claim after the decision: %q, %v; want run_wait", id, err)
	}
	// Its holder drives it to the end and releases it: a terminal run is
	// never claimed again.
	got.Lease = l
	got.Status = state.StatusCompleted
	if err := s.Save(ctx, got, state.Delta{}); err != nil {
		t.Fatalf("holder's Save: %v", err)
	}
	if err := s.Release(ctx, "run_wait", l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	none("of a completed run")
}

// waiting is a worker run stopped for the approval of call_1, whose wait
// runs out at expires (nil: it waits for a decision alone).
func waiting(id, hash string, expires *time.Time) *state.RunState {
	st := queued(id, hash)
	st.Status = state.StatusWaitingApproval
	st.Messages = append(st.Messages, state.Message{Seq: 1, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "call_1", Name: "t", Arguments: "{}"}}})
	st.Journal = []state.JournalEntry{{CallID: "call_1", Tool: "t", Seq: 0, Turn: 1, Arguments: []byte("{}"), Valid: true,
		Stage: state.StageNotStarted, NeedsApproval: true, ExpiresAt: expires}}
	return st
}

// claimExpired: a call that waits for approval with a bound makes its
// worker run claimable once the bound has passed by the store's clock,
// with no decision recorded and no one touching the run (the resume the
// worker makes records the expiry); before that, it is not. A run of
// nexa agent, or one whose calls wait without a bound, is never claimed.
func claimExpired(t *testing.T, h *harness) {
	s := h.handle()
	now := h.clock.Now()
	soon, past := now.Add(10*time.Minute), now.Add(-time.Second)
	// The oldest first: a claim that took any run with an expiry, passed
	// or not, would take this one.
	mustCreate(t, s, waiting("run_a_future", "sha256:p", &soon))
	mustCreate(t, s, waiting("run_b_unbounded", "sha256:p", nil))
	fg := waiting("run_c_foreground", "sha256:p", &past)
	fg.Config.Driver = ""
	mustCreate(t, s, fg)
	mustCreate(t, s, waiting("run_d_past", "sha256:p", &past))
	c := claimer(t, s)
	none := func(when string) {
		t.Helper()
		if id, _, err := c.Claim(ctx, claimReq("w", "sha256:p")); err != nil || id != "" {
			t.Fatalf("Claim %s: %q, %v; want nothing", when, id, err)
		}
	}

	id, l, err := c.Claim(ctx, claimReq("w", "sha256:p"))
	if err != nil || id != "run_d_past" {
		t.Fatalf("Claim: %q, %v; want run_d_past, whose wait ran out", id, err)
	}
	// Its holder records the expiry and drives the run to its end.
	got := mustLoad(t, s, id)
	got.Lease = l
	e := got.Entry("call_1")
	e.Stage, e.Outcome, e.CompletedAt = state.StageCompleted, "expired", &past
	got.Status = state.StatusCompleted
	if err := s.Save(ctx, got, state.Delta{Journal: []state.JournalEntry{*e}}); err != nil {
		t.Fatalf("holder's Save: %v", err)
	}
	if err := s.Release(ctx, id, l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	none("while the other waits run on")

	h.clock.Advance(11 * time.Minute)
	if id, _, err := c.Claim(ctx, claimReq("w", "sha256:p")); err != nil || id != "run_a_future" {
		t.Fatalf("Claim once the second wait ran out: %q, %v; want run_a_future", id, err)
	}
	none("of a run of nexa agent or of a wait without a bound")
}

func countByStatus(t *testing.T, h *harness) {
	s := h.handle()
	c, ok := s.(state.StatusCounter)
	if !ok {
		t.Fatalf("%T does not count runs by status", s)
	}
	got, err := c.CountByStatus(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("CountByStatus of an empty store: %v, %v", got, err)
	}
	for i, status := range []state.Status{state.StatusCompleted, state.StatusCompleted, state.StatusFailed} {
		st := run(fmt.Sprintf("run_count%d", i), time.Time{})
		st.Status = status
		mustCreate(t, s, st)
	}
	got, err = c.CountByStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[state.Status]int{state.StatusCompleted: 2, state.StatusFailed: 1}
	if len(got) != len(want) || got[state.StatusCompleted] != 2 || got[state.StatusFailed] != 1 {
		t.Fatalf("CountByStatus = %v, want %v", got, want)
	}
}

package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// The lifecycle of a run, one order for every caller (docs/reference/runtime.md#lifecycle-order): take the run's lease, load it, check, write, continue, release.
// The CLI maps flags to these calls and renders what they return; it never
// locks, loads or saves a run itself.

// LeaseTTL is how long a lease lasts without renewal. A driving executor
// renews it every LeaseTTL/3, so only an executor stuck for LeaseTTL (or
// dead) loses its run; on the SQLite store a dead holder's run is free at
// once (see the store package).
const LeaseTTL = 30 * time.Second

// NewLeaseOwner names this process as a lease holder, for messages and for
// `nexa runs show`: host, pid and a random suffix that keeps two executors
// of one process apart.
func NewLeaseOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s pid %d #%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// acquire takes the lease on run id, mapping the store's answers to the
// errors a user sees.
func acquire(ctx context.Context, s state.Store, id, owner string, ttl time.Duration) (*state.Lease, error) {
	l, err := s.Acquire(ctx, id, owner, ttl)
	if err == nil {
		return l, nil
	}
	var he *state.HeldError
	if errors.As(err, &he) {
		msg := fmt.Sprintf("another nexa process is working on run %s right now", id)
		if he.Holder.Owner != "" {
			msg = fmt.Sprintf("run %s is held by %s (lease until %s)", id, he.Holder.Owner, he.Holder.Expires.UTC().Format(time.RFC3339Nano))
		}
		return nil, &Error{Code: CodeCheckpointConflict, Message: msg + "; wait for it to stop, then try again", Err: err}
	}
	return nil, loadError(id, err)
}

// loadError turns an error of a store read of run id into the runtime's
// error: run_not_found for a missing run, else store_error with the
// store's message (it names the operation and the run already).
func loadError(id string, err error) error {
	if errors.Is(err, state.ErrNotFound) {
		return &Error{Code: CodeRunNotFound, Refusal: true, Message: fmt.Sprintf("no run %s in the store", id), Err: err}
	}
	return &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
}

// release gives a lease back; a failure only delays the next taker until
// the lease expires, so it is not reported over the run's own result.
func release(s state.Store, id string, l *state.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), LeaseTTL)
	defer cancel()
	_ = s.Release(ctx, id, l)
}

// keepLease renews l every LeaseTTL/3 (on the ticks of Config.LeaseTicker)
// until stop is called, so a run stays held through a long tool call or
// provider request. A renewal that finds the lease lost stops renewing:
// the executor's next save is then refused by the store (fencing), which
// is what ends the drive.
func (r *Runner) keepLease(id string, l *state.Lease) (stop func()) {
	s := r.store
	done := make(chan struct{})
	finished := make(chan struct{})
	lc := *l // the driver reads l while this goroutine renews its copy
	ticks, stopTicks := r.leaseTick(lc.TTL / 3)
	go func() {
		defer close(finished)
		defer stopTicks()
		for {
			select {
			case <-done:
				return
			case <-ticks:
			}
			ctx, cancel := context.WithTimeout(context.Background(), lc.TTL/3)
			err := s.Renew(ctx, id, &lc)
			cancel()
			if r.onRenew != nil {
				r.onRenew(id, err)
			}
			if errors.Is(err, state.ErrLeaseLost) {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// wallTicker is the default Config.LeaseTicker: a time.Ticker.
func wallTicker(period time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(period)
	return t.C, t.Stop
}

// storeError turns an error of a store write into the runtime's error. A
// store's errors already name the operation and the run ("save run X: …",
// see state.Store), so the message adds no context of its own.
func storeError(id string, err error) error {
	var ce *state.ConflictError
	switch {
	case errors.As(err, &ce):
		return &Error{Code: CodeCheckpointConflict, Message: fmt.Sprintf(
			"run %s was changed by another executor (this one read revision %d, the store has %d); nothing was written",
			ce.RunID, ce.Expected, ce.Actual), Err: err}
	case errors.Is(err, state.ErrLeaseLost):
		return &Error{Code: CodeCheckpointConflict, Message: fmt.Sprintf(
			"this executor lost its lease on run %s to another executor; nothing more was written (%v)", id, err), Err: err}
	}
	return &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
}

// ResumeOptions is what a resume brings besides the run id.
type ResumeOptions struct {
	RunID string
	// Request is what this process found (program, agent, provider,
	// budgets given, working directory, MCP servers): it must match the
	// run (docs/reference/runtime.md#resume-checks).
	Request ResumeRequest
	// TimeoutGiven: a deadline was asked for; it is fixed at the start, so
	// the resume is refused.
	TimeoutGiven bool
	// Decisions are recorded before the run continues.
	Decisions []Decision
	// Responses answer calls that wait for input (--respond); they are
	// checked and recorded with the decisions, before the run continues.
	Responses []Response
	// Preloaded, when not nil, is the run read ahead (Preload): Resume
	// uses it if the run has not changed since, instead of reading it
	// again once it holds the lease.
	Preloaded *Preloaded
	// Held, when not nil, is the run's lease the caller already took (a
	// worker's claim, state.Claimer): Resume takes no lease of its own,
	// and releases this one when it returns, as its own.
	Held *state.Lease
}

// Preloaded is a run read for a drive ahead of its resume, without its
// lease, so that the read (the largest part of resuming a long run) can go
// on while the command does other work, such as compiling the program.
type Preloaded struct {
	done chan struct{}
	run  *state.RunState
	err  error
}

// Preload starts reading run runID of s as a drive reads it. Wait for it
// (Wait) before s is closed.
func Preload(ctx context.Context, s state.Store, runID string) *Preloaded {
	return preloading(func() (*state.RunState, error) { return loadForDrive(ctx, s, runID) })
}

// preloading runs load on its own goroutine and keeps its result.
func preloading(load func() (*state.RunState, error)) *Preloaded {
	p := &Preloaded{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.run, p.err = load()
	}()
	return p
}

// Wait waits for the read to end.
func (p *Preloaded) Wait() {
	if p != nil {
		<-p.done
	}
}

// loadHeld reads run runID for a drive once its lease l is held: the
// preloaded run if there is one and it is still current, since every save
// of a run raises its revision and taking the lease changes none of its
// rows; else the run as it is now. The revision to compare is the one the
// lease was taken at, or the header's when the store does not report it.
func loadHeld(ctx context.Context, s state.Store, runID string, p *Preloaded, l *state.Lease) (*state.RunState, error) {
	if p != nil {
		p.Wait()
		if p.err == nil && p.run != nil {
			rev := l.Revision
			holder := &state.Lease{Owner: l.Owner, Epoch: l.Epoch, Expires: l.Expires}
			if rev == 0 {
				h, err := Header(ctx, s, runID)
				if err != nil {
					return nil, err
				}
				rev, holder = h.Revision, h.Holder
			}
			if rev == p.run.Revision {
				run := p.run
				p.run = nil // used once
				run.Holder = holder
				return run, nil
			}
		}
	}
	return loadForDrive(ctx, s, runID)
}

// Resume continues a run: lease, load, docs/reference/runtime.md#resume-checks (the checks); docs/reference/runtime.md#lifecycle-order (the order); docs/reference/runtime.md#agent-loop (the loop). The
// returned state is the run as stored (for a refusal, unchanged) or nil
// when there is no run to show.
func (r *Runner) Resume(ctx context.Context, o ResumeOptions) (*state.RunState, error) {
	l := o.Held
	if l == nil {
		var err error
		if l, err = acquire(ctx, r.store, o.RunID, r.owner, r.leaseTTL); err != nil {
			return nil, err
		}
	}
	defer release(r.store, o.RunID, l)
	run, err := loadHeld(ctx, r.store, o.RunID, o.Preloaded, l)
	if err != nil {
		return nil, err
	}
	run.Lease = l
	if err := CheckResume(run, o.Request); err != nil {
		return run, err
	}
	if o.TimeoutGiven {
		return run, &Error{Code: CodeUsage, Refusal: true, Message: "--timeout is fixed when a run starts; a resume keeps the run's deadline (omit --timeout)"}
	}
	raised, reopen := raiseMaxCost(run, o.Request.Budgets.MaxCost)
	if raised {
		if err := r.checkPriced(run.Config.Budgets); err != nil {
			return run, err
		}
		if reopen {
			// Stopped at its old money budget: it continues under
			// the new one (the loop checks every budget again
			// before its next request).
			run.Status, run.Error = state.StatusInterrupted, nil
		}
		if err := r.store.Save(ctx, run, state.Delta{}); err != nil {
			return run, storeError(run.ID, err)
		}
	} else if run.Config.Budgets.MaxCostUSD > 0 && !run.Status.Terminal() {
		if err := r.checkPriced(run.Config.Budgets); err != nil {
			return run, err
		}
	}
	if run.Status.Terminal() {
		if len(o.Decisions) > 0 || len(o.Responses) > 0 {
			return run, &Error{Code: CodeNotWaiting, Refusal: true, Message: fmt.Sprintf("run %s is %s; there is nothing to decide or answer", run.ID, run.Status)}
		}
		return run, nil
	}
	// A run found running was left by a process that died mid-drive:
	// its tools ran unchecked, so the save that stops it checks the store.
	crashed := run.Status == state.StatusRunning
	if ExpireDeadline(run, r.now()) {
		if err := r.store.Save(ctx, run, state.Delta{Verify: crashed}); err != nil {
			return run, storeError(run.ID, err)
		}
		return run, nil
	}
	// What the store says of calls that have not run is no authority:
	// the program and the policy decide again which need a person, and
	// waits that ran out expire, before any decision is applied.
	now := r.now()
	changed := r.rederive(run, now)
	expired := ExpireApprovals(run, now)
	changed = append(changed, expired...)
	var decided []Event
	for i := range expired {
		decided = append(decided, decidedEvent(run.ID, &expired[i]))
	}
	// Answers to input requests are checked before any decision is
	// applied, so a refusal of either leaves the run as loaded.
	rs := stampResponses(o.Responses, now)
	wire, err := checkResponses(run, rs, r.redact)
	if err != nil {
		return run, err
	}
	if len(o.Decisions) > 0 {
		ds := stamp(o.Decisions, now)
		delta, err := ApplyDecisions(run, ds, r)
		if err != nil {
			return refusedWhole(ctx, r.store, run, ds, err)
		}
		changed = append(changed, delta.Journal...)
		for i := range delta.Journal {
			decided = append(decided, decidedEvent(run.ID, &delta.Journal[i]))
		}
	}
	if len(rs) > 0 {
		delta, evs := applyResponses(run, rs, wire)
		changed = append(changed, delta.Journal...)
		decided = append(decided, evs...)
	}
	if len(changed) > 0 {
		// The run continues at once, so this save does not stop it: it
		// marks the run as being driven, as the loop's first save would
		// (a crash from here on leaves a resumable running run with the
		// decisions recorded). A save that stops a run makes the store
		// check the whole file (docs/runs.md); this one need not.
		run.Status, run.Error = state.StatusRunning, nil
		if err := r.store.Save(ctx, run, state.Delta{Journal: lastOfEach(changed)}); err != nil {
			return run, storeError(run.ID, err)
		}
	}
	stop := r.keepLease(run.ID, l)
	defer stop()
	return r.continueRun(ctx, run, crashed, decided...)
}

// Decide records decisions on pending calls of a run without continuing
// it (nexa runs approve): lease, load, decide, save, release.
func Decide(ctx context.Context, s state.Store, runID string, ds []Decision) (*state.RunState, error) {
	return DecideAtRevision(ctx, s, runID, 0, ds)
}

// DecideAtRevision is Decide for a caller that showed the run to a person
// at a revision (nexa serve's page): when the run has changed since, the
// decision is refused with checkpoint_conflict instead of being recorded
// against a run the person did not see. Revision 0 skips that check.
func DecideAtRevision(ctx context.Context, s state.Store, runID string, revision int64, ds []Decision) (*state.RunState, error) {
	return DecideWith(ctx, s, runID, ds, DecideOptions{Revision: revision})
}

// DecideOptions are what a decision made outside a resume may bring.
type DecideOptions struct {
	// Revision is the revision the run was shown at (0: no check).
	Revision int64
	// Check builds the checker of edited arguments for the run
	// (nil: edits are refused).
	Check func(*state.RunState) (EditChecker, error)
	// Now is the time of the decisions; time.Now when zero.
	Now time.Time
	// Responses answer calls that wait for input, recorded with the
	// decisions (HandOver); Redact replaces secret values in them.
	Responses []Response
	Redact    func(string) string
}

// DecideWith is DecideAtRevision for decisions that may carry edited
// arguments, checked before anything is recorded. Calls whose wait ran
// out by o.Now are recorded as expired in the same write.
func DecideWith(ctx context.Context, s state.Store, runID string, ds []Decision, o DecideOptions) (*state.RunState, error) {
	return operatorWrite(ctx, s, runID, o.Revision, func(st *state.RunState) (state.Delta, error) {
		return o.decide(st, ds)
	})
}

// now is the time of the decisions: o.Now, else time.Now.
func (o DecideOptions) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// decide records ds in st as DecideWith does: the calls whose wait ran
// out are expired, edited arguments are checked with o.Check, and the rows
// to save are returned, each once.
func (o DecideOptions) decide(st *state.RunState, ds []Decision) (state.Delta, error) {
	now := o.now()
	expired := ExpireApprovals(st, now)
	var ec EditChecker
	if o.Check != nil && slices.ContainsFunc(ds, func(d Decision) bool { return d.Args != nil }) {
		c, err := o.Check(st)
		if err != nil {
			return state.Delta{}, err
		}
		ec = c
	}
	d, err := ApplyDecisions(st, stamp(ds, now), ec)
	if err != nil {
		return d, err
	}
	d.Journal = lastOfEach(append(expired, d.Journal...))
	return d, nil
}

// HandOver hands a run to the workers (nexa agent --resume RUN --detach,
// a decision in nexa serve --execute): under the run's lease it records
// the decisions given, if any, as DecideWith does, and marks the run a
// worker run (state.Config.Driver) in one write, then releases it; a
// worker that has the run's program continues it once nothing waits for
// a person. A terminal run is refused (not_waiting): it has nothing left
// to do. Handing over a worker run again changes nothing but the
// decisions.
func HandOver(ctx context.Context, s state.Store, runID string, ds []Decision, o DecideOptions) (*state.RunState, error) {
	return operatorWrite(ctx, s, runID, o.Revision, func(st *state.RunState) (state.Delta, error) {
		if st.Status.Terminal() {
			return state.Delta{}, &Error{Code: CodeNotWaiting, Refusal: true, Message: fmt.Sprintf("run %s is %s; there is nothing left for a worker to do", st.ID, st.Status)}
		}
		o.Now = o.now() // one time for the answers and the decisions
		var d state.Delta
		rs := stampResponses(o.Responses, o.Now)
		wire, err := checkResponses(st, rs, o.Redact)
		if err != nil {
			return d, err
		}
		if len(ds) > 0 {
			if d, err = o.decide(st, ds); err != nil {
				return d, err
			}
		}
		if len(rs) > 0 {
			answered, _ := applyResponses(st, rs, wire)
			d.Journal = lastOfEach(append(d.Journal, answered.Journal...))
		}
		st.Config.Driver = state.DriverWorker
		return d, nil
	})
}

// lastOfEach keeps the last version of each call's entry, in first-seen
// order: one save writes each row once.
func lastOfEach(es []state.JournalEntry) []state.JournalEntry {
	at := map[string]int{}
	var out []state.JournalEntry
	for _, e := range es {
		if i, ok := at[e.CallID]; ok {
			out[i] = e
			continue
		}
		at[e.CallID] = len(out)
		out = append(out, e)
	}
	return out
}

// stamp fills the time of decisions that carry none.
func stamp(ds []Decision, now time.Time) []Decision {
	out := make([]Decision, len(ds))
	for i, d := range ds {
		if d.At.IsZero() {
			d.At = now
		}
		out[i] = d
	}
	return out
}

// stampResponses is stamp for answers to input requests.
func stampResponses(rs []Response, now time.Time) []Response {
	out := make([]Response, len(rs))
	for i, r := range rs {
		if r.At.IsZero() {
			r.At = now
		}
		out[i] = r
	}
	return out
}

// ResolveUnknown records the verified outcome of a call whose outcome is
// unknown (nexa runs resolve) as the operator by: lease, load, resolve,
// save, release.
func ResolveUnknown(ctx context.Context, s state.Store, runID, callID, output string, success bool, by string) (*state.RunState, error) {
	return ResolveAtRevision(ctx, s, runID, 0, callID, output, success, by)
}

// ResolveAtRevision is ResolveUnknown refused with checkpoint_conflict
// when the run is no longer at revision (0: no check), for the same
// reason as DecideAtRevision.
func ResolveAtRevision(ctx context.Context, s state.Store, runID string, revision int64, callID, output string, success bool, by string) (*state.RunState, error) {
	return operatorWrite(ctx, s, runID, revision, func(st *state.RunState) (state.Delta, error) {
		return Resolve(st, callID, output, success, by, time.Now())
	})
}

// operatorWrite is an operator's change to a run: refused while an
// executor holds the run (resolving a call that is still running would
// record a guess).
func operatorWrite(ctx context.Context, s state.Store, runID string, revision int64, change func(*state.RunState) (state.Delta, error)) (*state.RunState, error) {
	l, err := acquire(ctx, s, runID, NewLeaseOwner(), LeaseTTL)
	if err != nil {
		return nil, err
	}
	defer release(s, runID, l)
	st, err := Show(ctx, s, runID)
	if err != nil {
		return nil, err
	}
	st.Lease = l
	if revision > 0 && st.Revision != revision {
		return nil, &Error{Code: CodeCheckpointConflict, Message: fmt.Sprintf(
			"run %s changed since revision %d was shown (the store has revision %d, status %s); nothing was written: look at the run again and decide anew",
			runID, revision, st.Revision, st.Status)}
	}
	d, err := change(st)
	if err != nil {
		return nil, err
	}
	if err := s.Save(ctx, st, d); err != nil {
		return nil, storeError(runID, err)
	}
	// The lease is released before the caller sees the run: nobody holds it
	// (Holder is this write's own lease, as loaded).
	st.Lease, st.Holder = nil, nil
	return st, nil
}

// Show loads a run to display it, with its holder if one drives it now.
func Show(ctx context.Context, s state.Store, runID string) (*state.RunState, error) {
	st, err := s.Load(ctx, runID)
	if err != nil {
		return nil, loadError(runID, err)
	}
	return st, nil
}

// loadForDrive loads a run this executor is about to continue: without
// the provider items' bodies and with the completed calls of earlier
// replies as stubs when the store can leave them out (state.DriveLoader),
// since a drive reads neither, else whole. A resume of a long run then
// reads a third of the store and takes about two thirds of the time
// (state.DriveLoader has the figures). Should a call of the latest reply
// come as a stub (its tool message copies its result), the run is loaded
// whole.
func loadForDrive(ctx context.Context, s state.Store, runID string) (*state.RunState, error) {
	dl, ok := s.(state.DriveLoader)
	if !ok {
		return Show(ctx, s, runID)
	}
	st, err := dl.LoadForDrive(ctx, runID)
	return driveLoaded(ctx, s, runID, st, err)
}

// driveLoaded completes a DriveLoader's read of run runID (st, err): the
// runtime's error for a failed one, and the whole run instead when the
// latest reply's calls are not all whole.
func driveLoaded(ctx context.Context, s state.Store, runID string, st *state.RunState, err error) (*state.RunState, error) {
	if err != nil {
		return nil, loadError(runID, err)
	}
	if latestWhole(st) {
		return st, nil
	}
	return Show(ctx, s, runID)
}

// latestWhole reports whether every call of the run's latest reply with
// calls has its journal entry whole (not a stub).
func latestWhole(st *state.RunState) bool {
	for i := len(st.Messages) - 1; i >= 0; i-- {
		m := st.Messages[i]
		if m.Role != state.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for _, c := range m.ToolCalls {
			if e := st.Entry(c.ID); e != nil && e.Stub {
				return false
			}
		}
		return true
	}
	return true
}

// refusedWhole returns a refusal of decisions on a run loaded for a drive.
// When a decision names a call loaded as a stub, the refusal describes it
// (how it completed), so the run is loaded whole and the decisions checked
// again to say so; err is returned as it is otherwise.
func refusedWhole(ctx context.Context, s state.Store, run *state.RunState, ds []Decision, err error) (*state.RunState, error) {
	stub := slices.ContainsFunc(ds, func(d Decision) bool {
		e := run.Entry(d.CallID)
		return e != nil && e.Stub
	})
	if !stub {
		return run, err
	}
	whole, lerr := Show(ctx, s, run.ID)
	if lerr != nil {
		return run, err
	}
	whole.Lease = run.Lease
	if _, werr := ApplyDecisions(whole, ds, nil); werr != nil {
		return whole, werr
	}
	return run, err
}

// Header loads a run's header alone (its status, config and usage, no
// rows) when the store can (state.HeaderLoader), else the least of it the
// store can give: what a caller needs before it resumes a run (its
// deadline) then costs the same whatever the run's length.
func Header(ctx context.Context, s state.Store, runID string) (*state.RunState, error) {
	if hl, ok := s.(state.HeaderLoader); ok {
		st, err := hl.LoadHeader(ctx, runID)
		if err != nil {
			return nil, loadError(runID, err)
		}
		return st, nil
	}
	st, _, err := ShowTail(ctx, s, runID, 1)
	return st, err
}

// ShowTail loads a run to display it with only its last n messages,
// provider items and journal entries, plus every journal entry that is not
// completed (pending and unknown calls are always whole), and reports how
// many rows it left out. A store that cannot read a tail (no
// state.TailLoader) is loaded whole and cut here. n <= 0 is Show.
func ShowTail(ctx context.Context, s state.Store, runID string, n int) (*state.RunState, state.Omitted, error) {
	var (
		st  *state.RunState
		om  state.Omitted
		err error
	)
	if tl, ok := s.(state.TailLoader); ok && n > 0 {
		st, om, err = tl.LoadTail(ctx, runID, n)
	} else {
		st, err = s.Load(ctx, runID)
		if err == nil && n > 0 {
			om = cutTail(st, n)
		}
	}
	if err != nil {
		return nil, om, loadError(runID, err)
	}
	return st, om, nil
}

// cutTail keeps what state.TailLoader would have loaded of a whole run.
func cutTail(st *state.RunState, n int) state.Omitted {
	om := state.Omitted{}
	if k := len(st.Messages) - n; k > 0 {
		st.Messages, om.Messages = st.Messages[k:], k
	}
	if k := len(st.ProviderItems) - n; k > 0 {
		st.ProviderItems, om.ProviderItems = st.ProviderItems[k:], k
	}
	if k := len(st.Journal) - n; k > 0 {
		kept := make([]state.JournalEntry, 0, n)
		for i, e := range st.Journal {
			if i >= k || e.Stage != state.StageCompleted {
				kept = append(kept, e)
			}
		}
		om.Journal = len(st.Journal) - len(kept)
		st.Journal = kept
	}
	return om
}

// ListPage is one page of a run listing: the runs, and when more match,
// the cursor that continues after the last of them.
type ListPage struct {
	Runs []state.Summary
	// Next is the token to pass as the next page's cursor; empty on the
	// last page.
	Next string
}

// ListRuns returns the runs f matches, newest first: at most f.Limit (0:
// all), starting after the cursor token after (empty: from the newest).
// It asks the store for one run more than the limit to know whether
// another page exists. A token ListRuns did not make is a usage refusal.
func ListRuns(ctx context.Context, s state.Store, f state.Filter, after string) (ListPage, error) {
	var page ListPage
	if after != "" {
		c, err := state.ParseCursor(after)
		if err != nil {
			return page, &Error{Code: CodeUsage, Refusal: true, Message: err.Error() + " (pass the cursor exactly as it was printed)", Err: err}
		}
		f.After = &c
	}
	limit := f.Limit
	if limit > 0 {
		f.Limit = limit + 1
	}
	runs, err := s.List(ctx, f)
	if err != nil {
		return page, &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
	}
	if limit > 0 && len(runs) > limit {
		runs = runs[:limit]
		page.Next = state.CursorOf(runs[limit-1]).String()
	}
	if runs == nil {
		runs = []state.Summary{}
	}
	page.Runs = runs
	return page, nil
}

// Prune deletes the runs f matches that no executor holds, with their
// files; held runs are reported and kept whole.
func Prune(ctx context.Context, s state.Store, f state.Filter) (state.PruneReport, error) {
	rep, err := s.Prune(ctx, f)
	if err != nil {
		return rep, &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
	}
	return rep, nil
}

package runevents

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// Window is how many of a run's newest rows a Follower reads when the run
// has moved on; a read that finds it missed more reads the whole run once.
const Window = 64

// Loader reads a run with its newest n rows (n 0: the whole run), as
// engine.ShowTail does; a Follower reads through it and imports no store.
type Loader func(ctx context.Context, n int) (*state.RunState, state.Omitted, error)

// Follower derives a run's events from successive reads of the run in the
// store: a process that follows a run another process drives (nexa runs
// watch, nexa serve's webhooks) sees its steps in the journal and the
// provider items, not as the driver's live events. It remembers what it has
// reported of each call, so a step is reported once however the reads fall.
//
// The events are the stream's (same types and fields); what the store does
// not keep is left out: model.request, model.retry, run.started and
// run.resumed, the duration of a model reply, and the duration of a call
// whose end is not recorded. Times are when the store says each step
// happened. Seq is left 0 for the renderer to number.
type Follower struct {
	// Redact replaces secret values in texts and arguments; nil
	// replaces none.
	Redact func(string) string

	baseTurn int // provider requests when the follow began
	items    int // provider items seen
	journal  int // journal entries counted
	calls    map[string]seenCall
}

// seenCall is what a Follower has reported of one call.
type seenCall struct {
	pending, decided, started, completed bool
	// asked and answered count the input rounds reported.
	asked, answered int
}

// timed is an event with the time it happened, for ordering a read's
// events before their times are rendered.
type timed struct {
	at time.Time
	ev Event
}

// FromStart is a Follower of a run from its first step: every step the
// run has taken is news to it (a run created since the follower's owner
// last looked).
func FromStart(redact func(string) string) *Follower {
	return &Follower{Redact: redact, calls: map[string]seenCall{}}
}

// Begin starts following st from where it stands, read with Window rows
// (om what that read left out): what it did before is history, not news.
// It returns the events of what is under way: calls waiting for a person
// and calls running.
func Begin(st *state.RunState, om state.Omitted, redact func(string) string) (*Follower, []Event) {
	f := &Follower{Redact: redact, calls: map[string]seenCall{}}
	f.baseTurn = st.Usage.ProviderRequests
	f.items = om.ProviderItems + len(st.ProviderItems)
	f.journal = om.Journal + len(st.Journal)
	var evs []timed
	for _, e := range st.Journal {
		if e.Stage == state.StageCompleted {
			continue // done before the follow began
		}
		seen := seenCall{decided: e.Decision != nil, asked: len(e.Inputs), answered: len(e.Inputs)}
		if needsPerson(e) && e.Decision == nil {
			evs = append(evs, f.pending(st.ID, e))
			seen.pending = true
		}
		if e.AwaitingInput() {
			evs = append(evs, f.inputRequired(st.ID, e, e.Inputs[len(e.Inputs)-1]))
			seen.answered--
		}
		if e.Stage == state.StageStarted {
			evs = append(evs, f.started(st.ID, e))
			seen.started = true
		}
		f.calls[e.CallID] = seen
	}
	return f, rendered(evs)
}

// Read reads what changed in the run since the last read and returns the
// run and the events of its new steps, in the order they happened (a reply
// before the calls it asked for). It reads the newest Window rows; when
// they do not reach back to what was last seen, it reads the whole run.
func (f *Follower) Read(ctx context.Context, load Loader) (*state.RunState, []Event, error) {
	st, om, err := load(ctx, Window)
	if err != nil {
		return nil, nil, err
	}
	if !f.covers(st, om) {
		if st, om, err = load(ctx, 0); err != nil {
			return nil, nil, err
		}
	}
	return st, f.Next(st, om), nil
}

// covers reports whether a tail read holds every row added since the last
// read: the new provider items, the new journal entries, and every call
// that was under way (an entry that completed is not kept in a tail if
// newer ones push it out).
func (f *Follower) covers(st *state.RunState, om state.Omitted) bool {
	if om.ProviderItems > f.items {
		return false
	}
	added := om.Journal + len(st.Journal) - f.journal
	loaded, present := 0, map[string]bool{}
	for _, e := range st.Journal {
		present[e.CallID] = true
		if _, known := f.calls[e.CallID]; !known && e.Turn > f.baseTurn {
			loaded++
		}
	}
	if loaded < added {
		return false
	}
	for id, c := range f.calls {
		if !c.completed && !present[id] {
			return false
		}
	}
	return true
}

// Next is the one derivation of a run's events from the store: given the
// run as just read (om: the rows the read left out, which must not include
// any row added since the previous read; Read sees to it), it returns the
// events of every step since the previous read, in the order they happened.
func (f *Follower) Next(st *state.RunState, om state.Omitted) []Event {
	var out []timed
	for _, it := range st.ProviderItems {
		if it.Seq < f.items {
			continue
		}
		calls := 0
		for _, e := range st.Journal {
			if e.Turn == it.Seq+1 {
				calls++
			}
		}
		u := it.Usage
		out = append(out, timed{it.CreatedAt, Event{Type: ModelReply, RunID: st.ID, Turn: Int(it.Seq + 1),
			ToolCalls: Int(calls), Usage: UsageOf(&u)}})
	}
	f.items = om.ProviderItems + len(st.ProviderItems)
	f.journal = om.Journal + len(st.Journal)
	for _, e := range st.Journal {
		prev, known := f.calls[e.CallID]
		if !known && e.Turn <= f.baseTurn {
			continue // completed before the follow began
		}
		var now seenCall
		out, now = f.step(out, st.ID, prev, e)
		f.calls[e.CallID] = now
	}
	// Steps found in one read are ordered by when they happened; the
	// sort is stable, so steps of one instant keep the order above.
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return rendered(out)
}

// step derives what happened to one call since prev, appending its events
// to out, and returns what has now been reported of it.
func (f *Follower) step(out []timed, runID string, prev seenCall, e state.JournalEntry) ([]timed, seenCall) {
	if !prev.pending && !prev.decided && needsPerson(e) {
		out = append(out, f.pending(runID, e))
		prev.pending = true
	}
	if !prev.decided && (e.Decision != nil || e.Outcome == "expired") {
		out = append(out, f.decided(runID, e))
		prev.decided = true
	}
	if !prev.started && e.StartedAt != nil {
		out = append(out, f.started(runID, e))
		prev.started = true
	}
	for ; prev.asked < len(e.Inputs); prev.asked++ {
		out = append(out, f.inputRequired(runID, e, e.Inputs[prev.asked]))
	}
	for ; prev.answered < len(e.Inputs) && e.Inputs[prev.answered].RespondedAt != nil; prev.answered++ {
		in := e.Inputs[prev.answered]
		out = append(out, timed{*in.RespondedAt, Event{Type: CallResponded, RunID: runID, CallID: e.CallID, Tool: e.Tool, RespondedBy: f.text(in.RespondedBy)}})
	}
	if !prev.completed && e.Stage == state.StageCompleted {
		if ev, ok := f.completed(runID, e); ok {
			out = append(out, ev)
		}
		prev.completed = true
	}
	return out, prev
}

// Finish returns the events of a run that stopped (st.Status other than
// running): each call left started has an unknown outcome (its driver
// gave up on it), and run.finished reports the status. A call reported
// here is not reported again when the run is followed on.
func (f *Follower) Finish(st *state.RunState) []Event {
	var evs []Event
	if st.Status != state.StatusRunning {
		for _, e := range st.Journal {
			seen, known := f.calls[e.CallID]
			if e.Stage != state.StageStarted || (!known && e.Turn <= f.baseTurn) || seen.completed {
				continue
			}
			evs = append(evs, Event{Type: ToolCompleted, RunID: st.ID, Time: Stamp(st.UpdatedAt), CallID: e.CallID, Tool: e.Tool, Outcome: "unknown"})
			seen.started, seen.completed = true, true
			f.calls[e.CallID] = seen
		}
	}
	return append(evs, Finished(st))
}

// Finished is the run.finished event of st: its status as saved, at its
// last write.
func Finished(st *state.RunState) Event {
	ev := Event{Type: RunFinished, RunID: st.ID, Time: Stamp(st.UpdatedAt), Status: string(st.Status)}
	if st.Error != nil {
		ev.Error = st.Error.Message
	}
	return ev
}

// Forget drops what the follower remembers of calls that completed, once
// the run has stopped (st): their steps are all reported, and a run
// followed for long (nexa serve follows every open run) should not pile
// them up. Calls of later replies are still news.
func (f *Follower) Forget(st *state.RunState) {
	// A call is forgotten with its reply's turn: an entry of a turn
	// at or before baseTurn that the follower does not know is history.
	for _, e := range st.Journal {
		if c, ok := f.calls[e.CallID]; ok && c.completed && e.Turn > 0 {
			f.baseTurn = max(f.baseTurn, e.Turn)
			delete(f.calls, e.CallID)
		}
	}
}

// needsPerson reports whether a call waits, or waited, for a person's
// decision (not one a policy rule made when the call was journaled).
func needsPerson(e state.JournalEntry) bool {
	return e.NeedsApproval && !(e.Decision != nil && strings.HasPrefix(e.DecidedBy, "policy:"))
}

func (f *Follower) text(s string) string {
	if f.Redact == nil {
		return s
	}
	return f.Redact(s)
}

func (f *Follower) pending(runID string, e state.JournalEntry) timed {
	ev := Event{Type: CallPending, RunID: runID, CallID: e.CallID, Tool: e.Tool, Risk: e.Risk,
		Arguments: Arguments(f.Redact, e.Arguments)}
	if e.ExpiresAt != nil {
		ev.ExpiresAt = Stamp(*e.ExpiresAt)
	}
	return timed{e.CreatedAt, ev}
}

// decided reports the decision recorded on e: a person's, a policy
// rule's, or an expiry (nobody decided in time).
func (f *Follower) decided(runID string, e state.JournalEntry) timed {
	ev := Event{Type: CallDecided, RunID: runID, CallID: e.CallID, Tool: e.Tool,
		DecidedBy: f.text(e.DecidedBy), Reason: f.text(e.Reason)}
	at := e.CreatedAt
	switch {
	case e.Outcome == "expired":
		ev.Decision = "expired"
		if e.CompletedAt != nil {
			at = *e.CompletedAt
		}
	case *e.Decision:
		ev.Decision = "approved"
	default:
		ev.Decision = "denied"
	}
	if e.DecidedAt != nil {
		at = *e.DecidedAt
	}
	return timed{at, ev}
}

func (f *Follower) inputRequired(runID string, e state.JournalEntry, in state.InputRound) timed {
	return timed{in.AskedAt, InputRequested(f.Redact, runID, e.CallID, e.Tool, &in)}
}

func (f *Follower) started(runID string, e state.JournalEntry) timed {
	at := e.CreatedAt
	if e.StartedAt != nil {
		at = *e.StartedAt
	}
	return timed{at, Event{Type: ToolStarted, RunID: runID, CallID: e.CallID, Tool: e.Tool}}
}

// completed reports a completed call with the stream's outcomes: denied
// for a call a person or rule refused, else ok or error (a call that ran,
// could not be started, was refused by the checks, or whose outcome a
// person recorded). An expired call has no tool.completed (its
// call.decided says it), as in the stream.
func (f *Follower) completed(runID string, e state.JournalEntry) (timed, bool) {
	ev := Event{Type: ToolCompleted, RunID: runID, CallID: e.CallID, Tool: e.Tool}
	at := e.CreatedAt
	if e.CompletedAt != nil {
		at = *e.CompletedAt
	}
	switch e.Outcome {
	case "expired":
		return timed{}, false
	case "denied":
		ev.Outcome, ev.DurationMS = "denied", MS(0)
	case "refused":
		ev.Outcome, ev.DurationMS = "error", MS(0)
	default:
		ev.Outcome = map[bool]string{true: "ok", false: "error"}[e.Success]
		if e.Outcome != "resolved" && e.StartedAt != nil && e.CompletedAt != nil {
			ev.DurationMS = MS(e.CompletedAt.Sub(*e.StartedAt))
		}
	}
	return timed{at, ev}, true
}

func rendered(ts []timed) []Event {
	evs := make([]Event, len(ts))
	for i, t := range ts {
		t.ev.Time = Stamp(t.at)
		evs[i] = t.ev
	}
	return evs
}

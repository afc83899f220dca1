package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/state"
)

// defaultWatchInterval is how often runs watch reads a run's header: short
// enough that a person sees a step as it happens, and one small read, so
// that many watchers of a PostgreSQL store cost it little.
const defaultWatchInterval = 500 * time.Millisecond

// watchWindow is how many of the newest rows a poll reads when the run has
// moved on; a poll that finds it missed more reads the whole run once.
const watchWindow = 64

func newRunsWatchCmd(e *env, open storeOpener, hints hintFlagger) *cobra.Command {
	var output string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch RUN_ID",
		Short: "Follow a run another process drives, and exit as nexa agent would when it stops",
		Long: `Follow a run that another process drives (nexa agent, nexa serve --execute,
on this machine or, with a PostgreSQL store, on another one). It reads the
store only: every --interval it reads the run's header, and when the run has
moved on it prints one line per step (tool started, tool completed with its
outcome, model reply, call waiting for a decision, call decided).

When the run stops it prints the run's final state and exits with the code
nexa agent would have given: 0 completed, 1 failed, 3 waiting for a decision,
4 unknown outcome, 5 timed out, 6 budget exhausted, 130 interrupted. A run
that has already stopped is printed and the command exits at once. A run left
running by a process that ended without saving where it stopped exits 1.
Ctrl-C stops watching (exit 130); the run is not touched.

--output jsonl prints one JSON object a line, each with type, run_id, seq and
time, and as the last line the run as nexa agent --output json prints it.`,
		Example: `  nexa runs watch run_01J…
  nexa runs watch run_01J… --output jsonl --store postgres://…`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			jsonl := false
			switch output {
			case "text":
			case "jsonl":
				jsonl = true
			default:
				return usageErrorf("--output takes text or jsonl, not %q", output)
			}
			err := runWatch(e, open, hints, args[0], jsonl, interval)
			var xe *exitError
			if jsonl && errors.As(err, &xe) && !xe.printed && xe.msg != "" {
				// A reader of the stream gets an object on failure too.
				writeJSONLine(e.stdout, jsonErrorObject{Error: jsonError{Code: xe.jsonCode(), Message: xe.msg}})
				xe.jsonDone = true
			}
			return err
		},
	}
	cmd.Flags().StringVar(&output, "output", "text", "text (lines for people) or jsonl (one JSON object a line)")
	cmd.Flags().DurationVar(&interval, "interval", defaultWatchInterval, "how often to read the run's header")
	return cmd
}

// runWatch opens the store and follows run id until it stops or a signal
// ends the watch.
func runWatch(e *env, open storeOpener, hints hintFlagger, id string, jsonl bool, interval time.Duration) error {
	if interval < 10*time.Millisecond {
		return usageErrorf("--interval takes a duration of at least 10ms, not %s", interval)
	}
	if err := checkRunID(id); err != nil {
		return err
	}
	s, err := open()
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	w := &watcher{
		store: s, id: id, out: e.stdout, errw: e.stderr, getenv: e.getenv, jsonl: jsonl, hints: hints,
		now: testClock(),
		next: func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				return nil
			}
		},
	}
	code, err := w.run(ctx)
	if err != nil {
		return err
	}
	if code != ExitOK {
		return exitWith(code)
	}
	return nil
}

// watcher follows one run through the store alone: the header each poll,
// the newest rows when the revision moved. It keeps what it has shown of
// each call, so a step is printed once however the polls fall.
type watcher struct {
	store  session.Store
	id     string
	out    io.Writer
	errw   io.Writer
	getenv func(string) string
	jsonl  bool
	hints  hintFlagger
	now    func() time.Time
	// next waits until the next poll is due; it returns the context's
	// error when the watch is to end. Tests make it change the run.
	next func(context.Context) error

	seq      int          // events printed
	batch    []watchEvent // events of one poll, printed in time order
	batching bool
	rev      int64 // revision last read in full
	baseTurn int   // provider requests when the watch began
	items    int   // provider items seen
	journal  int   // journal entries counted
	calls    map[string]seenCall
}

// seenCall is what the watch has printed of one call.
type seenCall struct {
	pending, decided, started, completed bool
}

// watchEvent is one line of runs watch --output jsonl: the types and common
// fields of the event stream of nexa agent --output jsonl (type, run_id,
// seq, time), so that one reader follows both.
type watchEvent struct {
	Type  string    `json:"type"`
	RunID string    `json:"run_id"`
	Seq   int       `json:"seq"`
	Time  time.Time `json:"time"`

	CallID     string          `json:"call_id,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Turn       int             `json:"turn,omitempty"`
	Calls      *int            `json:"calls,omitempty"`
	Usage      *state.Usage    `json:"usage,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	Success    *bool           `json:"success,omitempty"`
	DurationMS *int64          `json:"duration_ms,omitempty"`
	Approved   *bool           `json:"approved,omitempty"`
	By         string          `json:"by,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Status     string          `json:"status,omitempty"`
	ExitCode   *int            `json:"exit_code,omitempty"`
	Error      *state.RunError `json:"error,omitempty"`

	text string // the line for people
}

// run follows the run until it stops and returns the exit code nexa agent
// would have given; an error is a run that cannot be read, or the end of
// the watch by ctx (exit 130, the run untouched).
func (w *watcher) run(ctx context.Context) (int, error) {
	st, om, err := w.load(ctx, watchWindow)
	if err != nil {
		return 0, err
	}
	if !w.driven(st) {
		return w.finish(ctx, st)
	}
	w.begin(st, om)
	for {
		if err := w.next(ctx); err != nil {
			return 0, w.interrupted(ctx)
		}
		h, err := engine.Header(ctx, w.store, w.id)
		if err != nil {
			if ctx.Err() != nil {
				return 0, w.interrupted(ctx)
			}
			return 0, w.loadError(err)
		}
		if h.Revision == w.rev && w.driven(h) {
			continue
		}
		if st, err = w.advance(ctx); err != nil {
			if ctx.Err() != nil {
				return 0, w.interrupted(ctx)
			}
			return 0, err
		}
		if !w.driven(st) {
			return w.finish(ctx, st)
		}
	}
}

// driven reports whether the run is going on: running, and held by a live
// process. A run is created held and its stopping status is saved before
// its lease is given up, so running without a holder is a process that
// ended without saving where it stopped.
func (w *watcher) driven(st *state.RunState) bool {
	return st.Status == state.StatusRunning && st.Holder != nil
}

// load reads the run with its newest n rows (n 0: whole).
func (w *watcher) load(ctx context.Context, n int) (*state.RunState, state.Omitted, error) {
	st, om, err := engine.ShowTail(ctx, w.store, w.id, n)
	if err != nil {
		return nil, om, w.loadError(err)
	}
	return st, om, nil
}

func (w *watcher) loadError(err error) error {
	if re, ok := engine.AsError(err); ok && re.Code == engine.CodeRunNotFound {
		return runNotFound(w.store, w.id)
	}
	return storeFailure(err)
}

// interrupted ends the watch on a signal, saying so on stderr.
func (w *watcher) interrupted(context.Context) error {
	fmt.Fprintf(w.errw, "nexa: stopped watching run %s; the run was not touched\n", w.id)
	return &exitError{code: ExitInterrupted, printed: true}
}

// begin records where the run stands when the watch starts, and shows
// what is under way: calls running or waiting for a person. What the run
// did before is in nexa runs show.
func (w *watcher) begin(st *state.RunState, om state.Omitted) {
	w.rev = st.Revision
	w.baseTurn = st.Usage.ProviderRequests
	w.items = om.ProviderItems + len(st.ProviderItems)
	w.journal = om.Journal + len(st.Journal)
	w.calls = map[string]seenCall{}
	if !w.jsonl {
		who := ""
		if st.Holder != nil {
			who = ", driven by " + st.Holder.Owner
		}
		w.line(w.now(), fmt.Sprintf("watching run %s (agent %s): %s at revision %d%s", st.ID, st.Config.Agent, st.Status, st.Revision, who))
	}
	for _, e := range st.Journal {
		if e.Stage == state.StageCompleted {
			continue // done before the watch; not a step to follow
		}
		seen := seenCall{decided: e.Decision != nil}
		if needsPerson(e) && e.Decision == nil {
			w.emit(w.pendingEvent(e))
			seen.pending = true
		}
		if e.Stage == state.StageStarted {
			w.emit(w.startedEvent(e))
			seen.started = true
		}
		w.calls[e.CallID] = seen
	}
}

// advance reads what changed since the last read and prints it. It reads
// the newest rows; when they do not reach back to what was last seen, it
// reads the whole run once.
func (w *watcher) advance(ctx context.Context) (*state.RunState, error) {
	st, om, err := w.load(ctx, watchWindow)
	if err != nil {
		return nil, err
	}
	if !w.covers(st, om) {
		if st, om, err = w.load(ctx, 0); err != nil {
			return nil, err
		}
	}
	w.rev = st.Revision
	// One poll may find several steps: they are printed in the order
	// they happened (a reply before the calls it asked for).
	w.batching = true
	defer w.flush()
	for _, it := range st.ProviderItems {
		if it.Seq < w.items {
			continue
		}
		calls := 0
		for _, e := range st.Journal {
			if e.Turn == it.Seq+1 {
				calls++
			}
		}
		u := it.Usage
		text := "model replied: final answer"
		switch {
		case calls == 1:
			text = "model replied: 1 tool call"
		case calls > 1:
			text = fmt.Sprintf("model replied: %d tool calls", calls)
		}
		w.emit(watchEvent{Type: "model.reply", Time: it.CreatedAt, Turn: it.Seq + 1, Calls: &calls, Usage: &u,
			text: fmt.Sprintf("%s (request %d, %d tokens)", text, it.Seq+1, u.TotalTokens)})
	}
	w.items = om.ProviderItems + len(st.ProviderItems)
	w.journal = om.Journal + len(st.Journal)
	for _, e := range st.Journal {
		prev, known := w.calls[e.CallID]
		if !known && e.Turn <= w.baseTurn {
			continue // completed before the watch began
		}
		w.calls[e.CallID] = w.step(prev, e)
	}
	return st, nil
}

// covers reports whether a tail read holds every row added since the last
// read: the new provider items, the new journal entries, and every call
// that was under way (an entry that completed is not kept in a tail if
// newer ones push it out).
func (w *watcher) covers(st *state.RunState, om state.Omitted) bool {
	if om.ProviderItems > w.items {
		return false
	}
	added := om.Journal + len(st.Journal) - w.journal
	loaded, present := 0, map[string]bool{}
	for _, e := range st.Journal {
		present[e.CallID] = true
		if _, known := w.calls[e.CallID]; !known && e.Turn > w.baseTurn {
			loaded++
		}
	}
	if loaded < added {
		return false
	}
	for id, c := range w.calls {
		if !c.completed && !present[id] {
			return false
		}
	}
	return true
}

// step prints what happened to one call since prev and returns what has
// now been shown of it.
func (w *watcher) step(prev seenCall, e state.JournalEntry) seenCall {
	if !prev.pending && !prev.decided && needsPerson(e) {
		w.emit(w.pendingEvent(e))
		prev.pending = true
	}
	if !prev.decided && e.Decision != nil {
		t := e.CreatedAt
		if e.DecidedAt != nil {
			t = *e.DecidedAt
		}
		ok := *e.Decision
		verb := map[bool]string{true: "approved", false: "denied"}[ok]
		text := fmt.Sprintf("call %s (%s) %s", e.CallID, e.Tool, verb)
		if e.DecidedBy != "" {
			text += " by " + e.DecidedBy
		}
		if e.Reason != "" {
			text += ": " + e.Reason
		}
		w.emit(watchEvent{Type: "call.decided", Time: t, CallID: e.CallID, Tool: e.Tool, Approved: &ok, By: e.DecidedBy, Reason: e.Reason, text: text})
		prev.decided = true
	}
	if !prev.started && e.StartedAt != nil {
		w.emit(w.startedEvent(e))
		prev.started = true
	}
	if !prev.completed && e.Stage == state.StageCompleted {
		w.emit(completedEvent(e))
		prev.completed = true
	}
	return prev
}

// needsPerson reports whether a call waits, or waited, for a person's
// decision (not one a policy rule made when the call was journaled).
func needsPerson(e state.JournalEntry) bool {
	return e.NeedsApproval && !(e.Decision != nil && strings.HasPrefix(e.DecidedBy, "policy:"))
}

func (w *watcher) pendingEvent(e state.JournalEntry) watchEvent {
	return watchEvent{Type: "call.pending", Time: e.CreatedAt, CallID: e.CallID, Tool: e.Tool,
		text: fmt.Sprintf("call %s (%s) waits for a decision %s", e.CallID, e.Tool, compactJSON(e.Arguments, 200))}
}

func (w *watcher) startedEvent(e state.JournalEntry) watchEvent {
	t := e.CreatedAt
	if e.StartedAt != nil {
		t = *e.StartedAt
	}
	return watchEvent{Type: "tool.started", Time: t, CallID: e.CallID, Tool: e.Tool,
		text: fmt.Sprintf("tool %s (%s) started", e.Tool, e.CallID)}
}

// completedEvent reports a completed call with the outcome words of the
// progress lines of nexa agent: ok or error for a call that ran, else how
// it completed (denied, expired, refused, resolved, reused).
func completedEvent(e state.JournalEntry) watchEvent {
	outcome := e.Outcome
	switch outcome {
	case "executed", "not_executed", "":
		outcome = map[bool]string{true: "ok", false: "error"}[e.Success]
	}
	ok := e.Success
	ev := watchEvent{Type: "tool.completed", CallID: e.CallID, Tool: e.Tool, Outcome: outcome, Success: &ok, Time: e.CreatedAt}
	if e.CompletedAt != nil {
		ev.Time = *e.CompletedAt
	}
	ev.text = fmt.Sprintf("tool %s (%s): %s", e.Tool, e.CallID, outcome)
	if e.ResolvedBy != "" {
		ev.By = e.ResolvedBy
		ev.text += " by " + e.ResolvedBy
	}
	if e.StartedAt != nil && e.CompletedAt != nil {
		ms := e.CompletedAt.Sub(*e.StartedAt).Milliseconds()
		ev.DurationMS = &ms
		ev.text += " (" + seconds(e.CompletedAt.Sub(*e.StartedAt)) + ")"
	}
	return ev
}

// finish prints a stopped run: calls left without an outcome, the
// run.finished event, and the run as nexa agent prints it; it returns the
// exit code nexa agent would have given.
func (w *watcher) finish(ctx context.Context, seen *state.RunState) (int, error) {
	// The whole run, for the lists of the final object (denied calls
	// included), read once; if another process took the run up again
	// meanwhile, the stop the watch saw is what it reports.
	st, _, err := w.load(ctx, 0)
	if err != nil {
		if ctx.Err() != nil {
			return 0, w.interrupted(ctx)
		}
		return 0, err
	}
	if w.driven(st) {
		st = seen
	}
	engine.ExpireApprovals(st, w.now())
	code := exitCodeFor(st.Status)
	runErr := st.Error
	text := fmt.Sprintf("run %s: %s", st.ID, st.Status)
	if st.Status == state.StatusRunning {
		// Nobody drives it: the process that did ended (killed,
		// crashed) before it could save where it stopped.
		code = ExitFailed
		runErr = &state.RunError{Code: engine.CodeInterrupted, Message: "the run is marked running but no process drives it: the process that drove it ended without saving where it stopped; resume it to continue (a call that was running is an unknown outcome)"}
		text += ", but no process drives it"
	}
	if w.calls != nil {
		for _, e := range st.Journal {
			if e.Stage == state.StageStarted && st.Status != state.StatusRunning {
				w.emit(watchEvent{Type: "tool.completed", Time: st.UpdatedAt, CallID: e.CallID, Tool: e.Tool, Outcome: "unknown",
					text: fmt.Sprintf("tool %s (%s): unknown", e.Tool, e.CallID)})
			}
		}
	}
	if runErr != nil {
		text += " (" + runErr.Code + ": " + runErr.Message + ")"
	}
	t := st.UpdatedAt
	w.emit(watchEvent{Type: "run.finished", Time: t, Status: string(st.Status), ExitCode: &code, Error: runErr, Usage: &st.Usage, text: text})
	res := resultOf(st, nil, "", w.hints(st))
	if st.Status == state.StatusRunning {
		res.Error = runErr
	}
	if w.jsonl {
		writeJSONLine(w.out, res)
		return code, nil
	}
	fmt.Fprintln(w.out)
	printTextResult(w.out, res)
	printNextSteps(&env{stderr: w.errw, getenv: w.getenv}, res)
	return code, nil
}

// flush prints the events of a poll in the order of their times.
func (w *watcher) flush() {
	batch := w.batch
	w.batch, w.batching = nil, false
	sort.SliceStable(batch, func(i, j int) bool { return batch[i].Time.Before(batch[j].Time) })
	for _, ev := range batch {
		w.emit(ev)
	}
}

// emit numbers an event and prints it (during a poll, once the poll has
// found all its events).
func (w *watcher) emit(ev watchEvent) {
	if w.batching {
		w.batch = append(w.batch, ev)
		return
	}
	w.seq++
	ev.Seq, ev.RunID = w.seq, w.id
	ev.Time = ev.Time.UTC()
	if w.jsonl {
		writeJSONLine(w.out, ev)
		return
	}
	w.line(ev.Time, ev.text)
}

// line prints one line for people, timestamped as the progress lines of
// nexa agent are off a terminal.
func (w *watcher) line(t time.Time, s string) {
	fmt.Fprintf(w.out, "%s %s\n", t.UTC().Format(time.RFC3339), s)
}

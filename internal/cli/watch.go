package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/runevents"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/state"
)

// defaultWatchInterval is how often runs watch reads a run's header: short
// enough that a person sees a step as it happens, and one small read, so
// that many watchers of a PostgreSQL store cost it little.
const defaultWatchInterval = 500 * time.Millisecond

func newRunsWatchCmd(e *env, open storeOpener, hints hintFlagger) *cobra.Command {
	var output string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch RUN_ID",
		Short: "Follow a run another process drives, and exit as nexa agent would when it stops",
		Long: `Follow a run that another process drives (nexa agent, nexa serve --execute,
on this machine or, with a PostgreSQL store, on another one). It reads the
store only: every --interval it reads the run's header, and when the run has
moved on it prints one line per step it finds there (model reply, call waiting
for a decision, call decided, tool started, tool completed with its outcome).

When the run stops it prints the run's final state and exits with the code
nexa agent would have given: 0 completed, 1 failed, 3 waiting for a decision,
4 unknown outcome, 5 timed out, 6 budget exhausted, 130 interrupted. A run
that has already stopped is printed and the command exits at once. A run left
running by a process that ended without saving where it stopped exits 1.
Ctrl-C stops watching (exit 130); the run is not touched.

--output jsonl prints the event lines of nexa agent --output jsonl, each with
type, run_id, seq and time (the steps the store keeps; see the events
reference), and as the last line the run as nexa agent --output json prints
it.`,
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
// and, when the revision moved, the run's new steps as a
// runevents.Follower derives them (the same derivation as nexa serve's
// webhooks), printed as the event lines of nexa agent --output jsonl or as
// lines for people.
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

	seq    int // events printed
	rev    int64
	follow *runevents.Follower // nil until the watch has begun
}

// run follows the run until it stops and returns the exit code nexa agent
// would have given; an error is a run that cannot be read, or the end of
// the watch by ctx (exit 130, the run untouched).
func (w *watcher) run(ctx context.Context) (int, error) {
	st, om, err := w.load(ctx, runevents.Window)
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
		st, evs, err := w.follow.Read(ctx, w.load)
		if err != nil {
			if ctx.Err() != nil {
				return 0, w.interrupted(ctx)
			}
			return 0, err
		}
		w.rev = st.Revision
		for _, ev := range evs {
			w.emit(ev, describe(ev))
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
	if !w.jsonl {
		who := ""
		if st.Holder != nil {
			who = ", driven by " + st.Holder.Owner
		}
		w.line(w.now(), fmt.Sprintf("watching run %s (agent %s): %s at revision %d%s", st.ID, st.Config.Agent, st.Status, st.Revision, who))
	}
	var evs []runevents.Event
	w.follow, evs = runevents.Begin(st, om, nil)
	for _, ev := range evs {
		w.emit(ev, describe(ev))
	}
}

// describe is the line for people of an event of the watch, in the words
// of the progress lines of nexa agent.
func describe(ev runevents.Event) string {
	switch ev.Type {
	case runevents.ModelReply:
		text := "model replied: final answer"
		switch n := *ev.ToolCalls; {
		case n == 1:
			text = "model replied: 1 tool call"
		case n > 1:
			text = fmt.Sprintf("model replied: %d tool calls", n)
		}
		return fmt.Sprintf("%s (request %d, %d tokens)", text, *ev.Turn, ev.Usage.TotalTokens)
	case runevents.CallPending:
		return fmt.Sprintf("call %s (%s) waits for a decision %s", ev.CallID, ev.Tool, compactJSON(ev.Arguments, 200))
	case runevents.CallDecided:
		text := fmt.Sprintf("call %s (%s) %s", ev.CallID, ev.Tool, ev.Decision)
		if ev.DecidedBy != "" {
			text += " by " + ev.DecidedBy
		}
		if ev.Reason != "" {
			text += ": " + ev.Reason
		}
		return text
	case runevents.ToolStarted:
		return fmt.Sprintf("tool %s (%s) started", ev.Tool, ev.CallID)
	case runevents.ToolCompleted:
		text := fmt.Sprintf("tool %s (%s): %s", ev.Tool, ev.CallID, ev.Outcome)
		if ev.DurationMS != nil && ev.Outcome != "denied" {
			text += " (" + seconds(time.Duration(*ev.DurationMS)*time.Millisecond) + ")"
		}
		return text
	}
	return ev.Type
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
	if runErr != nil {
		text += " (" + runErr.Code + ": " + runErr.Message + ")"
	}
	// A run that had stopped when the watch began has only its stop
	// to report.
	evs := []runevents.Event{runevents.Finished(st)}
	if w.follow != nil {
		evs = w.follow.Finish(st)
	}
	for _, ev := range evs {
		if ev.Type == runevents.RunFinished {
			w.emit(ev, text)
			continue
		}
		w.emit(ev, describe(ev))
	}
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

// emit numbers an event and prints it: as its JSON line, or as text for
// people.
func (w *watcher) emit(ev runevents.Event, text string) {
	w.seq++
	ev.Seq, ev.RunID = w.seq, w.id
	if w.jsonl {
		writeJSONLine(w.out, ev)
		return
	}
	t, err := time.Parse(runevents.TimeLayout, ev.Time)
	if err != nil {
		t = w.now()
	}
	w.line(t, text)
}

// line prints one line for people, timestamped as the progress lines of
// nexa agent are off a terminal.
func (w *watcher) line(t time.Time, s string) {
	fmt.Fprintf(w.out, "%s %s\n", t.UTC().Format(time.RFC3339), s)
}

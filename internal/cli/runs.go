package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/resumecmd"
	"github.com/nexa-run/nexa/internal/session"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/duration"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/shellquote"
	"github.com/nexa-run/nexa/internal/state"
)

func newRunsCmd(e *env) *cobra.Command {
	var storeFlag string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, inspect, approve, answer, resolve, prune, export and import runs in the store",
		Long: `Work with the runs in the store (.nexa/runs.sqlite3, --store or NEXA_STORE).

Exit codes: 0 success, 1 operational error (store unreadable), 2 usage or input
error (unknown run or call, decision, answer or resolution refused); nothing is
written on a refusal.`,
	}
	cmd.PersistentFlags().StringVar(&storeFlag, "store", "", "run store: a SQLite file `PATH` or a postgres:// URL (default .nexa/runs.sqlite3, or NEXA_STORE)")
	// openWith opens the store; only import may create it.
	openWith := func(create bool) (session.Store, error) { return openStoreForCommand(e, storeFlag, create) }
	open := func() (session.Store, error) { return openWith(false) }
	// Hints repeat --store when it was given: the run is found there.
	hints := func(st *state.RunState) string { return hintFlags(st, nil, storeFlag) }
	cmd.AddCommand(newRunsListCmd(e, open), newRunsShowCmd(e, open, hints), newRunsApproveCmd(e, open, hints),
		newRunsRespondCmd(e, open, hints), newRunsResolveCmd(e, open, hints), newRunsPruneCmd(e, open),
		newRunsExportCmd(e, open), newRunsImportCmd(e, func() (session.Store, error) { return openWith(true) }))
	cmd.AddCommand(newRunsWatchCmd(e, open, hints))
	return cmd
}

type storeOpener func() (session.Store, error)

// hintFlagger gives the flags that hints to continue a run repeat.
type hintFlagger func(*state.RunState) string

// parseStatus checks a --status value against the known statuses.
func parseStatus(s string) (state.Status, error) {
	if s == "" {
		return "", nil
	}
	st := state.Status(s)
	if !st.Valid() {
		return "", usageErrorf("unknown status %q: use queued, running, waiting_approval, waiting_input, unknown_outcome, interrupted, failed, completed, timed_out or budget_exhausted", s)
	}
	return st, nil
}

// parseStrictBool accepts only true and false: a decision or a success flag
// is never guessed from "yes", "1" or an empty value.
func parseStrictBool(flag, v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, usageErrorf("--%s takes exactly true or false, not %q", flag, v)
}

// defaultListLimit is how many runs `nexa runs list` shows unless told:
// enough for a screen of recent work, few enough that a large store lists
// in milliseconds. --limit 0 lists everything.
const defaultListLimit = 50

func newRunsListCmd(e *env, open storeOpener) *cobra.Command {
	var status, agent, olderThan, after string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first, a page at a time",
		Long: `List runs, newest first (by creation time). At most --limit runs are shown
(default 50; 0 shows all); when more match, the last line (or "next" in the
JSON) gives the --after cursor of the next page. A cursor stays valid while
runs are created, saved or deleted: runs created later sort before it.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := parseStatus(status)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usageErrorf("--limit takes a number of runs, 0 for all, not %d", limit)
			}
			var age time.Duration
			if olderThan != "" {
				if age, err = parseAge(olderThan); err != nil {
					return err
				}
			}
			var page engine.ListPage
			s, err := open()
			var xe *exitError
			switch {
			case errors.As(err, &xe) && xe.errCode == engine.CodeNoStore:
				// No store yet (a fresh checkout, a new CI job): no
				// runs, and nothing is created. A cursor must still
				// be one.
				if after != "" {
					if _, err := state.ParseCursor(after); err != nil {
						return usageErrorf("--after: %v", err)
					}
				}
			case err != nil:
				return err
			default:
				defer s.Close()
				page, err = engine.ListRuns(context.Background(), s, state.Filter{Status: st, Agent: agent, OlderThan: age, Limit: limit}, after)
				if re, ok := engine.AsError(err); ok && re.Code == engine.CodeUsage {
					return usageErrorf("--after: %s", re.Message)
				}
				if err != nil {
					return storeFailure(err) // the store says "list runs: …"
				}
			}
			// One buffer for the whole listing: the table writer writes
			// cell by cell, the terminal gets a few large writes.
			w := bufio.NewWriterSize(e.stdout, 64<<10)
			defer w.Flush()
			if asJSON {
				v := struct {
					Runs []state.Summary `json:"runs"`
					Next *string         `json:"next"`
				}{Runs: page.Runs}
				if v.Runs == nil {
					v.Runs = []state.Summary{}
				}
				if page.Next != "" {
					v.Next = &page.Next
				}
				writeJSON(w, v)
				return nil
			}
			if len(page.Runs) == 0 {
				fmt.Fprintln(w, "no runs")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tAGENT\tFILE\tUPDATED\tREV\tCOST")
			for _, r := range page.Runs {
				cost := "-"
				if r.CostUSD != nil {
					cost = "$" + strconv.FormatFloat(*r.CostUSD, 'f', -1, 64)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Status, r.Agent, r.File, r.UpdatedAt.Local().Format("2006-01-02 15:04:05"), r.Revision, cost)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.Next != "" {
				fmt.Fprintf(w, "more runs: nexa runs list%s --after %s\n", listFlags(c), page.Next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only runs with this status")
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().StringVar(&olderThan, "older-than", "", "only runs not updated for this long (e.g. 72h, 30d); what prune would delete")
	cmd.Flags().IntVar(&limit, "limit", defaultListLimit, "show at most `N` runs (0: all)")
	cmd.Flags().StringVar(&after, "after", "", "continue a listing after this `CURSOR` (printed at the end of the previous page)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// listFlags repeats the flags of this listing, but --after, for the
// command that shows the next page.
func listFlags(c *cobra.Command) string {
	var b strings.Builder
	for _, name := range []string{"store", "status", "agent", "older-than", "limit"} {
		if f := c.Flags().Lookup(name); f != nil && f.Changed {
			b.WriteString(" --" + name + " " + shellquote.Quote(f.Value.String()))
		}
	}
	return b.String()
}

func newRunsShowCmd(e *env, open storeOpener, hints hintFlagger) *cobra.Command {
	var asJSON bool
	var tail int
	cmd := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show one run: status, journal, pending and unknown calls, usage, conversation",
		Long: `Show one run. --tail N shows only the last N messages, provider replies and
journal entries (the store reads only those), and says how many it left out;
pending calls and calls whose outcome is unknown are always shown in full.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if tail < 0 {
				return usageErrorf("--tail takes a number of entries, 0 for all, not %d", tail)
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			st, om, err := showRunTail(s, args[0], tail)
			if err != nil {
				return err
			}
			// A wait that ran out is shown as expired; the next process
			// that holds the run records it (the same entry, from the
			// stored expiry).
			engine.ExpireApprovals(st, testClock()())
			w := bufio.NewWriterSize(e.stdout, 64<<10)
			defer w.Flush()
			if asJSON {
				writeJSON(w, showView(st, hints(st), tailInfo(tail, om)))
				return nil
			}
			printRun(&env{stdout: w, stderr: e.stderr, getenv: e.getenv}, st, hints(st), om)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole run state as JSON")
	cmd.Flags().IntVar(&tail, "tail", 0, "show only the last `N` messages, provider replies and journal entries (0: all); pending and unknown calls always")
	return cmd
}

// showRunTail loads a run for display, with only the tail of its rows when
// n > 0, turning "not found" into a usage error.
func showRunTail(s session.Store, id string, n int) (*state.RunState, state.Omitted, error) {
	st, om, err := engine.ShowTail(context.Background(), s, id, n)
	if re, ok := engine.AsError(err); ok && re.Code == engine.CodeRunNotFound {
		return nil, om, runNotFound(s, id)
	}
	if err != nil {
		return nil, om, storeFailure(err)
	}
	return st, om, nil
}

// tailView is the "tail" object of runs show --json --tail N.
type tailView struct {
	N       int           `json:"n"`
	Omitted state.Omitted `json:"omitted"`
}

func tailInfo(n int, om state.Omitted) *tailView {
	if n <= 0 {
		return nil
	}
	return &tailView{N: n, Omitted: om}
}

// showView is the RunState with the derived lists an operator needs, and
// with --tail what was left out.
func showView(st *state.RunState, flags string, tail *tailView) any {
	res := resultOf(st, nil, "", flags)
	return struct {
		*state.RunState
		PendingCalls  []engine.PendingCall  `json:"pending_calls"`
		PendingInputs []engine.PendingInput `json:"pending_inputs"`
		UnknownCalls  []engine.UnknownCall  `json:"unknown_calls"`
		DeniedCalls   []engine.DeniedCall   `json:"denied_calls"`
		Resume        map[string]string     `json:"resume,omitempty"`
		Tail          *tailView             `json:"tail,omitempty"`
	}{st, res.PendingCalls, res.PendingInputs, res.UnknownCalls, res.DeniedCalls, res.Resume, tail}
}

func printRun(e *env, st *state.RunState, flags string, om state.Omitted) {
	w := e.stdout
	fmt.Fprintf(w, "run       %s\nstatus    %s\nagent     %s (%s)\nrevision  %d\nsource    %s\nprovider  %s %s %s\ncreated   %s\nupdated   %s\n",
		st.ID, st.Status, st.Config.Agent, st.Config.SourceFile, st.Revision, st.Config.SourceHash,
		st.Config.Provider.Kind, st.Config.Provider.Model, st.Config.Provider.BaseURL,
		st.CreatedAt.Local().Format(time.RFC3339), st.UpdatedAt.Local().Format(time.RFC3339))
	if st.Config.Deadline != nil {
		fmt.Fprintf(w, "deadline  %s\n", st.Config.Deadline.Local().Format(time.RFC3339Nano))
	}
	if h := st.Holder; h != nil {
		fmt.Fprintf(w, "held by   %s (lease epoch %d, until %s)\n", h.Owner, h.Epoch, h.Expires.Local().Format(time.RFC3339Nano))
	}
	u := st.Usage
	fmt.Fprintf(w, "usage     %d requests, %d tool calls, %d tokens (%d input, %d of them cached), cost %s\n", u.ProviderRequests, u.ToolCalls, u.TotalTokens, u.InputTokens, u.CachedInputTokens, costText(u))
	if st.Error != nil {
		fmt.Fprintf(w, "error     %s: %s\n", st.Error.Code, st.Error.Message)
	}
	fmt.Fprintf(w, "\ntask: %s\n", st.Task)
	if len(st.Journal) > 0 {
		fmt.Fprintln(w, "\njournal:")
		if om.Journal > 0 {
			fmt.Fprintf(w, "  (%d earlier completed entries not shown)\n", om.Journal)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CALL\tTOOL\tSTAGE\tDECISION\tOUTCOME\tARGUMENTS")
		for _, j := range st.Journal {
			dec := "-"
			if j.NeedsApproval {
				dec = "pending"
				if j.Decision != nil {
					dec = map[bool]string{true: "approved", false: "denied"}[*j.Decision]
					if j.DecidedBy != "" {
						dec += " by " + j.DecidedBy
					}
					if j.DecidedAt != nil {
						dec += " at " + j.DecidedAt.Local().Format(time.RFC3339)
					}
				}
			}
			outcome := j.Outcome
			if j.Stage == state.StageCompleted {
				outcome += map[bool]string{true: " ok", false: " error"}[j.Success]
			} else if j.Stage == state.StageStarted {
				outcome = "UNKNOWN"
			}
			if j.ResolvedBy != "" {
				outcome += " by " + j.ResolvedBy
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", j.CallID, j.Tool, j.Stage, dec, strings.TrimSpace(outcome), compactJSON(j.Arguments, 80))
		}
		tw.Flush()
	}
	if len(st.Messages) > 0 {
		fmt.Fprintln(w, "\nconversation:")
		if om.Messages > 0 {
			fmt.Fprintf(w, "  (%d earlier messages not shown)\n", om.Messages)
		}
		for _, m := range st.Messages {
			who := m.Role
			if m.Role == state.RoleTool {
				who = "tool " + m.ToolCallID
			}
			line := compactJSON([]byte(m.Content), 160)
			for _, c := range m.ToolCalls {
				line = strings.TrimSpace(line + " → " + c.Name + "(" + c.ID + ")")
			}
			fmt.Fprintf(w, "  %-3d %-22s %s\n", m.Seq, who, line)
		}
	}
	if len(st.Output) > 0 {
		var s string
		if jsonUnmarshalString(st.Output, &s) == nil {
			fmt.Fprintf(w, "\noutput:\n%s\n", s)
		} else {
			fmt.Fprintf(w, "\noutput:\n%s\n", st.Output)
		}
	}
	res := resultOf(st, nil, "", flags)
	printNextSteps(&env{stderr: w, getenv: e.getenv}, res)
}

func newRunsApproveCmd(e *env, open storeOpener, hints hintFlagger) *cobra.Command {
	var approved, reason, argsFlag string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "approve RUN_ID CALL_ID --approved=true|false [--args JSON|@FILE]",
		Short: "Record a decision on a pending call without resuming the run",
		Long: `Record a decision on a pending call without resuming the run.

With --args the call is approved with these arguments instead of the model's.
They are checked as the model's were (the tool's schema, std.fs confinement,
the policy's deny rules) against the run's program before anything is
recorded; the journal keeps both sets and who edited them, and the model is
told in the tool result that a person changed the arguments, and to what.`,
		Example: `  nexa runs approve run_01J… call_1 --approved=true
  nexa runs approve run_01J… call_1 --approved=true --args '{"env": "staging"}'
  nexa runs approve run_01J… call_1 --approved=false --reason "wrong file"`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if !c.Flags().Changed("approved") {
				return usageErrorf("say the decision explicitly: --approved=true or --approved=false")
			}
			ok, err := parseStrictBool("approved", approved)
			if err != nil {
				return err
			}
			d := engine.Decision{CallID: args[1], Approve: ok, Reason: reason, By: decider(e)}
			if c.Flags().Changed("args") {
				if !ok {
					return usageErrorf("--args gives the arguments a call is approved with; it cannot go with --approved=false")
				}
				b, err := readArgsFlag(e, argsFlag)
				if err != nil {
					return err
				}
				d.Args = b
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			if err := checkRunID(args[0]); err != nil {
				return err
			}
			st, err := engine.DecideWith(context.Background(), s, args[0], []engine.Decision{d}, engine.DecideOptions{Check: session.EditChecker(sessionEnv(e), s), Now: testClock()()})
			if err := runsWriteError(s, args[0], err); err != nil {
				return err
			}
			verb := "approved"
			if !ok {
				verb = "denied"
			}
			if d.Args != nil {
				verb += " with edited arguments " + compactJSON(st.Entry(args[1]).ApprovedArguments, 200)
			}
			if asJSON {
				writeJSON(e.stdout, showView(st, hints(st), nil))
			} else {
				fmt.Fprintf(e.stdout, "call %s of run %s %s (revision %d)\n", args[1], args[0], verb, st.Revision)
			}
			fmt.Fprintf(e.stderr, "continue with: %s\n", resumecmd.Base(st, "", hints(st)))
			return nil
		},
	}
	cmd.Flags().StringVar(&approved, "approved", "", "the decision: true or false")
	cmd.Flags().StringVar(&reason, "reason", "", "reason sent to the model with a denial")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as runs show --json does, after the decision")
	cmd.Flags().StringVar(&argsFlag, "args", "", "approve with these arguments instead of the model's: `JSON`, @FILE or @- (at most 1 MiB)")
	return cmd
}

// runsWriteError maps a store write error to docs/reference/cli.md#exit-codes.
func runsWriteError(s session.Store, id string, err error) error {
	if err == nil {
		return nil
	}
	if re, ok := engine.AsError(err); errors.Is(err, state.ErrNotFound) || ok && re.Code == engine.CodeRunNotFound {
		return runNotFound(s, id)
	}
	if re, ok := engine.AsError(err); ok && re.Refusal {
		return &exitError{code: ExitUsage, msg: re.Message, errCode: re.Code}
	}
	if re, ok := engine.AsError(err); ok && re.Code == engine.CodeCheckpointConflict {
		return &exitError{code: ExitConflict, msg: re.Message}
	}
	var ce *state.ConflictError
	if errors.As(err, &ce) {
		return &exitError{code: ExitConflict, msg: ce.Error() + "; nothing was written"}
	}
	return storeFailure(err)
}

// runNotFound is the usage error for a run id the store does not have.
func runNotFound(s session.Store, id string) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf("no run %s in the store %s", id, s.Path()), errCode: engine.CodeRunNotFound}
}

// storeFailure is an operational error of the store (exit 1, store_error);
// the store's message already says what it was doing.
func storeFailure(err error) error {
	code := engine.CodeStoreError
	if re, ok := engine.AsError(err); ok && re.Code != "" {
		code = re.Code
	}
	return &exitError{code: ExitFailed, msg: err.Error(), errCode: code}
}

// maxResolveOutputBytes bounds the file of runs resolve --output @FILE
// (docs/reference/cli.md#size-limits): the request body nexa serve accepts for
// the same resolution, so both ways take the same outputs.
const maxResolveOutputBytes = 4 << 20

// readFileLimit reads the file a flag names, refusing one of more than
// limit bytes (a mistake, or a device such as /dev/zero) after reading at
// most limit+1 bytes of it.
func readFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over %d MiB, the limit for this file", path, limit>>20)
	}
	return b, nil
}

func newRunsResolveCmd(e *env, open storeOpener, hints hintFlagger) *cobra.Command {
	var output, success string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resolve RUN_ID CALL_ID --output TEXT|@FILE --success=true|false",
		Short: "Record the verified outcome of a call whose outcome is unknown",
		Long: `Record what really happened for a call that started but whose result was
never saved (status unknown_outcome). Verify the effect in the external system
first. Only a call still in stage started can be resolved; resuming the run
then continues with this result without executing the tool again.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if !c.Flags().Changed("output") {
				return usageErrorf("give the verified result with --output TEXT or --output @FILE")
			}
			if !c.Flags().Changed("success") {
				return usageErrorf("say whether the call succeeded: --success=true or --success=false")
			}
			ok, err := parseStrictBool("success", success)
			if err != nil {
				return err
			}
			text := output
			if strings.HasPrefix(output, "@") {
				b, err := readFileLimit(output[1:], maxResolveOutputBytes)
				if err != nil {
					return usageErrorf("--output %s: %v; nothing was written", output, err)
				}
				text = string(b)
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			if err := checkRunID(args[0]); err != nil {
				return err
			}
			st, err := engine.ResolveUnknown(context.Background(), s, args[0], args[1], text, ok, decider(e))
			if err := runsWriteError(s, args[0], err); err != nil {
				return err
			}
			if asJSON {
				writeJSON(e.stdout, showView(st, hints(st), nil))
			} else {
				fmt.Fprintf(e.stdout, "call %s of run %s resolved (success=%s, revision %d)\n", args[1], args[0], strconv.FormatBool(ok), st.Revision)
			}
			switch {
			case !resumecmd.Resumable(st):
				fmt.Fprintf(e.stderr, "run %s is %s: the resolution is recorded for the record; the run does not continue\n", st.ID, st.Status)
			case len(engine.UnknownCalls(st)) == 0:
				fmt.Fprintf(e.stderr, "continue with: %s\n", resumecmd.Base(st, "", hints(st)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&output, "output", "", "the verified output, or @FILE to read it from a file (at most 4 MiB)")
	cmd.Flags().StringVar(&success, "success", "", "whether the call succeeded: true or false")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as runs show --json does, after the resolution")
	return cmd
}

func newRunsPruneCmd(e *env, open storeOpener) *cobra.Command {
	var olderThan, status string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION [--status S]",
		Short: "Delete runs last updated longer ago than DURATION",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usageErrorf("--older-than is required (e.g. 720h, 30d)")
			}
			d, err := parseAge(olderThan)
			if err != nil {
				return err
			}
			st, err := parseStatus(status)
			if err != nil {
				return err
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			rep, err := engine.Prune(context.Background(), s, state.Filter{OlderThan: d, Status: st})
			if err != nil {
				return storeFailure(err) // the store says "prune runs: …"
			}
			if asJSON {
				if rep.Deleted == nil {
					rep.Deleted = []string{}
				}
				if rep.Held == nil {
					rep.Held = []string{}
				}
				writeJSON(e.stdout, rep)
				return nil
			}
			fmt.Fprintf(e.stdout, "deleted %d run(s)\n", len(rep.Deleted))
			if len(rep.Held) > 0 {
				fmt.Fprintf(e.stdout, "kept %d run(s) held by a running executor: %s\n", len(rep.Held), strings.Join(rep.Held, " "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete runs not updated for this long (e.g. 72h, 30d)")
	cmd.Flags().StringVar(&status, "status", "", "only runs with this status")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"deleted": [RUN_ID…], "held": [RUN_ID…]}`)
	return cmd
}

// parseAge reads --older-than: a duration of package duration, not
// negative ("72h", "30d").
func parseAge(s string) (time.Duration, error) {
	d, err := duration.Parse(s)
	if err != nil || d < 0 {
		return 0, usageErrorf("--older-than takes a duration such as 72h or 30d (%s), not %q", duration.Forms, s)
	}
	return d, nil
}

// checkRunID refuses, before the store is touched, an argument that is not
// a run id.
func checkRunID(id string) error {
	if !engine.ValidRunID(id) {
		return usageErrorf("%q is not a run id (run ids look like run_01JD7…)", id)
	}
	return nil
}

// readArgsFlag reads edited arguments given as JSON text, @FILE or @- (standard input),
// at most engine.MaxEditBytes.
func readArgsFlag(e *env, v string) ([]byte, error) {
	if !strings.HasPrefix(v, "@") {
		return []byte(v), nil
	}
	name := v[1:]
	var r io.Reader
	if name == "-" {
		r = e.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErrorf("--args %s: %v", v, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, engine.MaxEditBytes+1))
	if err != nil {
		return nil, usageErrorf("--args %s: %v", v, err)
	}
	if len(b) > engine.MaxEditBytes {
		return nil, usageErrorf("--args %s is over %d bytes; edited arguments are at most 1 MiB", v, engine.MaxEditBytes)
	}
	return b, nil
}

// costText renders a usage's cost for people: dollars with as many digits
// as the prices give, or "unknown" when a request had no price.
func costText(u state.Usage) string {
	c, ok := u.Cost()
	if !ok {
		return "unknown"
	}
	return "$" + strconv.FormatFloat(c, 'f', -1, 64)
}

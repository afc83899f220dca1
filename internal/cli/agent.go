package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/testknob"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/duration"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
	"github.com/nexa-run/nexa/internal/state"
)

type agentFlags struct {
	timeout      string
	resume       string
	approve      []string
	deny         []string
	respond      []string
	reason       string
	store        string
	provider     string
	model        string
	baseURL      string
	noStream     bool
	maxTurns     int
	maxToolCalls int
	maxTokens    int
	maxCost      float64
	prices       string
	output       string
	quiet        bool
	policy       string
	approvalWait string
	detach       bool
	maxParallel  int

	// stdout guards the one JSON object: the second-signal handler and
	// the normal end of the command race to print it, and only one may.
	stdout printOnce
	// warnings are the program's compile warnings, for the object's
	// warnings array (nil until the program is compiled).
	warnings []diagJSON
	// stream renders the run's events on stdout with --output jsonl
	// (nil otherwise); it is closed before the final object is printed.
	stream *jsonlStream
	// responses are the answers of --respond, read and paired with
	// their calls.
	responses []engine.Response
}

func newAgentCmd(e *env) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent FILE AGENT \"TASK\"|-|@FILE | agent --resume RUN_ID|last [--approve CALL_ID]... [--deny CALL_ID]... [--respond CALL_ID JSON|@FILE|done]...",
		Short: "Start or resume a durable run of an agent",
		Long: `Start a run of AGENT from FILE with TASK, or continue a run with --resume.
TASK may be - (read standard input) or @FILE (read the file, at most 1 MiB);
with no TASK, a standard input that is not a terminal is the task.

A run is saved after every step in the store (.nexa/runs.sqlite3 by default, or a
PostgreSQL database named by a postgres:// URL).
Tool calls that need approval stop the run with status waiting_approval (exit
3); continue it with --resume RUN_ID and one --approve or --deny per call.
A call whose MCP server asks for input first stops the run with status
waiting_input (exit 3); answer it with --resume RUN_ID --respond CALL_ID and
the form's content as JSON (or @FILE), or done once a URL request was
completed in a browser (nexa never opens it), or decline.
Standard output carries exactly one JSON object describing the run; progress
goes to standard error.

With --detach the run is recorded as queued and the command exits 0 at once;
a nexa worker with the program continues it (docs/worker.md). --resume RUN
--detach hands a stored run over to the workers the same way.

Exit codes: 0 completed (or queued with --detach), 1 failed, 2 usage or input error (nothing written),
3 waiting_approval or waiting_input, 4 unknown_outcome, 5 timed_out, 6 budget_exhausted,
7 checkpoint conflict, 130 interrupted.`,
		Example: `  nexa agent review.nx Reviewer "Review the supplied change" --timeout 900
  nexa agent --resume run_01J… --approve call_1
  nexa agent --resume run_01J… --deny call_1 --reason "wrong file"
  nexa agent --resume last --approve call_1
  nexa agent --resume run_01J… --respond call_2 '{"name": "Ada"}'
  nexa agent --resume run_01J… --respond call_3 done`,
		// The number of arguments is checked by runAgent, so that a
		// wrong count gets the JSON object like every other usage error.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runAgent(e, c, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.timeout, "timeout", "", "deadline of the run: seconds or a duration like 15m (default: the agent's timeout)")
	fl.StringVar(&f.resume, "resume", "", "continue the run `RUN_ID` instead of starting one")
	fl.StringArrayVar(&f.approve, "approve", nil, "approve the pending call `CALL_ID` (repeatable; needs --resume)")
	fl.StringArrayVar(&f.deny, "deny", nil, "deny the pending call `CALL_ID` (repeatable; needs --resume)")
	fl.StringArrayVar(&f.respond, "respond", nil, "answer the input request of call `CALL_ID`, followed by the answer: JSON, @FILE, done (a URL request), decline or cancel (repeatable; needs --resume)")
	fl.StringVar(&f.reason, "reason", "", "reason sent to the model with a denial")
	fl.StringVar(&f.store, "store", "", "run store: a SQLite file `PATH` or a postgres:// URL (default .nexa/runs.sqlite3, or NEXA_STORE)")
	fl.StringVar(&f.provider, "provider", "", "model provider: openai, anthropic or script:PATH (or NEXA_PROVIDER)")
	fl.StringVar(&f.model, "model", "", "model name, optionally prefix/name (default: the agent's model, or NEXA_MODEL)")
	fl.StringVar(&f.baseURL, "base-url", "", "endpoint of an OpenAI-compatible server (or NEXA_BASE_URL)")
	fl.BoolVar(&f.noStream, "no-stream", false, "ask the provider for whole replies instead of a stream")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "budget: most provider requests in the run (0: unlimited)")
	fl.IntVar(&f.maxToolCalls, "max-tool-calls", 0, "budget: most tool executions in the run (0: unlimited)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "budget: most total tokens in the run (0: unlimited)")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "budget: most US dollars the run's model requests may cost (0: unlimited; a resume may raise it)")
	fl.StringVar(&f.prices, "prices", "", "prices `FILE` (TOML) over the built-in model prices (or NEXA_PRICES)")
	fl.IntVar(&f.maxParallel, "max-parallel-tools", engine.DefaultMaxParallelTools, "most calls of one reply that run at once (1: one after another)")
	fl.StringVar(&f.output, "output", "json", "what stdout carries: json, jsonl (one event per line, then the object) or text")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress on stderr")
	fl.StringVar(&f.policy, "policy", "", "policy `FILE` of rules that allow, deny or ask about tool calls (or NEXA_POLICY)")
	fl.BoolVar(&f.detach, "detach", false, "record the run for a worker (nexa worker) and exit 0 without driving it; with --resume, hand the run over to the workers")
	fl.StringVar(&f.approvalWait, "approval-timeout", "", "how long a call may wait for a decision before it expires: seconds or a duration like 2h")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return agentUsageError(e, &f, fmt.Sprintf("%v (see 'nexa agent --help')", err))
	})
	return cmd
}

// agentUsageError prints the error object (run_id null) and exits 2.
func agentUsageError(e *env, f *agentFlags, msg string) error {
	return agentFailure(e, f, ExitUsage, engine.CodeUsage, msg)
}

// agentFailure prints the error object and exits with code. When the
// command names an existing run (--resume), the object carries what the
// store knows of it; otherwise run_id is null.
func agentFailure(e *env, f *agentFlags, code int, errCode, msg string) error {
	f.stdout.do(func() {
		if f.output == "text" {
			return
		}
		res := errorResult(errCode, msg)
		if run := peekRun(e, f.store, f.resume); run != nil {
			res = resultOf(run, nil, "", hintFlags(run, nil, f.store))
			res.Error = &state.RunError{Code: errCode, Message: msg}
		}
		f.writeResult(e.stdout, f.withWarnings(res))
	})
	fmt.Fprintf(e.stderr, "nexa: %s\n", msg)
	return exitWith(code)
}

func runAgent(e *env, c *cobra.Command, f *agentFlags, args []string) error {
	if f.output != "json" && f.output != "jsonl" && f.output != "text" {
		given := f.output
		f.output = "json"
		return agentUsageError(e, f, fmt.Sprintf("--output must be json, jsonl or text, not %q", given))
	}
	if f.resume != "" && (len(args) == 0 || f.resume == "last" || needsStoredChoice(e, c)) {
		// What the command leaves out comes from the run: its file and
		// agent, its provider choice, its policy; what it gives must
		// match the run.
		var err error
		if args, err = fromStoredRun(e, c, f, args); err != nil {
			code, rerr := exitCodeForError(err)
			return agentFailure(e, f, code, rerr.Code, rerr.Message)
		}
	}
	if len(args) < 2 {
		return agentUsageError(e, f, fmt.Sprintf("nexa agent needs FILE AGENT and a task, or --resume RUN_ID; got %d argument(s) (see 'nexa agent --help')", len(args)))
	}
	if len(args) > 3 {
		return agentUsageError(e, f, fmt.Sprintf("nexa agent takes FILE AGENT and one task; got %d arguments (quote the task: nexa agent %s %s \"the whole task\")", len(args), args[0], args[1]))
	}
	file, agentName := args[0], args[1]
	hasTask := len(args) == 3
	if (len(f.approve) > 0 || len(f.deny) > 0) && f.resume == "" {
		return agentUsageError(e, f, "--approve and --deny record decisions on an existing run: add --resume RUN_ID")
	}
	if len(f.respond) > 0 && f.resume == "" {
		return agentUsageError(e, f, "--respond answers a call of an existing run: add --resume RUN_ID")
	}
	for _, v := range f.respond {
		r, err := readResponse(e, v)
		if err != nil {
			return agentUsageError(e, f, err.Error())
		}
		r.By = decider(e)
		f.responses = append(f.responses, r)
	}
	if f.reason != "" && len(f.deny) == 0 && len(f.approve) == 0 {
		return agentUsageError(e, f, "--reason travels with a decision: add --deny CALL_ID (or --approve CALL_ID)")
	}
	if f.resume != "" && hasTask {
		return agentFailure(e, f, ExitUsage, engine.CodeTaskWithResume, fmt.Sprintf("--resume continues run %s with its own task; a new task needs a new run (drop --resume or the task text)", f.resume))
	}
	var task string
	if f.resume == "" {
		t, given, err := readTask(e, args[2:])
		if err != nil {
			return agentUsageError(e, f, err.Error())
		}
		if !given {
			return agentUsageError(e, f, "give the task as the third argument, e.g. nexa agent "+file+" "+agentName+" \"Review the supplied change\" (or '-' to read it from standard input, or @FILE)")
		}
		task = t
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"--max-turns", f.maxTurns}, {"--max-tool-calls", f.maxToolCalls}, {"--max-tokens", f.maxTokens}} {
		if n.v < 0 {
			return agentUsageError(e, f, n.name+" must be zero (unlimited) or positive")
		}
	}
	if f.maxCost < 0 || math.IsNaN(f.maxCost) || math.IsInf(f.maxCost, 0) {
		return agentUsageError(e, f, "--max-cost must be zero (unlimited) or a positive number of US dollars")
	}
	if f.maxParallel < 1 || f.maxParallel > engine.MaxParallelToolsLimit {
		return agentUsageError(e, f, fmt.Sprintf("--max-parallel-tools must be between 1 (one call after another) and %d, not %d", engine.MaxParallelToolsLimit, f.maxParallel))
	}
	var timeout time.Duration
	if f.timeout != "" {
		d, err := parseTimeout(f.timeout)
		if err != nil {
			return agentUsageError(e, f, err.Error())
		}
		timeout = d
	}
	var approvalWait time.Duration
	if f.approvalWait != "" {
		if f.resume != "" {
			return agentUsageError(e, f, "--approval-timeout is fixed when a run starts; a resume keeps the run's (omit --approval-timeout)")
		}
		d, err := duration.Parse(f.approvalWait)
		if err != nil || d <= 0 {
			return agentUsageError(e, f, fmt.Sprintf("--approval-timeout takes %s (positive), not %q", duration.Forms, f.approvalWait))
		}
		approvalWait = d
	}

	if fi, err := os.Stat(file); err != nil {
		return agentFailure(e, f, ExitUsage, engine.CodeUsage, fmt.Sprintf("cannot read %s: %v", file, errors.Unwrap(err)))
	} else if fi.IsDir() {
		return agentFailure(e, f, ExitUsage, engine.CodeUsage, fmt.Sprintf("%s is a directory, not a .nx file", file))
	}
	wd, err := os.Getwd()
	if err != nil {
		return agentFailure(e, f, ExitFailed, engine.CodeInternal, fmt.Sprintf("working directory: %v", err))
	}
	// A resume opens its existing store while the program compiles: the
	// two are independent, and a resume never creates a store.
	senv := sessionEnv(e)
	var opening *session.Opening
	if f.resume != "" && engine.ValidRunID(f.resume) {
		opening = session.OpenAhead(senv, f.store, wd, f.resume)
		defer opening.Discard()
	}
	prog, firstErr, warnings := compileForRun(e, file)
	f.warnings = warnings
	if prog == nil {
		return agentFailure(e, f, ExitUsage, engine.CodeCompile, fmt.Sprintf("%s does not compile: %s (run nexa validate %s for every diagnostic)", file, firstErr, file))
	}
	agent := prog.Agent(agentName)
	if agent == nil {
		names := make([]string, len(prog.Agents))
		for i, a := range prog.Agents {
			names[i] = a.Name
		}
		msg := fmt.Sprintf("%s declares no agent %q", file, agentName)
		if s := lang.Closest(agentName, names); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", s)
		} else if len(names) > 0 {
			msg += "; agents: " + strings.Join(names, ", ")
		}
		return agentUsageError(e, f, msg)
	}

	policyPath := f.policy
	if policyPath == "" {
		policyPath = e.getenv("NEXA_POLICY")
	}
	var display *progressPrinter
	sess, err := session.Prepare(session.Options{
		Env: senv, Program: prog, Agent: agent, StoreFlag: f.store, Policy: policyPath, Prices: f.prices,
		Provider: session.ProviderOptions{Provider: f.provider, Model: f.model, BaseURL: f.baseURL, Resume: f.resume != "",
			IdentifyOnly: f.detach && f.resume == ""},
		OnRetry: func(attempt int, err error, delay time.Duration) { display.retrying(attempt, err, delay) },
	})
	if err != nil {
		code, rerr := exitCodeForError(err)
		return agentFailure(e, f, code, rerr.Code, rerr.Message)
	}
	defer sess.Close()
	// From here on everything printed passes the run's redactor, which
	// now knows every secret value, provider key included.
	e = redactedEnv(e, sess)
	defer e.closeOutput()
	display = progress(e, f.quiet)
	display.redact = sess.Redact
	if f.output == "jsonl" {
		f.stream = newJSONLStream(e.stdout, testClock(), sess.Redact)
		display.stream = f.stream
	}
	defer display.close()
	if f.resume != "" && !engine.ValidRunID(f.resume) {
		return finishAgent(e, c, f, nil, nil, file, &engine.Error{Code: engine.CodeRunNotFound, Refusal: true,
			Message: fmt.Sprintf("%q is not a run id (run ids look like run_01JD7…)", f.resume)}, sess, nil)
	}
	var (
		st  session.Store
		pre *engine.Preloaded
	)
	if opening != nil {
		st, pre, err = opening.Take()
	} else {
		st, err = session.OpenStore(senv, f.store, wd, f.resume == "")
	}
	if err != nil {
		var se *session.StoreError
		if errors.As(err, &se) {
			exit := ExitFailed
			if se.Usage {
				exit = ExitUsage
			}
			if se.Code == engine.CodeNoStore {
				return agentFailure(e, f, exit, engine.CodeRunNotFound, fmt.Sprintf("no run %s: %s", f.resume, se.Msg))
			}
			return agentFailure(e, f, exit, se.Code, se.Msg)
		}
		return agentFailure(e, f, ExitFailed, engine.CodeStoreError, err.Error())
	}
	defer st.Close()
	defer pre.Wait() // the read ahead ends before the store closes

	runID := f.resume
	if runID == "" {
		runID = engine.NewRunID(time.Now())
	}
	// The first signal cancels what is being set up (MCP servers
	// connecting) and asks a run to stop after its current step; a second
	// one stops at once, printing the run as last saved.
	ctx, cancelSetup := context.WithCancel(context.Background())
	defer cancelSetup()
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		fmt.Fprintln(e.stderr, "nexa: stopping after the current step (signal again to stop at once)")
		cancelSetup()
		close(stop)
		if _, ok := <-sigs; ok {
			stopAtOnce(e, f, st, runID, file)
		}
	}()

	if f.detach && f.resume != "" {
		// Handed over, not driven: the decisions given are recorded and
		// a worker with the run's program continues it.
		o := resumeOptions(c, f, prog, agentName, sess.Identity(), wd, timeout, nil, decider(e))
		run, err := engine.HandOver(context.Background(), st, f.resume, o.Decisions, engine.DecideOptions{Responses: o.Responses, Redact: sess.Redact})
		display.close()
		return finishAgent(e, c, f, run, nil, file, err, sess, st)
	}
	runner, err := sess.Connect(ctx, session.RunOptions{
		Store: st, RunID: runID, WorkDir: wd, Resume: f.resume != "", Timeout: timeout,
		Observe: display.observe, Stop: stop, NoStream: f.noStream,
		Now: testClock(), LeaseTTL: testknob.LeaseTTL(), MaxParallelTools: f.maxParallel,
	})
	if err != nil && ctx.Err() != nil {
		// A signal while the tools were being set up: what was started
		// is stopped (the session's Close), and nothing ran.
		return agentFailure(e, f, ExitInterrupted, engine.CodeInterrupted, "interrupted while the run's tools were being set up; nothing was run")
	}
	if err != nil {
		code, rerr := exitCodeForError(err)
		return agentFailure(e, f, code, rerr.Code, rerr.Message)
	}

	var run *state.RunState
	// The span of this process's drive of the run (when traces are on).
	dctx, endSegment := sess.Segment(context.Background(), runID)
	if f.resume == "" {
		choice := sess.Choice()
		choice.NoStream = f.noStream
		run, err = runner.Start(dctx, engine.NewRun{
			ID: runID, Task: task, File: file, WorkDir: wd, Deadline: sess.Deadline,
			Budgets: state.Budgets{MaxTurns: f.maxTurns, MaxToolCalls: f.maxToolCalls, MaxTokens: f.maxTokens, MaxCostUSD: f.maxCost},
			Choice:  &choice,
			Detach:  f.detach,

			ApprovalTimeout: approvalWait,
		})
	} else {
		o := resumeOptions(c, f, prog, agentName, sess.Identity(), wd, timeout, sess.MCPServers(), decider(e))
		o.Request.Policy = sess.PolicyRef()
		o.Preloaded = pre
		run, err = runner.Resume(dctx, o)
		if re, ok := engine.AsError(err); ok && re.Code == engine.CodeRunNotFound {
			re.Message = fmt.Sprintf("no run %s in the store %s", f.resume, st.Path())
		}
	}
	endSegment(run, err)
	display.close()
	return finishAgent(e, c, f, run, sess.Lookup, file, err, sess, st)
}

// resumeOptions maps the flags of a resume to the runtime's options; the
// runtime applies the checks of docs/reference/runtime.md#resume-checks and records the
// decisions before the run continues.
func resumeOptions(c *cobra.Command, f *agentFlags, prog *ir.Program, agentName string, ident state.ProviderIdentity, wd string, timeout time.Duration, mcp []state.MCPServer, by string) engine.ResumeOptions {
	req := engine.ResumeRequest{SourceHash: prog.Hash, Agent: agentName, Provider: ident, WorkDir: wd, MCPServers: mcp}
	if c.Flags().Changed("max-turns") {
		req.Budgets.MaxTurns = &f.maxTurns
	}
	if c.Flags().Changed("max-tool-calls") {
		req.Budgets.MaxToolCalls = &f.maxToolCalls
	}
	if c.Flags().Changed("max-tokens") {
		req.Budgets.MaxTokens = &f.maxTokens
	}
	if c.Flags().Changed("max-cost") {
		req.Budgets.MaxCost = &f.maxCost
	}
	var ds []engine.Decision
	for _, id := range f.approve {
		ds = append(ds, engine.Decision{CallID: id, Approve: true, Reason: f.reason, By: by})
	}
	for _, id := range f.deny {
		ds = append(ds, engine.Decision{CallID: id, Approve: false, Reason: f.reason, By: by})
	}
	return engine.ResumeOptions{RunID: f.resume, Request: req, TimeoutGiven: timeout > 0, Decisions: ds, Responses: f.responses}
}

// finishAgent prints the result object and picks the exit code.
//
// s is the run's store, when one is open: the list of denied calls of a
// long run may need calls the drive did not load.
func finishAgent(e *env, c *cobra.Command, f *agentFlags, run *state.RunState, tool func(string) *ir.Tool, file string, err error, sec redactor, s state.Store) error {
	code := ExitOK
	var res *runResult
	if err != nil {
		var rerr *state.RunError
		code, rerr = exitCodeForError(err)
		rerr.Message = sec.Redact(rerr.Message)
		if run == nil {
			// Found before the run was loaded (a busy run, say):
			// the store still knows it.
			run = peekRun(e, f.store, f.resume)
		}
		if run != nil && rerr.Code == engine.CodeStoreError {
			// The step that failed to save may have changed the run
			// in memory (to completed, say): never report that. The
			// run failed, and the store holds what it last saved.
			failed := *run
			failed.Status = state.StatusFailed
			res = resultOf(&failed, tool, file, hintFlags(run, providerFlags(c), f.store))
		} else if run != nil {
			// The run as stored, with the error (for a refusal,
			// nothing of it changed).
			res = resultOf(run, tool, file, hintFlags(run, providerFlags(c), f.store))
		} else {
			res = errorResult(rerr.Code, rerr.Message)
		}
		res.Error = rerr
		fmt.Fprintf(e.stderr, "nexa: %s\n", rerr.Message)
	} else {
		res = resultOf(run, tool, file, hintFlags(run, providerFlags(c), f.store))
		if res.Error != nil {
			res.Error.Message = sec.Redact(res.Error.Message)
			if !f.quiet && run.Status != state.StatusUnknownOutcome {
				fmt.Fprintf(e.stderr, "nexa: %s\n", res.Error.Message)
			}
		}
		code = exitCodeFor(run.Status)
	}
	if run != nil && s != nil && run.Usage.RefusedCalls > len(res.DeniedCalls) {
		res.DeniedCalls = engine.DeniedCalls(context.Background(), s, run)
	}
	f.withWarnings(res)
	f.stdout.do(func() {
		if f.output == "text" {
			printTextResult(e.stdout, res)
		} else {
			f.writeResult(e.stdout, res)
		}
	})
	if !f.quiet {
		printNextSteps(e, res)
	}
	if code == ExitOK {
		return nil
	}
	return exitWith(code)
}

// testClock is the clock of a run: the wall clock, moved in test builds by
// NEXA_TEST_CLOCK_OFFSET (internal/testknob) so that a story can let an
// approval's wait or a deadline run out without waiting for it.
func testClock() func() time.Time {
	d := testknob.ClockOffset()
	if d == 0 {
		return time.Now
	}
	return func() time.Time { return time.Now().Add(d) }
}

// parseTimeout reads --timeout: a positive duration of package duration
// (seconds such as 900, or 15m, 1h30m, 2d).
func parseTimeout(s string) (time.Duration, error) {
	d, err := duration.Parse(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--timeout takes %s (positive), not %q", duration.Forms, s)
	}
	return d, nil
}

// redactedEnv is e with stdout and stderr passed through the run's
// redactor; closeOutput flushes them.
func redactedEnv(e *env, sess *session.Session) *env {
	re := *e
	out, errw := sess.RedactWriter(e.stdout), sess.RedactWriter(e.stderr)
	re.stdout, re.stderr = out, errw
	re.flush = func() {
		_ = errw.Close()
		_ = out.Close()
	}
	return &re
}

// providerFlags are the flags given on this command line that a resume must
// repeat because the provider identity is resolved from them. A new run
// records them, so that every later hint (nexa runs show, approve, resolve)
// can repeat them too.
func providerFlags(c *cobra.Command) []string {
	var out []string
	for _, name := range []string{"provider", "model", "base-url"} {
		if fl := c.Flags().Lookup(name); fl != nil && fl.Changed {
			out = append(out, "--"+name, fl.Value.String())
		}
	}
	if fl := c.Flags().Lookup("no-stream"); fl != nil && fl.Changed && fl.Value.String() == "true" {
		out = append(out, "--no-stream")
	}
	return out
}

// redactor removes secret values from text (a session's Redact).
type redactor interface{ Redact(string) string }

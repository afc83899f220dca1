package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/failpoint"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tool"
)

// runCalls takes every open journal entry of the latest reply as far as
// policy allows: approval-free and approved calls execute (up to the
// runner's maxParallel at once, see runBatch), denied ones are answered,
// pending ones wait, started ones are unknown.
func (d *driver) runCalls(ctx context.Context, open []*state.JournalEntry) (step, error) {
	var pending, inputs, unknown, ready []*state.JournalEntry
	for _, e := range open {
		t := d.r.exposed[e.Tool]
		if e.Stage == state.StageNotStarted && (e.Decision == nil || *e.Decision) {
			if why := d.pastAgentCap(e); why != "" {
				return d.exhausted(ctx, why)
			}
		}
		switch {
		case e.Stage == state.StageStarted && e.TaskID != "":
			// Handed to a server's task: polled again, not unknown
			// (never run again, even when idempotent).
			if len(unknown) > 0 {
				unknown = append(unknown, e)
				continue
			}
			if s, done, err := d.rejoin(ctx, e, t); done {
				if err != nil || s == stepStop {
					return s, err
				}
				continue
			}
			unknown = append(unknown, e)
			continue
		case e.Stage == state.StageStarted:
			if t == nil || !t.Idempotent || len(unknown) > 0 {
				unknown = append(unknown, e)
				continue
			}
			// An idempotent tool cut off before its result was
			// saved runs again with the same idempotency key.
		case e.AwaitingInput():
			// Its server asked for input nobody gave yet: nothing is
			// sent until a person answers.
			inputs = append(inputs, e)
			continue
		case e.Pending():
			pending = append(pending, e)
			continue
		case e.Decision != nil && !*e.Decision:
			if len(unknown) > 0 {
				if err := d.deny(ctx, e); err != nil {
					return stepStop, err
				}
				continue
			}
			// Answered in its turn, after the calls before it
			// started (runBatch).
		}
		if len(unknown) > 0 {
			// After an unknown outcome nothing more of this reply
			// runs: the operator settles it first.
			continue
		}
		ready = append(ready, e)
	}
	var batchUnknown []*state.JournalEntry
	end, err := d.runBatch(ctx, ready, &batchUnknown)
	if err != nil {
		return stepStop, err
	}
	unknown = append(unknown, batchUnknown...)
	for _, e := range ready {
		if e.AwaitingInput() {
			inputs = append(inputs, e)
		}
	}
	if len(unknown) > 0 {
		if d.deadlinePassed() {
			return d.timedOut(ctx, state.Delta{})
		}
		ids := ""
		for i, e := range unknown {
			if i > 0 {
				ids += ", "
			}
			ids += e.CallID
		}
		return d.finish(ctx, state.StatusUnknownOutcome, &state.RunError{Code: CodeUnknownOutcome, Message: fmt.Sprintf(
			"the outcome of %s is unknown: verify what happened and record it with nexa runs resolve before resuming", ids)}, state.Delta{})
	}
	if end != nil {
		return end()
	}
	if len(pending) > 0 || len(inputs) > 0 {
		waiting := make([]Event, 0, len(pending)+len(inputs))
		for _, e := range pending {
			risk := e.Risk
			if t := d.r.exposed[e.Tool]; t != nil && risk == "" {
				risk = t.Risk
			}
			waiting = append(waiting, Event{Kind: EventCallPending, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool,
				Arguments: e.Arguments, Risk: risk, ExpiresAt: e.ExpiresAt})
		}
		sort.Slice(inputs, func(i, j int) bool { return inputs[i].Seq < inputs[j].Seq })
		for _, e := range inputs {
			waiting = append(waiting, inputEvent(d.st.ID, e))
		}
		// A call that waits for input makes the run wait for input,
		// even when others of the reply wait for a decision: both are
		// answered on the same resume.
		status := state.StatusWaitingApproval
		if len(inputs) > 0 {
			status = state.StatusWaitingInput
		}
		return d.finish(ctx, status, nil, state.Delta{}, waiting...)
	}
	if err := d.flushHeld(ctx); err != nil {
		return stepStop, err
	}
	return stepContinue, nil
}

// handOff is a call's task id on its way to the journal (tool.Invocation's
// Handed): done carries the save's error back to the executor.
type handOff struct {
	e    *state.JournalEntry
	id   string
	done chan error
}

// callEnd is what a tool call running in its own goroutine hands back to
// the driver: the executor's answer, nothing more. Only the driver's
// goroutine touches the run and saves it.
type callEnd struct {
	e   *state.JournalEntry
	t   *ir.Tool
	out tool.Outcome
	err error
}

// runBatch executes the ready calls of one reply, in their order, up to
// maxParallel at once (docs/reference/runtime.md#call-order), and answers
// the denied ones among them when their turn comes:
//
//   - a call starts only after every earlier call of the list has started,
//     and a call of a parallel: false tool starts only when nothing runs
//     and lets nothing start beside it;
//   - the started marks of the calls that can start together are saved in
//     one write (with the results already in hand) before any of them is
//     invoked, so each tool's started is durable before it runs;
//   - a result is saved as soon as the driver takes it: in the write that
//     starts the next call, or on its own while other calls still run;
//     the last one of the batch is held for the write that follows
//     runBatch (closing the round or stopping the run);
//   - a stop request, the deadline, a budget, an unavailable sandbox: no
//     further call starts, the running ones finish and their results are
//     saved, then end (returned) stops the run the way the sequential
//     loop did; an unknown outcome (added to unknown) likewise lets no
//     further call start.
//
// Saves stay on this goroutine, so the run has one writer; the calls'
// goroutines only run their executors.
func (d *driver) runBatch(ctx context.Context, ready []*state.JournalEntry, unknown *[]*state.JournalEntry) (end func() (step, error), err error) {
	if len(ready) == 0 {
		return nil, nil
	}
	ends := make(chan callEnd, len(ready)) // never blocks a call's goroutine
	// A call handed to a server's task sends its id here to be journaled
	// by this goroutine, the run's one writer, before the executor waits
	// for anything; quit releases a call whose id can no longer be saved.
	handed := make(chan handOff)
	quit := make(chan struct{})
	began := make(map[*state.JournalEntry]time.Time, len(ready))
	running, alone := 0, false
	queue := ready
	defer func() {
		// A save failed while calls ran: wait for them, so nothing of
		// this drive is still running when it returns. Their results
		// are lost with the failed store; their entries stay started.
		close(quit)
		for ; running > 0; running-- {
			<-ends
		}
	}()
	for {
		var starting []*state.JournalEntry
		for end == nil && len(queue) > 0 {
			e := queue[0]
			if e.Stage == state.StageNotStarted && e.Decision != nil && !*e.Decision {
				// Denied: answered without running, so without a
				// slot, once the calls before it have started.
				if len(starting) > 0 {
					break
				}
				if err := d.deny(ctx, e); err != nil {
					return nil, err
				}
				queue = queue[1:]
				continue
			}
			if len(*unknown) > 0 {
				// After an unknown outcome no further call of the
				// reply starts.
				queue = queue[1:]
				continue
			}
			if alone {
				break
			}
			t := d.r.exposed[e.Tool]
			busy := running + len(starting)
			if busy >= d.r.maxParallel || (t != nil && t.Exclusive && busy > 0) {
				break
			}
			answered, stop, err := d.prepare(ctx, e, t)
			if err != nil {
				return nil, err
			}
			if stop != nil {
				end = stop
				break
			}
			queue = queue[1:]
			if answered {
				continue
			}
			d.markStarted(e, t)
			starting = append(starting, e)
			if t.Exclusive {
				alone = true
			}
		}
		if len(starting) > 0 {
			delta := state.Delta{Journal: make([]state.JournalEntry, len(starting))}
			for i, e := range starting {
				delta.Journal[i] = *e
			}
			if err := d.save(ctx, delta); err != nil {
				return nil, err
			}
			failpoint.Hit("after-started")
			for _, e := range starting {
				d.r.observe(Event{Kind: EventToolStart, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool})
				began[e] = d.r.now()
				d.launch(ctx, e, d.r.exposed[e.Tool], ends, handed, quit)
				running++
			}
			// A denied call may be next: answered at once, not
			// after one of these calls ends.
			continue
		} else if running > 0 && len(d.held) > 0 {
			// Results in hand while other calls still run are saved
			// now, not kept until those end.
			if err := d.save(ctx, state.Delta{}); err != nil {
				return nil, err
			}
		}
		if running == 0 {
			return end, nil
		}
		// Wait for one call to end (journaling a task id a call hands
		// over meanwhile), then take every other that has.
		var c callEnd
		select {
		case c = <-ends:
		case h := <-handed:
			err := d.saveHandle(ctx, h.e, h.id)
			h.done <- err
			if err != nil {
				return nil, err
			}
			continue
		}
		for {
			running--
			if c.t.Exclusive {
				alone = false
			}
			unknownOutcome, stop := d.callEnded(ctx, c, d.r.now().Sub(began[c.e]))
			if unknownOutcome {
				*unknown = append(*unknown, c.e)
			}
			if stop != nil && end == nil {
				end = stop
			}
			select {
			case c = <-ends:
				continue
			default:
			}
			break
		}
	}
}

// prepare applies to e, about to start, the checks made before each
// execution (docs/reference/runtime.md#call-order, step 4), in order. It
// returns answered when e was completed without running (a person's edit
// that no longer passes the checks, a tool with no implementation here;
// the answer is held for the drive's next write), or stop, how the run
// stops instead of starting e.
func (d *driver) prepare(ctx context.Context, e *state.JournalEntry, t *ir.Tool) (answered bool, stop func() (step, error), err error) {
	switch {
	case d.stopRequested():
		return false, func() (step, error) { return d.interrupted(ctx) }, nil
	case d.deadlinePassed():
		return false, func() (step, error) { return d.timedOut(ctx, state.Delta{}) }, nil
	}
	b := d.st.Config.Budgets
	retry := len(e.Inputs) > 0 // counted when it was first sent
	if b.MaxTokens > 0 && d.st.Usage.TotalTokens > b.MaxTokens {
		why := fmt.Sprintf("the run used %d tokens (--max-tokens %d); call %s was not executed", d.st.Usage.TotalTokens, b.MaxTokens, e.CallID)
		return false, func() (step, error) { return d.exhausted(ctx, why) }, nil
	}
	if b.MaxToolCalls > 0 && d.st.Usage.ToolCalls >= b.MaxToolCalls && !retry {
		why := fmt.Sprintf("the run executed %d tool calls (--max-tool-calls %d); call %s was not executed", d.st.Usage.ToolCalls, b.MaxToolCalls, e.CallID)
		return false, func() (step, error) { return d.exhausted(ctx, why) }, nil
	}
	if t == nil {
		return false, func() (step, error) {
			if err := d.flushHeld(ctx); err != nil {
				return stepStop, err
			}
			return stepStop, &Error{Code: CodeInternal, Message: fmt.Sprintf("call %s names tool %q, which this agent does not expose", e.CallID, e.Tool)}
		}, nil
	}
	if e.ApprovedArguments != nil {
		// A person's edit was checked when it was recorded; it is
		// checked again against this program and policy, since what
		// the store says is no authority.
		if _, err := d.r.CheckEdit(e, d.r.toolDir(d.st), e.ApprovedArguments); err != nil {
			d.answer(e, "error: the arguments a person approved this call with do not pass the checks now, so it was not executed: "+err.Error(), "refused")
			return true, nil, nil
		}
	}
	if t.Sandbox {
		if err := d.sandboxAvailable(); err != nil {
			msg := fmt.Sprintf("tool %s declares sandbox: true, but no isolation backend works here: %v; call %s was not executed, and the run can be resumed once a backend works",
				t.Name, err, e.CallID)
			return false, func() (step, error) {
				return d.finish(ctx, state.StatusFailed, &state.RunError{Code: CodeSandboxUnavailable, Message: msg}, state.Delta{})
			}, nil
		}
	}
	if t.Body.Kind == ir.BodySchema {
		// A schema-only tool block declares a tool without an
		// implementation: the model is told so, and nothing runs.
		d.answer(e, fmt.Sprintf("error: tool %s has no implementation in this program (it is declared by a schema-only tool block); nothing was executed", t.Name), "not_executed")
		return true, nil, nil
	}
	if d.r.executors[t.Body.Kind] == nil {
		// Known before anything ran: answer the model.
		d.answer(e, fmt.Sprintf("error: tool %s (%s body) cannot be executed by this build", t.Name, t.Body.Kind), "not_executed")
		return true, nil, nil
	}
	return false, nil, nil
}

// markStarted moves e to started in the run (not yet saved): the write
// that saves it comes before its tool is invoked.
func (d *driver) markStarted(e *state.JournalEntry, t *ir.Tool) {
	now := d.r.now().UTC()
	e.Stage = state.StageStarted
	e.StartedAt = &now
	// Known before the call: a sandboxed tool runs isolated or not at all.
	e.Sandboxed = t.Sandbox && t.Body.Kind == ir.BodyPython
	e.Attempts++
	if len(e.Inputs) == 0 {
		// The retry of a call that asked for input is the same call.
		d.st.Usage.ToolCalls++
	}
	if d.st.Status != state.StatusRunning {
		d.st.Status = state.StatusRunning
		d.st.Error = nil
	}
	if d.r.reachesStore(t) {
		d.verify = true
	}
}

// invocation builds the invocation of e's tool t, on the driver's
// goroutine, so that the goroutine calling the executor reads nothing of
// the run. lines, nil when the runner has no tool log, is the call's way
// into it, flushed once the executor returns.
func (d *driver) invocation(e *state.JournalEntry, t *ir.Tool) (inv tool.Invocation, lines *lineWriter) {
	timeout := time.Duration(t.Timeout) * time.Second
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	deadlineBound := false
	if dl := d.st.Config.Deadline; dl != nil {
		if left := dl.Sub(d.r.now()); left < timeout {
			timeout, deadlineBound = left, true
		}
	}
	inv = tool.Invocation{
		RunID:     d.st.ID,
		CallID:    e.CallID,
		Tool:      t,
		Arguments: e.RunArguments(),
		WorkDir:   d.r.toolDir(d.st),
		Secrets:   d.r.secrets,
		Timeout:   timeout,
		HTTPAllow: d.r.agent.HTTPAllow,

		DeadlineBound: deadlineBound,
		DeadlineIn:    d.deadlineIn(),
		Stop:          d.r.stop,
		Input:         retryInput(e),
	}
	if d.toolOut != nil {
		lines = &lineWriter{w: d.toolOut}
		inv.Log = lines
	}
	return inv, lines
}

// launch invokes the executor of e, whose started is saved, in a
// goroutine of its own, and sends what it answered on ends.
func (d *driver) launch(ctx context.Context, e *state.JournalEntry, t *ir.Tool, ends chan<- callEnd, handed chan<- handOff, quit <-chan struct{}) {
	inv, lines := d.invocation(e, t)
	exec := d.r.executors[t.Body.Kind]
	_, resumer := exec.(tool.Resumer)
	if resumer {
		inv.Handed = func(id string) error {
			h := handOff{e: e, id: id, done: make(chan error, 1)}
			select {
			case handed <- h:
				return <-h.done
			case <-quit:
				return errors.New("the run stopped before the task id could be journaled")
			}
		}
	}
	go func() {
		tctx, cancel := context.WithTimeout(ctx, inv.Timeout)
		defer cancel()
		if resumer {
			// It bounds its request by Timeout itself: a task it is
			// handed runs on until the run's deadline.
			tctx = ctx
		}
		out, err := exec.Execute(tctx, inv)
		if lines != nil {
			lines.Flush()
		}
		failpoint.Hit("before-result-saved")
		ends <- callEnd{e: e, t: t, out: out, err: err}
	}()
}

// callEnded records what the executor of a call answered: a known result
// is held for the drive's next write (driver.held); an unknown outcome
// leaves the entry started, and callEnded reports true. stop, when set,
// is how the run stops: the executor stopped waiting for the call's task,
// whose id is journaled, and a resume polls it again.
func (d *driver) callEnded(ctx context.Context, c callEnd, elapsed time.Duration) (unknown bool, stop func() (step, error)) {
	e, t, out, err := c.e, c.t, c.out, c.err
	if e.TaskID != "" && errors.Is(err, tool.ErrDetached) {
		return false, func() (step, error) { return d.leave(ctx, e, err) }
	}
	if e.ApprovedArguments != nil {
		out.Output = editNote(e) + out.Output
	}
	// A call handed to a server's task has started there: it can
	// neither have not run nor be sent again with input, so those
	// answers do not apply to it.
	handed := e.TaskID != ""
	switch {
	case err == nil && out.Input != nil && !handed:
		// Its server asked for input: journaled in the drive's next
		// write, and the call waits for a person's answer.
		d.askInput(e, out.Input)
		return false, nil
	case err == nil:
		outcome := "ok"
		if !out.Success {
			outcome = "error"
		}
		e.Structured = d.structured(out)
		d.hold(e, out.Success, out.Output, "executed", out.Sandboxed,
			Event{Kind: EventToolDone, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool, Outcome: outcome, Duration: elapsed})
		return false, nil
	case notExecuted(err) && !handed:
		d.hold(e, false, fmt.Sprintf("error: tool %s could not be started: %v", t.Name, err), "not_executed", false,
			Event{Kind: EventToolDone, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool, Outcome: "error", Duration: elapsed, Err: err})
		return false, nil
	default:
		// ErrUnknownOutcome, or an executor failure we cannot
		// interpret: either way nobody knows whether the effect
		// happened, so the entry stays started.
		d.r.observe(Event{Kind: EventToolDone, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool, Outcome: "unknown", Duration: elapsed, Err: err})
		return true, nil
	}
}

// pastAgentCap says why e may not execute when it belongs to a tool round
// beyond the agent's max_tool_calls. Tools are withdrawn from the request
// once the rounds are used up, but a model can still reply with calls; a
// cap is a cap, so those calls never execute.
func (d *driver) pastAgentCap(e *state.JournalEntry) string {
	limit := d.r.agent.MaxToolCalls
	if limit <= 0 {
		return ""
	}
	if round := d.roundOf(e.CallID); round <= limit {
		return ""
	}
	return fmt.Sprintf("agent %s allows %d tool round(s) (max_tool_calls: %d), and the model asked for more after its tools were withdrawn; call %s was not executed",
		d.r.agent.Name, limit, limit, e.CallID)
}

// roundOf is the tool round (1-based) whose reply asked for the call, or 0
// when no reply did.
func (d *driver) roundOf(callID string) int {
	if last := d.st.Messages[len(d.st.Messages)-1]; last.Role == state.RoleAssistant {
		// The usual case, answered without a scan: a call of the
		// latest reply, which is the run's latest round.
		for _, c := range last.ToolCalls {
			if c.ID == callID {
				return d.rounds
			}
		}
	}
	round := 0
	for _, m := range d.st.Messages {
		if m.Role != state.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		round++
		for _, c := range m.ToolCalls {
			if c.ID == callID {
				return round
			}
		}
	}
	return 0
}

func (d *driver) sandboxAvailable() error {
	if d.r.sandboxOK == nil {
		return errors.New("this build has no sandbox backend")
	}
	return d.r.sandboxOK()
}

// deny completes a call the operator or a policy rule refused, without
// executing it.
func (d *driver) deny(ctx context.Context, e *state.JournalEntry) error {
	now := d.r.now().UTC()
	e.Stage = state.StageCompleted
	e.Outcome = "denied"
	e.Success = false
	e.Result = "denied by the operator"
	if rule, ok := strings.CutPrefix(e.DecidedBy, PolicyPrefix); ok {
		e.Result = "denied by policy rule " + rule
	}
	if e.Reason != "" {
		e.Result += ": " + e.Reason
	}
	e.CompletedAt = &now
	d.st.Usage.RefusedCalls++
	if err := d.saveResult(ctx, e); err != nil {
		return err
	}
	d.r.observe(Event{Kind: EventToolDone, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool, Outcome: "denied"})
	return nil
}

// answer completes e without running it, with an error result for the
// model, held for the drive's next write like a tool's result.
func (d *driver) answer(e *state.JournalEntry, output, outcome string) {
	d.setResult(e, false, output, outcome, false)
	d.held = append(d.held, heldResult{entry: *e, silent: true})
}

// hold records a known result of a call in the run and holds it for the
// drive's next write (driver.held); done is observed once it is saved.
func (d *driver) hold(e *state.JournalEntry, success bool, output, outcome string, sandboxed bool, done Event) {
	d.setResult(e, success, output, outcome, sandboxed)
	d.held = append(d.held, heldResult{entry: *e, done: done})
}

func (d *driver) setResult(e *state.JournalEntry, success bool, output, outcome string, sandboxed bool) {
	now := d.r.now().UTC()
	e.Stage = state.StageCompleted
	e.Success = success
	e.Result = d.r.redact(output)
	e.Outcome = outcome
	e.Sandboxed = sandboxed
	e.CompletedAt = &now
}

// notExecuted reports whether an executor said that nothing ran: our own
// sentinel, or an error with a NotStarted method (executors that the runtime
// cannot import, such as the Python one, use that).
func notExecuted(err error) bool {
	if errors.Is(err, tool.ErrNotExecuted) {
		return true
	}
	var ns interface{ NotStarted() bool }
	return errors.As(err, &ns) && ns.NotStarted()
}

// decidedEvent reports the decision recorded on e (EventCallDecided).
func decidedEvent(runID string, e *state.JournalEntry) Event {
	ev := Event{Kind: EventCallDecided, RunID: runID, CallID: e.CallID, Tool: e.Tool, By: e.DecidedBy, Reason: e.Reason}
	switch {
	case e.Outcome == "expired":
		ev.Decision = "expired"
	case e.Decision != nil && *e.Decision:
		ev.Decision = "approved"
	default:
		ev.Decision = "denied"
	}
	return ev
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/failpoint"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
)

// runCalls takes every open journal entry of the latest reply as far as
// policy allows: approval-free and approved calls execute, denied ones are
// answered, pending ones wait, started ones are unknown.
func (d *driver) runCalls(ctx context.Context, open []*state.JournalEntry) (step, error) {
	var pending, unknown []*state.JournalEntry
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
		case e.Pending():
			pending = append(pending, e)
			continue
		case e.Decision != nil && !*e.Decision:
			if err := d.deny(ctx, e); err != nil {
				return stepStop, err
			}
			continue
		}
		if len(unknown) > 0 {
			// After an unknown outcome nothing more of this reply
			// runs: the operator settles it first.
			continue
		}
		if d.stopRequested() {
			return d.finish(ctx, state.StatusInterrupted, &state.RunError{Code: CodeInterrupted, Message: "interrupted by a signal; the run can be resumed"}, state.Delta{})
		}
		if d.deadlinePassed() {
			return d.timedOut(ctx, state.Delta{})
		}
		if b := d.st.Config.Budgets; b.MaxTokens > 0 && d.st.Usage.TotalTokens > b.MaxTokens {
			return d.exhausted(ctx, fmt.Sprintf("the run used %d tokens (--max-tokens %d); call %s was not executed", d.st.Usage.TotalTokens, b.MaxTokens, e.CallID))
		}
		if b := d.st.Config.Budgets; b.MaxToolCalls > 0 && d.st.Usage.ToolCalls >= b.MaxToolCalls {
			return d.exhausted(ctx, fmt.Sprintf("the run executed %d tool calls (--max-tool-calls %d); call %s was not executed", d.st.Usage.ToolCalls, b.MaxToolCalls, e.CallID))
		}
		if t == nil {
			if err := d.flushHeld(ctx); err != nil {
				return stepStop, err
			}
			return stepStop, &Error{Code: CodeInternal, Message: fmt.Sprintf("call %s names tool %q, which this agent does not expose", e.CallID, e.Tool)}
		}
		if e.ApprovedArguments != nil {
			// A person's edit was checked when it was recorded; it is
			// checked again against this program and policy, since
			// what the store says is no authority.
			if _, err := d.r.CheckEdit(e, d.r.toolDir(d.st), e.ApprovedArguments); err != nil {
				if err := d.completeEntry(ctx, e, false, "error: the arguments a person approved this call with do not pass the checks now, so it was not executed: "+err.Error(), "refused", false); err != nil {
					return stepStop, err
				}
				continue
			}
		}
		if t.Sandbox {
			if err := d.sandboxAvailable(); err != nil {
				return d.finish(ctx, state.StatusFailed, &state.RunError{Code: CodeSandboxUnavailable, Message: fmt.Sprintf(
					"tool %s declares sandbox: true, but no isolation backend works here: %v; call %s was not executed, and the run can be resumed once a backend works",
					t.Name, err, e.CallID)}, state.Delta{})
			}
		}
		known, err := d.execute(ctx, e, t)
		if err != nil {
			var left *leftError
			if errors.As(err, &left) {
				return d.leave(ctx, e, left.err)
			}
			return stepStop, err
		}
		if !known {
			unknown = append(unknown, e)
			if d.deadlinePassed() {
				return d.timedOut(ctx, state.Delta{})
			}
		}
	}
	if len(unknown) > 0 {
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
	if len(pending) > 0 {
		waiting := make([]Event, len(pending))
		for i, e := range pending {
			risk := e.Risk
			if t := d.r.exposed[e.Tool]; t != nil && risk == "" {
				risk = t.Risk
			}
			waiting[i] = Event{Kind: EventCallPending, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool,
				Arguments: e.Arguments, Risk: risk, ExpiresAt: e.ExpiresAt}
		}
		return d.finish(ctx, state.StatusWaitingApproval, nil, state.Delta{}, waiting...)
	}
	if err := d.flushHeld(ctx); err != nil {
		return stepStop, err
	}
	return stepContinue, nil
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

// execute runs one call under the journal protocol: started is saved before
// the executor is called, the result is saved before anything else happens.
// It reports false when the outcome is unknown (the entry stays started).
func (d *driver) execute(ctx context.Context, e *state.JournalEntry, t *ir.Tool) (bool, error) {
	exec := d.r.executors[t.Body.Kind]
	if t.Body.Kind == ir.BodySchema {
		// A schema-only tool block declares a tool without an
		// implementation: the model is told so, and nothing runs.
		return true, d.completeEntry(ctx, e, false, fmt.Sprintf("error: tool %s has no implementation in this program (it is declared by a schema-only tool block); nothing was executed", t.Name), "not_executed", false)
	}
	if exec == nil {
		// Known before anything ran: answer the model.
		return true, d.completeEntry(ctx, e, false, fmt.Sprintf("error: tool %s (%s body) cannot be executed by this build", t.Name, t.Body.Kind), "not_executed", false)
	}
	now := d.r.now().UTC()
	e.Stage = state.StageStarted
	e.StartedAt = &now
	// Known before the call: a sandboxed tool runs isolated or not at all.
	e.Sandboxed = t.Sandbox && t.Body.Kind == ir.BodyPython
	e.Attempts++
	d.st.Usage.ToolCalls++
	if d.st.Status != state.StatusRunning {
		d.st.Status = state.StatusRunning
		d.st.Error = nil
	}
	if err := d.save(ctx, state.Delta{Journal: []state.JournalEntry{*e}}); err != nil {
		return false, err
	}
	failpoint.Hit("after-started")
	d.r.observe(Event{Kind: EventToolStart, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool})

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
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, resumer := exec.(tool.Resumer)
	if resumer {
		// It bounds its request by Timeout itself: a task it is
		// handed runs on until the run's deadline.
		tctx = ctx
	}
	var handedErr error
	inv := tool.Invocation{
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
	}
	if resumer {
		inv.Handed = func(handle string) error {
			handedErr = d.saveHandle(ctx, e, handle)
			return handedErr
		}
	}
	if d.log != nil {
		inv.Log = d.log
	}
	if d.r.reachesStore(t) {
		d.verify = true
	}
	began := d.r.now()
	out, err := exec.Execute(tctx, inv)
	elapsed := d.r.now().Sub(began)
	if handedErr != nil {
		return false, handedErr
	}
	if e.TaskID != "" && errors.Is(err, tool.ErrDetached) {
		return false, &leftError{err}
	}
	failpoint.Hit("before-result-saved")
	// A known result is held for the drive's next write: the started of
	// the reply's next call, or the write that closes the round or stops
	// the run (runCalls), whichever comes first (docs/runs.md).
	if e.ApprovedArguments != nil {
		out.Output = editNote(e) + out.Output
	}
	switch {
	case err == nil:
		outcome := "ok"
		if !out.Success {
			outcome = "error"
		}
		e.Structured = d.structured(out)
		d.hold(e, out.Success, out.Output, "executed", out.Sandboxed,
			Event{Kind: EventToolDone, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool, Outcome: outcome, Duration: elapsed})
		return true, nil
	case notExecuted(err):
		d.hold(e, false, fmt.Sprintf("error: tool %s could not be started: %v", t.Name, err), "not_executed", false,
			Event{Kind: EventToolDone, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool, Outcome: "error", Duration: elapsed, Err: err})
		return true, nil
	default:
		// ErrUnknownOutcome, or an executor failure we cannot
		// interpret: either way nobody knows whether the effect
		// happened, so the entry stays started.
		d.r.observe(Event{Kind: EventToolDone, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool, Outcome: "unknown", Duration: elapsed, Err: err})
		return false, nil
	}
}

// completeEntry records a known result of a call and saves it.
func (d *driver) completeEntry(ctx context.Context, e *state.JournalEntry, success bool, output, outcome string, sandboxed bool) error {
	d.setResult(e, success, output, outcome, sandboxed)
	return d.saveResult(ctx, e)
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

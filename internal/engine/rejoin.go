package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nexa-run/nexa/internal/failpoint"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tool"
)

// Calls handed to a server's task (docs/reference/runtime.md#tasks): the
// executor gives the task's id to Invocation.Handed, which saves it in the
// started entry before the executor waits for anything; a later drive finds
// the entry started with its task id and asks the executor (tool.Resumer)
// to poll the task again rather than calling the outcome unknown.

// saveHandle journals the task id of a started call, then stops at the
// failpoint after-task-saved.
func (d *driver) saveHandle(ctx context.Context, e *state.JournalEntry, handle string) error {
	if handle == "" {
		return fmt.Errorf("call %s: the executor handed an empty task id", e.CallID)
	}
	e.TaskID = handle
	if err := d.save(ctx, state.Delta{Journal: []state.JournalEntry{*e}}); err != nil {
		return err
	}
	failpoint.Hit("after-task-saved")
	return nil
}

// deadlineIn is the time left before the run's deadline, zero when it has
// none.
func (d *driver) deadlineIn() time.Duration {
	if dl := d.st.Config.Deadline; dl != nil {
		return max(dl.Sub(d.r.now()), time.Nanosecond)
	}
	return 0
}

// structured is an outcome's structured result as the journal keeps it:
// redacted like the text, and dropped when redaction left it no JSON
// (the text still carries it).
func (d *driver) structured(out tool.Outcome) json.RawMessage {
	if len(out.Structured) == 0 {
		return nil
	}
	b := []byte(d.r.redact(string(out.Structured)))
	if !json.Valid(b) {
		return nil
	}
	return b
}

// leave stops the drive after the executor stopped waiting for the task of
// e: interrupted when the run was asked to stop, else failed (mcp_error);
// both resumable, and the resume polls the task again.
func (d *driver) leave(ctx context.Context, e *state.JournalEntry, err error) (step, error) {
	if d.stopRequested() {
		return d.finish(ctx, state.StatusInterrupted, &state.RunError{Code: CodeInterrupted, Message: fmt.Sprintf(
			"interrupted by a signal while waiting for task %s of call %s; it goes on at the server, and a resume polls it again", e.TaskID, e.CallID)}, state.Delta{})
	}
	return d.finish(ctx, state.StatusFailed, &state.RunError{Code: CodeMCPError, Message: err.Error()}, state.Delta{})
}

// rejoin polls the task of a started entry again and holds its result.
// done is false when the outcome is unknown after all: nothing can poll the
// task (the tool is gone, or its executor is no Resumer), or the executor
// says so (the server no longer knows the task); the entry stays started
// and runCalls lists it.
func (d *driver) rejoin(ctx context.Context, e *state.JournalEntry, t *ir.Tool) (step, bool, error) {
	if t == nil {
		return stepContinue, false, nil
	}
	res, ok := d.r.executors[t.Body.Kind].(tool.Resumer)
	if !ok {
		return stepContinue, false, nil
	}
	if d.stopRequested() {
		s, err := d.interrupted(ctx)
		return s, true, err
	}
	if d.st.Status != state.StatusRunning {
		d.st.Status = state.StatusRunning
		d.st.Error = nil
		if err := d.save(ctx, state.Delta{}); err != nil {
			return stepStop, true, err
		}
	}
	d.r.observe(Event{Kind: EventToolStart, RunID: d.st.ID, CallID: e.CallID, Tool: e.Tool})
	inv, lines := d.invocation(e, t)
	began := d.r.now()
	out, err := res.Resume(ctx, inv, e.TaskID)
	if lines != nil {
		lines.Flush()
	}
	elapsed := d.r.now().Sub(began)
	failpoint.Hit("before-result-saved")
	unknown, stop := d.callEnded(ctx, callEnd{e: e, t: t, out: out, err: err}, elapsed)
	if stop != nil {
		s, err := stop()
		return s, true, err
	}
	return stepContinue, !unknown, nil
}

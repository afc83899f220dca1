package tool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
)

// ErrNotExecuted is returned (wrapped) by an executor that could not start
// the tool at all (interpreter missing, file unreadable): nothing ran, so the
// outcome is known and is reported to the model as an error result.
var ErrNotExecuted = errors.New("tool was not executed")

// ErrUnknownOutcome is returned (possibly wrapped) by an executor when it
// cannot know whether the tool's effect happened: killed by a timeout or the
// deadline, a broken connection after a request was sent, or a tool that
// said so itself. The journal entry then stays started.
var ErrUnknownOutcome = errors.New("tool outcome unknown")

// ErrDetached is returned (wrapped) by an executor that stopped waiting for
// a call whose work goes on elsewhere under a handle it already gave to
// Invocation.Handed (an MCP server's task): the run was asked to stop, or
// the connection to the server was lost while polling. The outcome is not
// unknown: the journal entry stays started with its handle, and a resume
// asks the executor (Resumer) to pick the call up again.
var ErrDetached = errors.New("tool call left running under a journaled handle")

// Invocation is one execution of one tool call.
type Invocation struct {
	RunID     string
	CallID    string
	Tool      *ir.Tool
	Arguments json.RawMessage
	// WorkDir is the run's working directory; tools run there.
	WorkDir string
	// Secrets are the loaded secrets (never persisted), visible to Python
	// tools through nexa_secrets.
	Secrets map[string]string
	// Timeout bounds this execution (the tool's timeout, cut to the time
	// left before the deadline).
	Timeout time.Duration
	// DeadlineBound says that Timeout is the time left before the run's
	// deadline, shorter than the tool's own timeout: a call cut off then
	// was stopped by the deadline, and messages must say so (and only
	// then).
	DeadlineBound bool
	// Log receives whatever the tool prints.
	Log io.Writer
	// HTTPAllow are the internal hosts the agent lets std.http reach
	// (ir.Agent.HTTPAllow); every other internal address is refused.
	HTTPAllow []string
	// DeadlineIn is the time left before the run's deadline when the call
	// began (zero when the run has none). Most executors need only
	// Timeout; an executor that waits for work handed to a server (a
	// Resumer) is bounded by the deadline alone once it has a handle.
	DeadlineIn time.Duration
	// Stop is closed when the run is asked to stop after its current step
	// (a first Ctrl-C). An executor waiting on work that goes on without
	// it (a Resumer polling a task) may stop waiting then and return an
	// error wrapping ErrDetached; others ignore it. Nil never closes.
	Stop <-chan struct{}
	// Handed saves a handle with which a later process can pick the call
	// up (Resumer.Resume): the journal entry's task_id. An executor calls
	// it at most once, as soon as it has the handle and before it waits
	// for anything; when it returns an error the handle may not be
	// saved, and the executor returns that error at once. Nil when the
	// caller cannot save handles.
	Handed func(handle string) error
	// Input, when set, is the answered input round of an earlier attempt
	// of this call (its server asked for input, a person answered): the
	// executor sends the same request again with the round's responses
	// and request state (docs/reference/runtime.md#input-requests).
	Input *state.InputRound
}

// IdempotencyKey is the key external systems can use to drop a duplicate
// side effect: RUN_ID:CALL_ID.
func (inv *Invocation) IdempotencyKey() string { return inv.RunID + ":" + inv.CallID }

// Outcome is a known result of an execution. Success false is an ordinary
// tool error whose text goes to the model.
type Outcome struct {
	Output    string
	Success   bool
	Sandboxed bool
	// Structured is the tool's structured result (an MCP tool's
	// structuredContent, checked against its output schema), kept in the
	// journal beside Output, which already carries it for the model. Nil
	// when the tool gave none.
	Structured json.RawMessage
	// Input, when set, says that the tool did not complete: its server
	// asked for input first (an MCP input_required answer). Nothing else
	// of the outcome counts; the runtime journals the request and waits
	// for a person's answer, then runs the call again with it
	// (Invocation.Input). Server and AskedAt are the runtime's to fill.
	Input *state.InputRound
}

// Executor runs tools of one body kind.
type Executor interface {
	Execute(ctx context.Context, inv Invocation) (Outcome, error)
}

// StoreReacher is an Executor that knows whether a call of a tool can
// write to the run store behind nexa's back: a process running with the
// user's rights can, a Go interpreter with no file access or a process in
// the sandbox cannot. Such a call makes the save that stops the drive
// check the whole store (state.Delta.Verify). An Executor that does not
// implement it is taken to reach the store: the check is the safe side.
type StoreReacher interface {
	ReachesStore(t *ir.Tool) bool
}

// Prechecker is an Executor that can tell from a call's arguments alone,
// without acting, that the tool would refuse it (a file path outside the
// working directory, say). The runtime asks before the approval policy: such
// a call is answered to the model at once, journaled completed with success
// false, and never shown to a person as pending.
type Prechecker interface {
	// Precheck returns the reason for refusal, worded for the model, or
	// nil. It must not have side effects.
	Precheck(inv Invocation) error
}

// Resumer is an Executor that can pick up a call an earlier process handed
// to a server and journaled under a handle (Invocation.Handed), instead of
// leaving it an unknown outcome: for an MCP tool, it polls the server's
// task until it ends. The runtime asks it for a started journal entry that
// carries a handle; an entry without one stays unknown.
type Resumer interface {
	// Resume waits for the call's work under handle and returns its
	// outcome, with the errors of Execute (ErrUnknownOutcome when the
	// server no longer knows the handle, ErrDetached when it stops waiting
	// again). It never starts the work anew.
	Resume(ctx context.Context, inv Invocation, handle string) (Outcome, error)
}

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/nexa-run/nexa/internal/compile"
)

// ErrUnknownOutcome is returned (possibly wrapped) by an executor when it
// cannot know whether the tool's effect happened: killed by a timeout or the
// deadline, a broken connection after a request was sent, or a tool that
// said so itself. The journal entry then stays started.
var ErrUnknownOutcome = errors.New("tool outcome unknown")

// Invocation is one execution of one tool call.
type Invocation struct {
	RunID     string
	CallID    string
	Tool      *compile.Tool
	Arguments json.RawMessage
	// WorkDir is the run's working directory; tools run there.
	WorkDir string
	// Secrets are the loaded secrets (never persisted), visible to Python
	// tools through nexa_secrets.
	Secrets map[string]string
	// Timeout bounds this execution (the tool's timeout, cut to the time
	// left before the deadline).
	Timeout time.Duration
	// Log receives whatever the tool prints.
	Log io.Writer
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
}

// Executor runs tools of one body kind.
type Executor interface {
	Execute(ctx context.Context, inv Invocation) (Outcome, error)
}

// Refuser is implemented by executors that can tell from a call's arguments
// alone that they will refuse it (std.fs refuses paths outside the working
// directory and nexa's own files). The runtime asks when it journals a
// call, before the call could wait for approval, and answers a refused call
// at once: nobody is asked to approve a call that cannot run. An empty
// string means the call may run; the executor checks again then.
type Refuser interface {
	Refusal(inv Invocation) string
}

package native

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"path/filepath"

	"github.com/nexa-run/nexa/internal/ir"
)

// Executor interprets native tool bodies (ir.BodyNative) in-process.
// It holds no state between calls, so one Executor serves any number of
// concurrent calls; it exists as a type so that the runtime can register it
// under ir.BodyNative like every other body kind.
type Executor struct{}

// New returns the native executor for the runtime's executor table.
func New() *Executor { return &Executor{} }

var _ tool.Executor = (*Executor)(nil)

// ReachesStore is false: a native body is interpreted in nexa and has no
// file or process access, so it cannot touch the run store.
func (e *Executor) ReachesStore(*ir.Tool) bool { return false }

// Execute runs one call of a native tool. Every way a body can fail while
// running is a known, unsuccessful Outcome (its text goes to the model);
// only a call that did not run at all (no tool, a body of another kind, a
// context already done or done between statements) is an error, and that
// error wraps tool.ErrNotExecuted, never tool.ErrUnknownOutcome: a
// native body is pure, so stopping it part-way leaves no effect behind.
func (e *Executor) Execute(ctx context.Context, inv tool.Invocation) (out tool.Outcome, err error) {
	if inv.Tool == nil {
		return tool.Outcome{}, fmt.Errorf("native executor: invocation has no tool: %w", tool.ErrNotExecuted)
	}
	t := inv.Tool
	if t.Body.Kind != ir.BodyNative {
		return tool.Outcome{}, fmt.Errorf("native executor: tool %s has a %q body, not a native one: %w",
			t.Name, t.Body.Kind, tool.ErrNotExecuted)
	}
	if err := ctx.Err(); err != nil {
		return tool.Outcome{}, notRun(t, err)
	}
	defer func() {
		if r := recover(); r != nil {
			out = tool.Outcome{Output: failure(t, 0, fmt.Sprintf("internal error in the native interpreter: %v", r))}
			err = nil
		}
	}()

	vars, argErr := bindArguments(t, inv.Arguments)
	if argErr != nil {
		return tool.Outcome{Output: failure(t, 0, "invalid arguments: "+argErr.Error())}, nil
	}
	log := inv.Log
	if log == nil {
		log = io.Discard
	}
	m := &machine{ctx: ctx, vars: vars, log: log}
	_, v, runErr := m.block(t.Body.Native)
	if runErr != nil {
		var c *cancelled
		if errors.As(runErr, &c) {
			return tool.Outcome{}, notRun(t, c.err)
		}
		var te *toolError
		if errors.As(runErr, &te) {
			return tool.Outcome{Output: failure(t, te.line, te.msg)}, nil
		}
		return tool.Outcome{Output: failure(t, m.line, runErr.Error())}, nil
	}
	text, fmtErr := formatText(v)
	if fmtErr != nil {
		return tool.Outcome{Output: failure(t, m.line, "cannot format the result: "+fmtErr.Error())}, nil
	}
	if len(text) > MaxText {
		return tool.Outcome{Output: failure(t, m.line, fmt.Sprintf("result longer than %d bytes", MaxText))}, nil
	}
	return tool.Outcome{Output: text, Success: true}, nil
}

// notRun is the error of a call stopped by its context. The body is pure,
// so a stopped call has no effect and counts as not executed.
func notRun(t *ir.Tool, ctxErr error) error {
	return fmt.Errorf("native tool %s stopped before it finished (%w); native bodies are pure, so nothing took effect: %w",
		t.Name, ctxErr, tool.ErrNotExecuted)
}

// failure is the text of an unsuccessful outcome: the tool, where, what.
func failure(t *ir.Tool, line int, msg string) string {
	where := ""
	switch {
	case line > 0 && t.File != "":
		where = fmt.Sprintf(" at line %d of %s", line, filepath.Base(t.File))
	case line > 0:
		where = fmt.Sprintf(" at line %d", line)
	}
	return fmt.Sprintf("error: tool %s failed%s: %s", t.Name, where, msg)
}

// bindArguments makes the initial scope: every argument, then every
// parameter that the arguments lack, bound to nil. Defaults are not filled
// here: the runtime filled them (ir.Tool.FillDefaults) before the call.
func bindArguments(t *ir.Tool, raw json.RawMessage) (map[string]any, error) {
	vars := map[string]any{}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return nil, errors.New("the arguments are not a JSON object")
		}
		v, err := decodeJSON(trimmed)
		if err != nil {
			return nil, err
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, errors.New("the arguments are not a JSON object")
		}
		vars = obj
	}
	for _, p := range t.Params {
		if _, ok := vars[p.Name]; !ok {
			vars[p.Name] = nil
		}
	}
	return vars, nil
}

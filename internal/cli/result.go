package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/runtime"
	"github.com/nexa-run/nexa/internal/runtime/state"
)

// runResult is the one JSON object `nexa agent` prints on stdout.
type runResult struct {
	RunID        *string           `json:"run_id"`
	Status       string            `json:"status,omitempty"`
	Agent        string            `json:"agent,omitempty"`
	Revision     int64             `json:"revision,omitempty"`
	SourceHash   string            `json:"source_hash,omitempty"`
	Output       json.RawMessage   `json:"output"`
	PendingCalls []pendingCall     `json:"pending_calls"`
	UnknownCalls []unknownCall     `json:"unknown_calls"`
	Usage        *state.Usage      `json:"usage,omitempty"`
	Deadline     *time.Time        `json:"deadline"`
	Error        *state.RunError   `json:"error"`
	Resume       map[string]string `json:"resume,omitempty"`
}

type pendingCall struct {
	CallID           string          `json:"call_id"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Description      string          `json:"description"`
	RiskLevel        string          `json:"risk_level"`
	RequiresApproval bool            `json:"requires_approval"`
	Sandbox          bool            `json:"sandbox"`
}

type unknownCall struct {
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	StartedAt *time.Time      `json:"started_at"`
}

// errorResult is the object printed when no run exists (run_id null).
func errorResult(code, msg string) *runResult {
	return &runResult{Output: json.RawMessage("null"), PendingCalls: []pendingCall{}, UnknownCalls: []unknownCall{}, Error: &state.RunError{Code: code, Message: msg}}
}

// resultOf renders a run for the CLI. tool finds a tool's declaration
// for the pending calls' metadata; it may be nil.
//
// flags are the command-line flags that must be repeated on a resume (the
// provider and store the run was started with), already shell-quoted.
func resultOf(st *state.RunState, tool func(string) *compile.Tool, file, flags string) *runResult {
	id := st.ID
	r := &runResult{
		RunID:        &id,
		Status:       string(st.Status),
		Agent:        st.Config.Agent,
		Revision:     st.Revision,
		SourceHash:   st.Config.SourceHash,
		Output:       st.Output,
		PendingCalls: []pendingCall{},
		UnknownCalls: []unknownCall{},
		Deadline:     st.Config.Deadline,
		Error:        st.Error,
	}
	u := st.Usage
	r.Usage = &u
	if len(r.Output) == 0 {
		r.Output = json.RawMessage("null")
	}
	for _, id := range runtime.PendingCallIDs(st) {
		e := st.Entry(id)
		pc := pendingCall{CallID: e.CallID, Tool: e.Tool, Arguments: e.Arguments, RequiresApproval: true, RiskLevel: e.Risk}
		if tool != nil {
			if t := tool(e.Tool); t != nil {
				pc.Description, pc.RiskLevel, pc.RequiresApproval, pc.Sandbox = t.Description, t.Risk, t.RequiresApproval, t.Sandbox
			}
		}
		r.PendingCalls = append(r.PendingCalls, pc)
	}
	for _, e := range runtime.UnknownCalls(st) {
		r.UnknownCalls = append(r.UnknownCalls, unknownCall{CallID: e.CallID, Tool: e.Tool, Arguments: e.Arguments, StartedAt: e.StartedAt})
	}
	r.Resume = resumeCommands(st, file, flags, r)
	return r
}

// resumeCommands are the exact commands that continue a run, so a person or
// script never has to assemble them.
func resumeCommands(st *state.RunState, file, flags string, r *runResult) map[string]string {
	if st.Status.Terminal() {
		return nil
	}
	if file == "" {
		file = st.Config.SourceFile
	}
	base := fmt.Sprintf("nexa agent %s %s --resume %s%s", shellQuote(file), shellQuote(st.Config.Agent), st.ID, flags)
	cmds := map[string]string{}
	switch st.Status {
	case state.StatusWaitingApproval:
		var approve, deny strings.Builder
		approve.WriteString(base)
		deny.WriteString(base)
		for _, p := range r.PendingCalls {
			approve.WriteString(" --approve " + p.CallID)
			deny.WriteString(" --deny " + p.CallID)
		}
		cmds["approve"] = approve.String()
		cmds["deny"] = deny.String()
	case state.StatusUnknownOutcome:
		for i, u := range r.UnknownCalls {
			key := "resolve"
			if i > 0 {
				key = fmt.Sprintf("resolve_%d", i+1)
			}
			cmds[key] = fmt.Sprintf("nexa runs resolve %s %s --output '…' --success=true|false%s", st.ID, u.CallID, storeFlagOnly(flags))
		}
		cmds["resume"] = base
	default:
		cmds["resume"] = base
	}
	return cmds
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// exitCodeFor maps a run's status to the exit code of cli.md.
func exitCodeFor(s state.Status) int {
	switch s {
	case state.StatusCompleted:
		return ExitOK
	case state.StatusWaitingApproval:
		return ExitWaitingApproval
	case state.StatusUnknownOutcome:
		return ExitUnknownOutcome
	case state.StatusTimedOut:
		return ExitTimedOut
	case state.StatusBudgetExhausted:
		return ExitBudgetExhausted
	case state.StatusInterrupted:
		return ExitInterrupted
	}
	return ExitFailed
}

// exitCodeForError maps an error from the runtime to an exit code.
func exitCodeForError(err error) (int, *state.RunError) {
	if e, ok := runtime.AsError(err); ok {
		re := &state.RunError{Code: e.Code, Message: e.Message}
		switch {
		case e.Code == runtime.CodeCheckpointConflict:
			return ExitConflict, re
		case e.Refusal:
			return ExitUsage, re
		}
		return ExitFailed, re
	}
	var ce *state.ConflictError
	if errors.As(err, &ce) {
		return ExitConflict, &state.RunError{Code: runtime.CodeCheckpointConflict, Message: ce.Error()}
	}
	return ExitFailed, &state.RunError{Code: runtime.CodeInternal, Message: err.Error()}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func jsonUnmarshalString(b []byte, s *string) error { return json.Unmarshal(b, s) }

// storeFlagOnly keeps the --store part of resume flags, the only one that
// nexa runs commands take.
func storeFlagOnly(flags string) string {
	if i := strings.Index(flags, " --store "); i >= 0 {
		rest := flags[i+len(" --store "):]
		if j := strings.Index(rest, " --"); j >= 0 {
			rest = rest[:j]
		}
		return " --store " + rest
	}
	return ""
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/resumecmd"
	"github.com/nexa-run/nexa/internal/session"
	"io"
	"os"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
)

// runResult is the one JSON object `nexa agent` prints on stdout.
type runResult struct {
	RunID        *string              `json:"run_id"`
	Status       string               `json:"status,omitempty"`
	Agent        string               `json:"agent,omitempty"`
	Revision     int64                `json:"revision,omitempty"`
	SourceHash   string               `json:"source_hash,omitempty"`
	Output       json.RawMessage      `json:"output"`
	PendingCalls []engine.PendingCall `json:"pending_calls"`
	// PendingInputs are the calls whose MCP server asked for input,
	// waiting for a person's answer (--respond).
	PendingInputs []engine.PendingInput `json:"pending_inputs"`
	UnknownCalls  []engine.UnknownCall  `json:"unknown_calls"`
	// DeniedCalls are the calls the run did not execute because a person
	// or a policy rule refused them, or their wait expired.
	DeniedCalls []engine.DeniedCall `json:"denied_calls"`
	Usage       *state.Usage        `json:"usage,omitempty"`
	Deadline    *time.Time          `json:"deadline"`
	Error       *state.RunError     `json:"error"`
	// Warnings are the compile warnings of the program this command ran
	// (the `d` objects of nexa validate --json), also printed on stderr;
	// [] when there are none or the program was not compiled.
	Warnings []diagJSON        `json:"warnings"`
	Resume   map[string]string `json:"resume,omitempty"`
}

// errorResult is the object printed when no run exists (run_id null).
func errorResult(code, msg string) *runResult {
	return &runResult{Output: json.RawMessage("null"), PendingCalls: []engine.PendingCall{}, PendingInputs: []engine.PendingInput{}, UnknownCalls: []engine.UnknownCall{}, DeniedCalls: []engine.DeniedCall{}, Error: &state.RunError{Code: code, Message: msg}, Warnings: []diagJSON{}}
}

// withWarnings gives res the compile warnings of this command's program,
// once it has been compiled.
func (f *agentFlags) withWarnings(res *runResult) *runResult {
	if f.warnings != nil {
		res.Warnings = f.warnings
	}
	return res
}

// resultOf renders a run for the CLI. tool finds a tool's declaration
// for the pending calls' metadata; it may be nil.
//
// flags are the command-line flags that must be repeated on a resume (the
// provider and store the run was started with), already shell-quoted.
func resultOf(st *state.RunState, tool func(string) *ir.Tool, file, flags string) *runResult {
	id := st.ID
	r := &runResult{
		RunID:      &id,
		Status:     string(st.Status),
		Agent:      st.Config.Agent,
		Revision:   st.Revision,
		SourceHash: st.Config.SourceHash,
		Output:     st.Output,
		Deadline:   st.Config.Deadline,
		Error:      st.Error,
		Warnings:   []diagJSON{},
	}
	u := st.Usage
	r.Usage = &u
	if len(r.Output) == 0 {
		r.Output = json.RawMessage("null")
	}
	r.PendingCalls, r.UnknownCalls = engine.OperatorCalls(st)
	r.PendingInputs = engine.PendingInputs(st)
	r.DeniedCalls = engine.DeniedCalls(context.Background(), nil, st)
	if tool != nil {
		// The program being run is the authority on its tools; the
		// journal's copy of their metadata is what the run recorded.
		for i := range r.PendingCalls {
			pc := &r.PendingCalls[i]
			if t := tool(pc.Tool); t != nil {
				pc.Description, pc.RiskLevel, pc.RequiresApproval, pc.Sandbox = t.Description, t.Risk, t.RequiresApproval, t.Sandbox
			}
		}
	}
	r.Resume = resumecmd.Commands(st, file, flags, r.PendingCalls, r.UnknownCalls)
	return r
}

// hintFlags are the flags the resume hints of a run repeat: the provider
// flags the run recorded when it started (or, for a run from before nexa
// recorded them, fallback: this command's), then --store when this command
// named its store with the flag, already shell-quoted.
func hintFlags(st *state.RunState, fallback []string, storeFlag string) string {
	return resumecmd.Flags(st, fallback, storeFlag)
}

// peekRun loads run id from the store, for a message about a run whose
// command failed before (or without) loading it. It never creates a store
// and returns nil when anything is missing.
func peekRun(e *env, storeFlag, id string) *state.RunState {
	if id == "" || !engine.ValidRunID(id) {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil
	}
	s, err := session.OpenStore(sessionEnv(e), storeFlag, wd, false)
	if err != nil {
		return nil
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	run, err := engine.Show(ctx, s, id)
	if err != nil {
		return nil
	}
	return run
}

// printOnce runs the first print it is given and no other: the command
// prints exactly one object on stdout, even when a second signal and the
// normal end of a run race.
type printOnce struct {
	mu   sync.Mutex
	done bool
}

// do runs print unless something was printed before. The lock is held
// while it prints, so a process that exits right after printing never
// lets a second object start.
func (p *printOnce) do(print func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	print()
}

// stopAtOnce ends the process on a second signal (docs/reference/runtime.md#deadline-budgets-and-signals): it prints
// the run as last saved — a call in flight shows as started, under
// unknown_calls — and exits 130 without waiting for anything else.
func stopAtOnce(e *env, f *agentFlags, st session.Store, runID, file string) {
	msg := "stopped at once by a second signal; the run is as last saved and can be resumed (a call that was running is an unknown outcome)"
	f.stdout.do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res := errorResult(engine.CodeInterrupted, msg)
		if run, err := engine.Show(ctx, st, runID); err == nil {
			res = resultOf(run, nil, file, hintFlags(run, nil, f.store))
			res.Error = &state.RunError{Code: engine.CodeInterrupted, Message: msg}
		}
		f.withWarnings(res)
		if f.output == "text" {
			printTextResult(e.stdout, res)
		} else {
			f.writeResult(e.stdout, res)
		}
		fmt.Fprintf(e.stderr, "nexa: %s\n", msg)
		os.Exit(ExitInterrupted)
	})
	os.Exit(ExitInterrupted)
}

// exitCodeFor maps a run's status to docs/reference/cli.md#exit-codes.
func exitCodeFor(s state.Status) int {
	switch s {
	case state.StatusCompleted, state.StatusQueued:
		// A queued run was submitted as asked (nexa agent --detach).
		return ExitOK
	case state.StatusWaitingApproval, state.StatusWaitingInput:
		// Both wait for a person.
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
	if e, ok := engine.AsError(err); ok {
		re := &state.RunError{Code: e.Code, Message: e.Message}
		switch {
		case e.Code == engine.CodeCheckpointConflict:
			return ExitConflict, re
		case e.Refusal:
			return ExitUsage, re
		}
		return ExitFailed, re
	}
	var ce *state.ConflictError
	if errors.As(err, &ce) {
		return ExitConflict, &state.RunError{Code: engine.CodeCheckpointConflict, Message: ce.Error()}
	}
	return ExitFailed, &state.RunError{Code: engine.CodeInternal, Message: err.Error()}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func jsonUnmarshalString(b []byte, s *string) error { return json.Unmarshal(b, s) }

package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
)

// WorkerDrive continues runs a worker claimed (state.Claimer), through
// the same assembly as nexa agent --resume: the run's program as the
// worker compiled it (same source hash), the provider resolved again from
// the choice the run recorded (never a command line), the run's policy,
// the agent's MCP servers and executors, and Runner.Resume with the
// claimed lease, so the resume checks, the journal protocol, the lease
// renewals and the fencing are nexa agent's. The tools execute in the
// worker's directory, which holds the same program (docs/worker.md).
type WorkerDrive struct {
	Env   Env
	Store Store
	// Dir is the worker's directory: the programs it offers were compiled
	// there, the tools run there, and a relative script provider or a
	// policy inside the run's directory is looked for there.
	Dir string
	// Owner names the worker in its leases.
	Owner string
	// Stop, when closed, asks a driven run to stop at its next safe
	// point (the worker drains); it is then saved interrupted.
	Stop <-chan struct{}
	// Now and LeaseTTL are the engine's clock and lease duration (zero:
	// the engine's).
	Now      func() time.Time
	LeaseTTL time.Duration
	// Observe receives the run's progress events; may be nil.
	Observe func(engine.Event)
	// OnRenew is told the outcome of each lease renewal; may be nil.
	OnRenew func(runID string, err error)
}

// ErrCannotDrive is wrapped by Drive's error when this worker could not
// set the run up, or the resume checks refused it: the run was saved
// failed with the reason (its error object), so no worker takes it again
// until a person looks at it.
var ErrCannotDrive = errors.New("the worker cannot drive the run")

// Drive continues the run whose header (engine.Header) the worker read
// after claiming it with lease l, until it stops, and releases the lease.
// prog is the worker's program with the run's source hash. It returns the
// run as last saved. A run that stops again (waiting for a person, an
// unknown outcome, interrupted by Stop) is not an error.
func (w WorkerDrive) Drive(ctx context.Context, run *state.RunState, l *state.Lease, prog *ir.Program) (*state.RunState, error) {
	runID := run.ID
	sess, runner, err := w.setup(ctx, run, l, prog)
	if err != nil {
		release(w.Store, runID, l)
		return run, w.fail(runID, err)
	}
	defer sess.Close()
	c := run.Config
	// A worker is not bound to the run's directory (the program's hash
	// is): the request presents the run's own, so the working-directory
	// check of nexa agent --resume passes, and the tools run in Dir.
	req := engine.ResumeRequest{SourceHash: prog.Hash, Agent: c.Agent, Provider: sess.Identity(),
		WorkDir: c.WorkDir, MCPServers: sess.MCPServers(), Policy: sess.PolicyRef()}
	ctx, end := sess.Segment(ctx, runID)
	st, err := runner.Resume(ctx, engine.ResumeOptions{RunID: runID, Request: req, Held: l})
	end(st, err)
	if re, ok := engine.AsError(err); ok && re.Refusal {
		return st, w.fail(runID, err)
	}
	return st, err
}

// setup assembles the session and runner of run (its header).
func (w WorkerDrive) setup(ctx context.Context, run *state.RunState, l *state.Lease, prog *ir.Program) (*Session, *engine.Runner, error) {
	runID, c := run.ID, run.Config
	if c.SourceHash != prog.Hash {
		return nil, nil, refuse(engine.CodeSourceChanged, fmt.Sprintf("run %s is of program %s, not the worker's %s", runID, c.SourceHash, prog.Hash))
	}
	if c.Choice == nil {
		return nil, nil, refuse(engine.CodeUsage, fmt.Sprintf("run %s was started by a nexa that did not record its provider choice; continue it with nexa agent %s %s --resume %s", runID, c.SourceFile, c.Agent, runID))
	}
	agent := prog.Agent(c.Agent)
	if agent == nil {
		return nil, nil, refuse(engine.CodeAgentChanged, fmt.Sprintf("run %s: the worker's program declares no agent %s", runID, c.Agent))
	}
	choice := *c.Choice
	if path, ok := strings.CutPrefix(choice.Provider, "script:"); ok {
		choice.Provider = "script:" + w.inDir(c.WorkDir, path)
	}
	policy := ""
	if c.Policy != nil {
		policy = w.inDir(c.WorkDir, c.Policy.Path)
	}
	sess, err := Prepare(Options{Env: w.Env, Program: prog, Agent: agent, Policy: policy,
		Provider: ProviderOptions{Provider: choice.Provider, Model: choice.Model, BaseURL: choice.BaseURL, Resume: true}})
	if err != nil {
		return nil, nil, err
	}
	runner, err := sess.Connect(ctx, RunOptions{Store: w.Store, RunID: runID, WorkDir: w.Dir, ToolDir: w.Dir, Resume: true,
		Stop: w.Stop, NoStream: choice.NoStream, Now: w.Now, LeaseTTL: w.LeaseTTL, Owner: l.Owner, Observe: w.Observe, OnRenew: w.OnRenew})
	if err != nil {
		sess.Close()
		return nil, nil, err
	}
	return sess, runner, nil
}

// inDir maps a path the run recorded to the worker's directory: a path
// inside the run's directory (or relative) is looked for at the same
// place under Dir; any other absolute path is used as it is.
func (w WorkerDrive) inDir(runDir, path string) string {
	if !filepath.IsAbs(path) {
		return filepath.Join(w.Dir, path)
	}
	if rel, err := filepath.Rel(runDir, path); err == nil && filepath.IsLocal(rel) {
		return filepath.Join(w.Dir, rel)
	}
	return path
}

// fail saves the run failed with cause, so no worker claims it again,
// unless it moved on meanwhile (another process holds it, or it is no
// longer claimable). The error returned wraps ErrCannotDrive and cause.
func (w WorkerDrive) fail(runID string, cause error) error {
	code, msg := engine.CodeInternal, cause.Error()
	if re, ok := engine.AsError(cause); ok {
		code, msg = re.Code, re.Message
	}
	if code == engine.CodeCheckpointConflict || code == engine.CodeRunNotFound || code == engine.CodeStoreError {
		return cause // nothing to record: the run moved, or the store failed
	}
	ctx, cancel := context.WithTimeout(context.Background(), engine.LeaseTTL)
	defer cancel()
	l, err := w.Store.Acquire(ctx, runID, w.Owner, engine.LeaseTTL)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCannotDrive, cause)
	}
	defer release(w.Store, runID, l)
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	st, err := engine.Show(ctx, w.Store, runID)
	if err != nil || !state.Claimable(st, now()) {
		return fmt.Errorf("%w: %w", ErrCannotDrive, cause)
	}
	st.Lease = l
	st.Status, st.Error = state.StatusFailed, &state.RunError{Code: code, Message: "a worker could not continue the run: " + msg}
	_ = w.Store.Save(ctx, st, state.Delta{})
	return fmt.Errorf("%w: %w", ErrCannotDrive, cause)
}

// release gives a lease back, bounded like the engine's own release.
func release(s state.Store, id string, l *state.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), engine.LeaseTTL)
	defer cancel()
	_ = s.Release(ctx, id, l)
}

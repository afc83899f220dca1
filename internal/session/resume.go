package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// Resumer continues runs in this process, as `nexa agent FILE AGENT
// --resume RUN` would in the run's working directory: it compiles the
// run's program from its source there, resolves the provider from the
// choice the run recorded (never from a command line), connects the run's
// tools and calls Runner.Resume, which takes the run's lease, so a run
// another executor drives is refused, never driven twice, and the resume
// checks are nexa agent's. nexa serve --execute continues runs with it.
type Resumer struct {
	Env   Env
	Store Store
	// Stop, when closed, asks a run being continued to stop at its next
	// safe point (the server is shutting down).
	Stop <-chan struct{}
}

// Resume continues run; its error says why it could not, in words for
// the server's log. A run that stops again (waiting for a person, an
// unknown outcome) is not an error.
func (r Resumer) Resume(ctx context.Context, run *state.RunState) error {
	c := run.Config
	if c.Choice == nil {
		return fmt.Errorf("run %s was started by a nexa that did not record its provider choice; continue it with nexa agent %s %s --resume %s", run.ID, c.SourceFile, c.Agent, run.ID)
	}
	src := inDir(c.WorkDir, c.SourceFile)
	prog, diags := compile.Compile(src, compile.Options{NexaPath: r.Env.getenv("NEXA_PATH")})
	if prog == nil || diags.HasErrors() {
		return fmt.Errorf("run %s: its program %s does not compile", run.ID, src)
	}
	agent := prog.Agent(c.Agent)
	if agent == nil {
		return fmt.Errorf("run %s: its program %s declares no agent %s", run.ID, src, c.Agent)
	}
	choice := *c.Choice
	if path, ok := strings.CutPrefix(choice.Provider, "script:"); ok {
		choice.Provider = "script:" + inDir(c.WorkDir, path)
	}
	policy := ""
	if c.Policy != nil {
		policy = c.Policy.Path
	}
	sess, err := Prepare(Options{Env: r.Env, Program: prog, Agent: agent, Policy: policy,
		Provider: ProviderOptions{Provider: choice.Provider, Model: choice.Model, BaseURL: choice.BaseURL, Resume: true}})
	if err != nil {
		return err
	}
	defer sess.Close()
	runner, err := sess.Connect(ctx, RunOptions{Store: r.Store, RunID: run.ID, WorkDir: c.WorkDir, Resume: true,
		Stop: r.Stop, NoStream: choice.NoStream})
	if err != nil {
		return err
	}
	req := engine.ResumeRequest{SourceHash: prog.Hash, Agent: agent.Name, Provider: sess.Identity(),
		WorkDir: c.WorkDir, MCPServers: sess.MCPServers(), Policy: sess.PolicyRef()}
	ctx, end := sess.Segment(ctx, run.ID)
	st, err := runner.Resume(ctx, engine.ResumeOptions{RunID: run.ID, Request: req})
	end(st, err)
	return err
}

// inDir is path as seen from dir: itself when absolute.
func inDir(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

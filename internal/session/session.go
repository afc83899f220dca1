package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/prices"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/sqlite"
	"github.com/nexa-run/nexa/internal/tools/mcptool"
)

// Options are what a run of an agent needs to be assembled, typed: an
// entry point maps its flags (or a stored run's record) to them.
type Options struct {
	Env     Env
	Program *ir.Program
	Agent   *ir.Agent
	// StoreFlag names the store as the command was given it (--store),
	// so that its passwords are redacted; "" for NEXA_STORE or the
	// default.
	StoreFlag string
	Provider  ProviderOptions
	// Policy is the policy file's path (--policy, NEXA_POLICY); "" for
	// none.
	Policy string
	// OnRetry reports a provider retry (for progress lines); may be nil.
	OnRetry func(attempt int, err error, delay time.Duration)
	// Prices is a prices file read over the built-in prices (--prices);
	// "" reads NEXA_PRICES, if set.
	Prices string
}

// Session is what Prepare assembled for one run: the secrets and their
// redactor, the provider and the policy. Connect adds the tools and the
// runner; Close stops what they started.
type Session struct {
	env      Env
	prog     *ir.Program
	agent    *ir.Agent
	secrets  *secretSet
	provider *resolvedProvider
	rules    engine.Rules
	choice   state.ProviderChoice

	tools *agentTools
	py    interface{ Close() error }
	// Deadline is the run's deadline as Connect bounded the MCP
	// connections by it: the one a new run will get, or the one it has.
	Deadline *time.Time
}

// refuse is a usage error of the assembly: nothing was written.
func refuse(code, msg string) error { return &engine.Error{Code: code, Message: msg, Refusal: true} }

// Prepare loads the policy, the secrets (the program's secrets files and
// NEXA_SECRETS) and resolves the provider. Its errors are engine errors
// whose message holds no secret.
func Prepare(o Options) (*Session, error) {
	s := &Session{env: o.Env, prog: o.Program, agent: o.Agent,
		choice: state.ProviderChoice{Provider: o.Provider.Provider, Model: o.Provider.Model, BaseURL: o.Provider.BaseURL}}
	if o.Policy != "" {
		r, err := LoadPolicy(o.Policy)
		if err != nil {
			return nil, refuse(engine.CodePolicy, fmt.Sprintf("policy: %v", err))
		}
		s.rules = r
	}
	sec, err := loadSecrets(o.Env, o.Program)
	if err != nil {
		return nil, refuse(engine.CodeUsage, err.Error())
	}
	sec.addSecret(storeSecrets(o.Env, o.StoreFlag)...)
	s.secrets = sec
	onRetry := func(attempt int, err error, delay time.Duration) {
		o.Env.Metrics.ProviderRetried()
		if o.OnRetry != nil {
			o.OnRetry(attempt, err, delay)
		}
	}
	prov, err := resolveProvider(o.Env, o.Provider, o.Program, o.Agent, sec, onRetry)
	if err != nil {
		return nil, refuse(engine.CodeUsage, sec.redact(err.Error()))
	}
	pricesFile := o.Prices
	if pricesFile == "" {
		pricesFile = o.Env.getenv("NEXA_PRICES")
	}
	table, err := prices.Load(pricesFile)
	if err != nil {
		return nil, refuse(engine.CodeUsage, err.Error())
	}
	// Outermost, so that the cost is of the reply the run keeps (failed
	// tries are not counted, as they are not in the usage).
	prov.provider = prices.Wrap(prov.provider, table)
	s.provider = prov
	return s, nil
}

// Redact removes every secret value the session knows (secrets files,
// secret-named environment variables, the provider key, store passwords)
// from text.
func (s *Session) Redact(text string) string {
	if s == nil {
		return text
	}
	return s.secrets.redact(text)
}

// RedactWriter passes what is written to w through Redact; Close flushes
// it.
func (s *Session) RedactWriter(w io.Writer) io.WriteCloser { return s.secrets.redactor.Writer(w) }

// Identity is the provider's identity, compared on resume.
func (s *Session) Identity() state.ProviderIdentity { return s.provider.identity }

// Rules are the policy's rules, or nil.
func (s *Session) Rules() engine.Rules { return s.rules }

// PolicyRef is what a resume presents of its policy, or nil.
func (s *Session) PolicyRef() *state.PolicyRef {
	if s.rules == nil {
		return nil
	}
	ref := s.rules.Ref()
	return &ref
}

// Choice is what chose the provider, for a new run's record.
func (s *Session) Choice() state.ProviderChoice { return s.choice }

// RunOptions are what the runner of a session needs beyond Prepare's.
type RunOptions struct {
	Store   Store
	RunID   string
	WorkDir string
	// Resume says RunID is an existing run (its deadline bounds the MCP
	// connections); Timeout is a new run's --timeout.
	Resume  bool
	Timeout time.Duration
	// Observe receives progress events; Stop asks the run to stop at the
	// next safe point.
	Observe  func(engine.Event)
	Stop     <-chan struct{}
	NoStream bool
	// MaxParallelTools bounds how many calls of one reply run at once
	// (--max-parallel-tools); 0 takes engine.DefaultMaxParallelTools, 1
	// runs them one after another. It is this command's choice, not the
	// run's: a resume may choose otherwise.
	MaxParallelTools int
	// Now and LeaseTTL are the engine's clock and lease duration; zero
	// keeps the engine's.
	Now      func() time.Time
	LeaseTTL time.Duration
	// Owner names the executor in its leases (a worker's, so that its
	// claims and its drives are one owner); empty makes one.
	Owner string
	// OnRenew is told the outcome of each lease renewal (may be nil).
	OnRenew func(runID string, err error)
	// ToolDir, when set, is where the tools execute instead of the run's
	// recorded directory (a worker's directory, docs/worker.md).
	ToolDir string
}

// Connect starts what the run's tools need — the agent's MCP servers,
// bounded by the connect timeout, the run's deadline and ctx, and the
// executors with the files no tool may reach — and returns the runner.
func (s *Session) Connect(ctx context.Context, o RunOptions) (*engine.Runner, error) {
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	s.Deadline = engine.DeadlineFor(now, o.Timeout, s.agent)
	if o.Resume && len(mcpSpecs(s.prog, s.agent)) > 0 { // no servers, no connecting to bound
		if run, err := engine.Header(ctx, o.Store, o.RunID); err == nil {
			s.Deadline = run.Config.Deadline
		}
	}
	mcpLog, err := o.Store.LogFile(o.RunID, sqlite.LogMCP)
	if err != nil {
		return nil, &engine.Error{Code: engine.CodeStoreError, Message: err.Error(), Err: err}
	}
	connectTimeout, err := mcpConnectTimeout(s.env)
	if err != nil {
		return nil, refuse(engine.CodeUsage, err.Error())
	}
	tools, err := connectMCP(ctx, s.prog, s.agent, o.WorkDir, mcpLog, s.env.Version, s.secrets, connectTimeout, s.Deadline)
	if err != nil {
		e := &engine.Error{Code: engine.CodeMCPError, Message: s.Redact(fmt.Sprintf("MCP servers of agent %s: %v", s.agent.Name, err)), Err: err}
		switch {
		case errors.Is(err, mcptool.ErrToolClash):
			e.Code, e.Refusal = engine.CodeToolClash, true
		case errors.Is(err, mcptool.ErrAuthRequired):
			e.Code, e.Refusal = engine.CodeMCPAuthRequired, true
		}
		return nil, e
	}
	s.tools = tools
	detect := sandboxDetector(s.env)
	execs, py := executors(s.env, detect, protectedFiles(s.env, localStorePath(o.Store), s.prog))
	s.py = py
	var records []state.MCPServer
	if tools.mgr != nil {
		execs[ir.BodyMCP] = tools.mgr
		records = tools.mgr.Records()
	}
	prov, execs := s.observe(o.RunID, s.provider.provider, execs)
	return engine.NewRunner(engine.Config{
		Program:          s.prog,
		Agent:            tools.agent,
		ExtraTools:       tools.extra,
		MCPServers:       records,
		Store:            o.Store,
		Provider:         prov,
		Executors:        execs,
		Secrets:          s.secrets.toolSecrets(),
		Observe:          o.Observe,
		ToolLog:          toolLogOpener(o.Store, s.secrets),
		SandboxAvailable: sandboxAvailable(detect),
		Stop:             o.Stop,
		NoStream:         o.NoStream,
		Redact:           s.secrets.redact,
		LeaseTTL:         o.LeaseTTL,
		Rules:            s.rules,
		Now:              o.Now,
		Owner:            o.Owner,
		WorkDir:          o.ToolDir,
		OnRenew:          o.OnRenew,
		MaxParallelTools: o.MaxParallelTools,
	})
}

// MCPServers are the MCP servers Connect connected, for the resume check.
func (s *Session) MCPServers() []state.MCPServer {
	if s.tools == nil || s.tools.mgr == nil {
		return nil
	}
	return s.tools.mgr.Records()
}

// Lookup finds a tool of the run by name: the program's, or an MCP
// server's once Connect has connected them.
func (s *Session) Lookup(name string) *ir.Tool { return s.tools.lookup(s.prog)(name) }

// Close stops what Connect started: the MCP servers and the warm Python
// interpreters, and closes the MCP log.
func (s *Session) Close() {
	if s == nil {
		return
	}
	s.tools.close()
	if s.py != nil {
		s.py.Close()
	}
}

// toolLogOpener returns the opener of per-run tool logs, at the path the
// store keeps for them (it deletes them with the run), owner-only.
func toolLogOpener(st Store, sec *secretSet) func(string) engine.ToolLog {
	return func(runID string) engine.ToolLog {
		path, err := st.LogFile(runID, sqlite.LogTools)
		if err != nil {
			return nil
		}
		fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil
		}
		return &redactedLog{WriteCloser: sec.redactor.Writer(fh), file: fh}
	}
}

// redactedLog removes secret values from what tools print before it reaches
// the log file.
type redactedLog struct {
	io.WriteCloser
	file *os.File
}

// Close flushes the redactor, then closes the file.
func (l *redactedLog) Close() error {
	err := l.WriteCloser.Close()
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	return err
}

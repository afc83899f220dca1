package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nexa-run/nexa/internal/failpoint"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
)

// Runner drives one agent of one compiled program. It holds no run state of
// its own: everything it knows about a run is in the store, so any process
// can continue any run.
type Runner struct {
	prog       *ir.Program
	agent      *ir.Agent
	store      state.Store
	provider   provider.Provider
	executors  map[ir.BodyKind]tool.Executor
	secrets    map[string]string
	observe    func(Event)
	now        func() time.Time
	toolLog    func(runID string) ToolLog
	sandboxOK  func() error
	stop       <-chan struct{}
	noStream   bool
	redact     func(string) string
	mcpServers []state.MCPServer
	owner      string
	workDir    string // Config.WorkDir
	onRenew    func(runID string, err error)
	leaseTTL   time.Duration
	leaseTick  func(period time.Duration) (<-chan time.Time, func())
	exposed    map[string]*ir.Tool
	schemas    *schemaSet
	rules      Rules
	// maxParallel is how many calls of one reply may run at once
	// (Config.MaxParallelTools, at least 1).
	maxParallel int
}

// ToolLog receives what tools print during a run; Close is called when the
// run stops.
type ToolLog interface {
	Write(p []byte) (int, error)
	Close() error
}

// Config assembles a Runner. Program, Agent, Store and Provider are required.
type Config struct {
	Program   *ir.Program
	Agent     *ir.Agent
	Store     state.Store
	Provider  provider.Provider
	Executors map[ir.BodyKind]tool.Executor
	// Secrets are handed to tools that read them (Python's nexa_secrets).
	Secrets map[string]string
	// Observe receives progress events for display; may be nil.
	Observe func(Event)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// ToolLog opens the log tools of a run print to; discarded when nil.
	ToolLog func(runID string) ToolLog
	// SandboxAvailable reports whether a working isolation backend
	// exists; nil means none does, so sandboxed tools are refused.
	SandboxAvailable func() error
	// Stop, when closed, asks the run to stop at the next safe point
	// (after a running tool finishes) with status interrupted.
	Stop <-chan struct{}
	// NoStream asks the provider for whole replies (--no-stream),
	// whatever the agent's stream setting says.
	NoStream bool
	// ExtraTools are tools found when the run starts (the tools of the
	// agent's MCP servers); they are exposed besides the agent's own.
	ExtraTools []*ir.Tool
	// MCPServers are recorded in a new run for the resume check.
	MCPServers []state.MCPServer
	// Redact removes secret values from text before it is saved, shown
	// or sent: model replies (text, call arguments, raw reply), tool
	// results and error messages. Nil keeps text as it is.
	Redact func(string) string
	// Owner names this executor in the leases it takes; NewLeaseOwner()
	// when empty.
	Owner string
	// LeaseTTL is how long its leases last between renewals (renewed
	// every LeaseTTL/3); the package's LeaseTTL when zero. Tests shorten
	// it.
	LeaseTTL time.Duration
	// LeaseTicker paces the renewals of a driven run's lease: a channel
	// that delivers a tick every period, and a function that stops it.
	// Nil means a time.Ticker; tests pass their own to renew on demand
	// instead of waiting for the wall clock.
	LeaseTicker func(period time.Duration) (ticks <-chan time.Time, stop func())
	// Rules are the policy rules of --policy; nil when none was named.
	Rules Rules
	// OnRenew, when set, is told the outcome of every renewal of a driven
	// run's lease (nil error: renewed; state.ErrLeaseLost: lost), for a
	// worker's telemetry.
	OnRenew func(runID string, err error)
	// WorkDir, when set, is where the run's tools execute instead of the
	// run's recorded working directory: a worker drives runs in its own
	// directory, which holds the same program (docs/worker.md).
	WorkDir string
	// MaxParallelTools bounds how many calls of one reply run at once
	// (--max-parallel-tools): calls that need no person start together
	// up to this many, each under its own journal stages; 1 runs them one
	// after another; 0 takes DefaultMaxParallelTools. Executors are then
	// called concurrently, and so is ToolLog's writer (through a lock).
	MaxParallelTools int
}

// DefaultMaxParallelTools is how many calls of one reply run at once when
// the command does not say (--max-parallel-tools): enough for the usual
// fan-out of independent lookups a model asks for in one reply, few enough
// that a reply of many calls does not start a crowd of processes on a small
// machine.
const DefaultMaxParallelTools = 4

// MaxParallelToolsLimit is the largest --max-parallel-tools accepted: a
// reply never has more calls that execute (MaxCallsPerReply).
const MaxParallelToolsLimit = MaxCallsPerReply

// NewRunner checks the configuration and prepares schema validators for the
// exposed tools.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Program == nil || cfg.Agent == nil || cfg.Store == nil || cfg.Provider == nil {
		return nil, errors.New("runtime: program, agent, store and provider are required")
	}
	return newRunner(cfg)
}

// NewEditChecker checks edited arguments for runs of cfg's program and
// agent (Program and Agent are required; Executors, Rules and ExtraTools
// are used when set) without being able to drive a run: what nexa runs
// approve and nexa serve use to check an edit before they record it.
func NewEditChecker(cfg Config) (EditChecker, error) {
	if cfg.Program == nil || cfg.Agent == nil {
		return nil, errors.New("runtime: program and agent are required")
	}
	return newRunner(cfg)
}

func newRunner(cfg Config) (*Runner, error) {
	r := &Runner{
		prog:      cfg.Program,
		agent:     cfg.Agent,
		store:     cfg.Store,
		provider:  cfg.Provider,
		executors: cfg.Executors,
		secrets:   cfg.Secrets,
		observe:   cfg.Observe,
		now:       cfg.Now,
		toolLog:   cfg.ToolLog,
		sandboxOK: cfg.SandboxAvailable,
		stop:      cfg.Stop,
		noStream:  cfg.NoStream,
		redact:    cfg.Redact,
		exposed:   map[string]*ir.Tool{},
		owner:     cfg.Owner,
		leaseTTL:  cfg.LeaseTTL,
		leaseTick: cfg.LeaseTicker,
		rules:     cfg.Rules,
		workDir:   cfg.WorkDir,
		onRenew:   cfg.OnRenew,

		maxParallel: cfg.MaxParallelTools,
	}
	if r.maxParallel <= 0 {
		r.maxParallel = DefaultMaxParallelTools
	}
	if r.maxParallel > MaxParallelToolsLimit {
		return nil, refuse(CodeUsage, "at most %d calls of one reply can run at once (the most calls of a reply that execute); MaxParallelTools %d is more", MaxParallelToolsLimit, cfg.MaxParallelTools)
	}
	if r.leaseTTL <= 0 {
		r.leaseTTL = LeaseTTL
	}
	if r.leaseTick == nil {
		r.leaseTick = wallTicker
	}
	if r.owner == "" {
		r.owner = NewLeaseOwner()
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.redact == nil {
		r.redact = func(s string) string { return s }
	}
	if r.observe == nil {
		r.observe = func(Event) {}
	}
	for _, name := range cfg.Agent.Tools {
		if t := cfg.Program.Tool(name); t != nil {
			r.exposed[name] = t
		}
	}
	for _, t := range cfg.ExtraTools {
		if _, clash := r.exposed[t.Name]; clash {
			return nil, refuse(CodeToolClash, "tool %s of MCP server %s has the name of another tool of agent %s; rename the tool or drop one of them from the agent's uses", t.Name, t.Body.MCP, cfg.Agent.Name)
		}
		r.exposed[t.Name] = t
	}
	r.mcpServers = cfg.MCPServers
	var err error
	if r.schemas, err = newSchemaSet(r.exposed, r.outputSchema()); err != nil {
		return nil, err
	}
	return r, nil
}

// outputSchema is the JSON Schema the final answer must satisfy, or nil.
func (r *Runner) outputSchema() json.RawMessage {
	if r.agent.Implements == "" {
		return nil
	}
	if p := r.prog.Protocol(r.agent.Implements); p != nil {
		return p.Schema
	}
	return nil
}

// NewRun describes a run to start.
type NewRun struct {
	// ID is the run id to use; a new one is made when empty (the CLI
	// makes it first so that the run's log files can be named before
	// the run exists).
	ID      string
	Task    string
	File    string
	WorkDir string
	Budgets state.Budgets
	// Timeout sets the deadline to the start time plus Timeout, at full
	// precision; zero takes the agent's timeout, if it has one.
	Timeout time.Duration
	// Deadline, when set, is used as it is instead of Timeout.
	Deadline *time.Time
	// ResumeFlags are recorded in the run for resume hints
	// (state.Config.ResumeFlags).
	ResumeFlags []string
	// ApprovalTimeout bounds how long any call may wait for a decision
	// (--approval-timeout); zero leaves it to the tools' settings.
	ApprovalTimeout time.Duration
	// Choice is what chose the provider (state.Config.Choice).
	Choice *state.ProviderChoice
	// Detach records the run as queued for a worker (nexa agent
	// --detach) instead of driving it: Start creates it unheld, with
	// Config.Driver set to state.DriverWorker, and returns it.
	Detach bool
}

// DeadlineFor is the deadline of a run started at now: now plus timeout (the
// --timeout flag), else plus the agent's timeout, at full precision; nil
// when neither is set. Callers that must bound work done before the run
// exists (connecting MCP servers) compute it once and pass it in NewRun.
func DeadlineFor(now time.Time, timeout time.Duration, agent *ir.Agent) *time.Time {
	if timeout == 0 && agent != nil && agent.Timeout > 0 {
		timeout = time.Duration(agent.Timeout) * time.Second
	}
	if timeout <= 0 {
		return nil
	}
	dl := now.UTC().Add(timeout)
	return &dl
}

// Start creates a run in the store, held by this executor's lease from
// its first revision, and drives it until it completes, stops for a
// decision, or fails; then it releases the lease. The returned state is
// what was last saved.
func (r *Runner) Start(ctx context.Context, nr NewRun) (*state.RunState, error) {
	nr.Task = r.redact(nr.Task) // a key typed into the task is stored, shown and sent as [REDACTED]
	now := r.now().UTC()
	id := nr.ID
	if id == "" {
		id = NewRunID(now)
	}
	if nr.Deadline == nil {
		nr.Deadline = DeadlineFor(now, nr.Timeout, r.agent)
	}
	st := &state.RunState{
		ID:        id,
		Status:    state.StatusRunning,
		CreatedAt: now,
		UpdatedAt: now,
		Config: state.Config{
			SourceFile:  nr.File,
			SourceHash:  r.prog.Hash,
			Agent:       r.agent.Name,
			Provider:    r.provider.Identity(),
			Budgets:     nr.Budgets,
			Deadline:    nr.Deadline,
			WorkDir:     nr.WorkDir,
			MCPServers:  r.mcpServers,
			ResumeFlags: nr.ResumeFlags,
			Choice:      nr.Choice,
			Policy:      r.policyRef(),
			// Rounded up: a bound is never shortened.
			ApprovalTimeout: state.Seconds((nr.ApprovalTimeout + time.Second - 1) / time.Second),
		},
		Task:  nr.Task,
		Lease: &state.Lease{Owner: r.owner, TTL: r.leaseTTL},
	}
	if err := r.checkPriced(nr.Budgets); err != nil {
		return nil, err
	}
	if sp := r.agent.SystemPrompt(); sp != "" {
		st.Messages = append(st.Messages, state.Message{Seq: 0, Role: state.RoleSystem, Content: sp})
	}
	st.Messages = append(st.Messages, state.Message{Seq: len(st.Messages), Role: state.RoleUser, Content: nr.Task})
	if nr.Detach {
		// Nothing runs here: the run is recorded for the workers, free,
		// and a worker that has its program claims it.
		st.Status, st.Config.Driver, st.Lease = state.StatusQueued, state.DriverWorker, nil
	}
	if err := r.store.Create(ctx, st); err != nil {
		return nil, &Error{Code: CodeStoreError, Message: err.Error(), Err: err}
	}
	if nr.Detach {
		return st, nil
	}
	defer release(r.store, st.ID, st.Lease)
	stop := r.keepLease(st.ID, st.Lease)
	defer stop()
	r.observe(Event{Kind: EventRunStarted, RunID: st.ID})
	return r.drive(ctx, st, false)
}

// Continue drives a loaded run that passed CheckResume (and had decisions
// recorded) from where its journal says it is. Its saves are fenced by
// st.Lease; Resume takes the lease and calls it.
func (r *Runner) Continue(ctx context.Context, st *state.RunState) (*state.RunState, error) {
	return r.continueRun(ctx, st, st.Status == state.StatusRunning)
}

// continueRun is Continue for a caller that saw the run's status before
// changing it (Resume marks the run running when it records decisions).
// The announce events (decisions this resume recorded) are observed right
// after EventRunResumed.
func (r *Runner) continueRun(ctx context.Context, st *state.RunState, crashed bool, announce ...Event) (*state.RunState, error) {
	r.observe(Event{Kind: EventRunResumed, RunID: st.ID})
	for _, ev := range announce {
		r.observe(ev)
	}
	return r.drive(ctx, st, crashed)
}

// step is what one pass of the loop decided.
type step int

const (
	stepContinue step = iota
	stepStop
)

// drive is the agent loop of docs/reference/runtime.md#agent-loop. Every transition is saved
// before it is acted on; any error of the store ends the drive.
//
// crashed says the run was found running: the process that drove it last
// died mid-drive, after tools may have run that the store was never
// checked against, so the save that stops this drive checks it whole.
func (r *Runner) drive(ctx context.Context, st *state.RunState, crashed bool) (*state.RunState, error) {
	var log ToolLog
	if r.toolLog != nil {
		log = r.toolLog(st.ID)
		if log != nil {
			defer log.Close()
		}
	}
	d := newDriver(r, st, log)
	d.verify = crashed || r.startsServers()
	if r.stop != nil {
		// One watcher of the stop channel for the whole drive: each
		// provider request's context derives from this one, where a
		// watcher per request cost a goroutine (and a wake-up of an idle
		// thread) every step.
		var cancel context.CancelFunc
		d.stopCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-r.stop:
				cancel()
			case <-d.stopCtx.Done():
			}
		}()
	}
	for {
		s, err := d.next(ctx)
		if err != nil {
			return st, err
		}
		if s == stepStop {
			return st, nil
		}
	}
}

// driver carries one drive of one run.
type driver struct {
	r  *Runner
	st *state.RunState
	// toolOut is what tools print to: the run's ToolLog behind a lock,
	// since calls of one reply may print at the same time. Nil when there
	// is no log.
	toolOut io.Writer

	// What the loop asks of the run at every step is kept here, built
	// once per drive and updated as the drive appends, so that a step
	// costs the same at turn 2,000 as at turn 2 docs/benchmarks.md#steps:
	// callIdx maps a call id to its journal index; every entry below
	// firstOpen is completed (a completed entry never reopens, and new
	// entries are appended); rounds counts the assistant messages with
	// tool calls.
	callIdx   map[string]int
	firstOpen int
	rounds    int

	// held are results of the current reply's calls that are known but
	// not yet saved: the next write of the drive carries them (the next
	// call's started, or the write that closes the round or stops the
	// run), so calls run one after another share writes without a result
	// ever waiting past the next tool's start or the next provider
	// request. Their events are observed once that write is durable.
	held []heldResult

	// verify: something that runs with the user's rights ran during this
	// drive (an unsandboxed tool, an MCP server) and could have written to
	// the store file, so the save that stops the drive asks the store to
	// check all of it (state.Delta.Verify, docs/runs.md "The store"). A
	// drive of native and sandboxed tools only never pays for that check,
	// whose cost grows with the whole store.
	verify bool

	// stopCtx is the drive's context, cancelled also by a stop request
	// (nil without a stop channel): the parent of every provider
	// request's context, never of a save or a tool call.
	stopCtx context.Context
}

// heldResult is a completed journal entry waiting for the drive's next
// write, and the event that reports it; silent: none does (a call answered
// without running).
type heldResult struct {
	entry  state.JournalEntry
	done   Event
	silent bool
}

func newDriver(r *Runner, st *state.RunState, log ToolLog) *driver {
	d := &driver{r: r, st: st, callIdx: make(map[string]int, len(st.Journal))}
	if log != nil {
		d.toolOut = &lockedWriter{w: log}
	}
	for i := range st.Journal {
		d.callIdx[st.Journal[i].CallID] = i
	}
	for _, m := range st.Messages {
		if m.Role == state.RoleAssistant && len(m.ToolCalls) > 0 {
			d.rounds++
		}
	}
	return d
}

// startsServers reports whether the agent exposes tools of MCP servers:
// those are processes that run with the user's rights for the whole
// drive, whether or not the model calls them.
func (r *Runner) startsServers() bool {
	for _, t := range r.exposed {
		if t.Body.Kind == ir.BodyMCP {
			return true
		}
	}
	return false
}

// reachesStore reports whether a call of t can write to the store file:
// executors say so (StoreReacher); one that does not is taken to.
func (r *Runner) reachesStore(t *ir.Tool) bool {
	sr, ok := r.executors[t.Body.Kind].(tool.StoreReacher)
	return !ok || sr.ReachesStore(t)
}

// entry returns the journal entry of a call, or nil.
func (d *driver) entry(callID string) *state.JournalEntry {
	if i, ok := d.callIdx[callID]; ok && i < len(d.st.Journal) && d.st.Journal[i].CallID == callID {
		return &d.st.Journal[i]
	}
	return d.st.Entry(callID)
}

func (d *driver) save(ctx context.Context, delta state.Delta) error {
	d.st.UpdatedAt = d.r.now().UTC()
	if d.verify && d.st.Status != state.StatusRunning {
		delta.Verify = true
	}
	if len(d.held) > 0 {
		journal := make([]state.JournalEntry, 0, len(d.held)+len(delta.Journal))
		for _, h := range d.held {
			journal = append(journal, h.entry)
		}
		delta.Journal = append(journal, delta.Journal...)
	}
	// The store waits for a busy database as long as ctx allows: the
	// drive's context has no deadline of its own, so a step (above all a
	// tool's result already in hand) is never given up because other
	// processes were writing.
	if err := d.r.store.Save(ctx, d.st, delta); err != nil {
		return storeError(d.st.ID, err)
	}
	held := d.held
	d.held = nil
	for _, h := range held {
		if h.entry.AwaitingInput() {
			failpoint.Hit("after-input-saved")
			continue
		}
		failpoint.Hit("after-result-saved")
		if !h.silent {
			d.r.observe(h.done)
		}
	}
	return nil
}

// flushHeld saves the held results, with the round's tool messages when
// they complete it.
func (d *driver) flushHeld(ctx context.Context) error {
	if len(d.held) == 0 {
		return nil
	}
	return d.saveClosing(ctx, state.Delta{})
}

// finish saves a final status for this drive and stops. The announce
// events are observed once that status is saved, before EventRunStopped.
func (d *driver) finish(ctx context.Context, status state.Status, rerr *state.RunError, delta state.Delta, announce ...Event) (step, error) {
	d.st.Status = status
	if rerr != nil {
		rerr.Message = d.r.redact(rerr.Message)
	}
	d.st.Error = rerr
	if err := d.save(ctx, delta); err != nil {
		return stepStop, err
	}
	for _, ev := range announce {
		d.r.observe(ev)
	}
	stopped := Event{Kind: EventRunStopped, RunID: d.st.ID, Status: status}
	if rerr != nil {
		stopped.Text = rerr.Message
	}
	d.r.observe(stopped)
	return stepStop, nil
}

func (d *driver) deadlinePassed() bool {
	dl := d.st.Config.Deadline
	return dl != nil && !d.r.now().Before(*dl)
}

func (d *driver) stopRequested() bool {
	if d.r.stop == nil {
		return false
	}
	select {
	case <-d.r.stop:
		return true
	default:
		return false
	}
}

// interrupted stops the run as interrupted, resumable, when a stop was
// requested between steps.
func (d *driver) interrupted(ctx context.Context) (step, error) {
	return d.finish(ctx, state.StatusInterrupted, &state.RunError{Code: CodeInterrupted, Message: "interrupted by a signal; the run can be resumed"}, state.Delta{})
}

func (d *driver) timedOut(ctx context.Context, delta state.Delta) (step, error) {
	return d.finish(ctx, state.StatusTimedOut, &state.RunError{
		Code:    CodeDeadlineExceeded,
		Message: fmt.Sprintf("the run's deadline %s has passed", d.st.Config.Deadline.UTC().Format(time.RFC3339Nano)),
	}, delta)
}

// next performs one step of the loop.
func (d *driver) next(ctx context.Context) (step, error) {
	st := d.st
	if d.deadlinePassed() {
		return d.timedOut(ctx, state.Delta{})
	}
	// Calls of the latest reply that are not completed come first.
	if open := d.openEntries(); len(open) > 0 {
		return d.runCalls(ctx, open)
	}
	last := st.Messages[len(st.Messages)-1]
	if last.Role == state.RoleAssistant && len(last.ToolCalls) > 0 {
		return d.appendToolMessages(ctx)
	}
	if last.Role == state.RoleAssistant {
		// A final answer saved by an earlier process that stopped
		// before marking the run completed.
		return d.complete(ctx, last, state.Delta{})
	}
	if d.stopRequested() {
		return d.interrupted(ctx)
	}
	return d.request(ctx)
}

// openEntries are the journal entries of the latest reply not yet completed.
func (d *driver) openEntries() []*state.JournalEntry {
	var open []*state.JournalEntry
	for d.firstOpen < len(d.st.Journal) && d.st.Journal[d.firstOpen].Stage == state.StageCompleted {
		d.firstOpen++
	}
	for i := d.firstOpen; i < len(d.st.Journal); i++ {
		if d.st.Journal[i].Stage != state.StageCompleted {
			open = append(open, &d.st.Journal[i])
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Seq < open[j].Seq })
	return open
}

// request asks the provider for the next reply and saves it, with its calls
// journaled, in one write before anything is acted on.
func (d *driver) request(ctx context.Context) (step, error) {
	st := d.st
	b := st.Config.Budgets
	if b.MaxTurns > 0 && st.Usage.ProviderRequests >= b.MaxTurns {
		return d.exhausted(ctx, fmt.Sprintf("the run made %d provider requests (--max-turns %d)", st.Usage.ProviderRequests, b.MaxTurns))
	}
	if b.MaxTokens > 0 && st.Usage.TotalTokens >= b.MaxTokens {
		return d.exhausted(ctx, fmt.Sprintf("the run used %d tokens (--max-tokens %d)", st.Usage.TotalTokens, b.MaxTokens))
	}
	if b.MaxCostUSD > 0 {
		// Fail closed: a cost that is not known cannot be under budget.
		spent, known := st.Usage.Cost()
		if !known {
			return d.exhausted(ctx, fmt.Sprintf("the run's cost is unknown (a request had no price) and it has --max-cost %s; give prices for its model (--prices) and resume with a higher --max-cost", usd(b.MaxCostUSD)))
		}
		if spent >= b.MaxCostUSD {
			return d.exhausted(ctx, fmt.Sprintf("the run spent %s (--max-cost %s); resume it with a higher --max-cost to continue", usd(spent), usd(b.MaxCostUSD)))
		}
	}
	if st.Status != state.StatusRunning {
		// Mark the run as being driven, so a crash from here on leaves
		// a resumable running run.
		st.Status = state.StatusRunning
		st.Error = nil
		if err := d.save(ctx, state.Delta{}); err != nil {
			return stepStop, err
		}
	}
	req := d.buildRequest()
	pctx, cancel := d.providerContext(ctx)
	defer cancel()
	turn := st.Usage.ProviderRequests + 1
	d.r.observe(Event{Kind: EventProviderStart, RunID: st.ID, Turn: turn})
	began := d.r.now()
	reply, err := d.r.provider.Complete(pctx, req, func(ev provider.Event) {
		d.r.observe(Event{Kind: EventProviderDelta, RunID: st.ID, Turn: turn, Text: d.r.redact(ev.TextDelta)})
	})
	elapsed := d.r.now().Sub(began)
	if err != nil {
		d.r.observe(Event{Kind: EventProviderDone, RunID: st.ID, Turn: turn, Duration: elapsed, Err: err})
		if d.deadlinePassed() {
			return d.timedOut(ctx, state.Delta{})
		}
		if d.stopRequested() {
			return d.finish(ctx, state.StatusInterrupted, &state.RunError{Code: CodeInterrupted, Message: "interrupted by a signal while waiting for the provider; the run can be resumed"}, state.Delta{})
		}
		return d.finish(ctx, state.StatusFailed, &state.RunError{Code: CodeProviderError, Message: err.Error()}, state.Delta{})
	}
	replyUsage := reply.Usage
	d.r.observe(Event{Kind: EventProviderDone, RunID: st.ID, Turn: turn, Duration: elapsed, Calls: len(reply.Message.ToolCalls), Usage: &replyUsage})

	usage := reply.Usage
	usage.ProviderRequests = 1
	st.Usage.Add(usage)
	item := state.ProviderItem{Seq: len(st.ProviderItems), Raw: d.r.redactJSON(reply.Raw), Usage: usage, CreatedAt: d.r.now().UTC()}
	if len(item.Raw) == 0 || !json.Valid(item.Raw) {
		item.Raw = json.RawMessage("null")
	} else if !utf8.Valid(item.Raw) {
		// Bytes that are not UTF-8 can only sit inside JSON strings,
		// where the escape of the replacement character is valid: the
		// stored reply stays JSON that strict readers accept.
		item.Raw = json.RawMessage(strings.ToValidUTF8(string(item.Raw), `\ufffd`))
	}
	st.ProviderItems = append(st.ProviderItems, item)
	msg := d.r.redactMessage(reply.Message)
	msg.Role = state.RoleAssistant
	msg.Seq = len(st.Messages)
	delta := state.Delta{ProviderItems: []state.ProviderItem{item}}
	if len(msg.ToolCalls) == 0 {
		if fix := d.checkAnswer(msg.Content); fix != "" {
			return d.correct(ctx, msg, fix, delta)
		}
		st.Messages = append(st.Messages, msg)
		delta.Messages = []state.Message{msg}
		return d.complete(ctx, msg, delta)
	}
	d.assignCallIDs(&msg, turn)
	st.Messages = append(st.Messages, msg)
	d.rounds++
	delta.Messages = []state.Message{msg}
	delta.Journal = d.journalCalls(msg, turn)
	// Calls refused at once (unknown tool, invalid arguments) are
	// completed already; when all of them are, their tool messages
	// share this write.
	d.closeRound(&delta)
	if err := d.save(ctx, delta); err != nil {
		return stepStop, err
	}
	failpoint.Hit("after-reply-saved")
	for i := range delta.Journal {
		// Calls a policy rule decided when they were journaled.
		if e := &delta.Journal[i]; e.Decision != nil && e.Stage == state.StageNotStarted {
			d.r.observe(decidedEvent(st.ID, e))
		}
	}
	return stepContinue, nil
}

// redactMessage removes secret values from a model reply before anything
// keeps or acts on it: its text and each call's arguments. A model that
// repeats a key (read from a tool result, or made up to look like one)
// never gets it saved, printed, sent back, or passed to a tool.
func (r *Runner) redactMessage(m state.Message) state.Message {
	m.Content = r.redact(m.Content)
	if len(m.ToolCalls) > 0 {
		calls := make([]state.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Arguments = r.redact(c.Arguments)
			calls[i] = c
		}
		m.ToolCalls = calls
	}
	return m
}

// redactJSON redacts a provider's raw reply and keeps it JSON: a
// replacement that cut through an escape leaves the redacted text as a
// JSON string instead.
func (r *Runner) redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	out := r.redact(string(raw))
	if out == string(raw) || json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}

func (d *driver) exhausted(ctx context.Context, why string) (step, error) {
	return d.finish(ctx, state.StatusBudgetExhausted, &state.RunError{Code: CodeBudgetExhausted, Message: "budget exhausted: " + why}, state.Delta{})
}

// providerContext bounds a provider request by the deadline and by a stop
// request (a provider request has no side effects, so cutting it is safe).
// ctx is the drive's context, which d.stopCtx derives from.
func (d *driver) providerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.stopCtx != nil {
		ctx = d.stopCtx
	}
	if dl := d.st.Config.Deadline; dl != nil {
		return context.WithDeadline(ctx, *dl)
	}
	return context.WithCancel(ctx)
}

// buildRequest turns the conversation into a provider request, applying the
// agent's tool settings.
func (d *driver) buildRequest() provider.Request {
	a := d.r.agent
	req := provider.Request{
		Model:       d.st.Config.Provider.Model,
		Messages:    d.st.Messages,
		Temperature: a.Temperature,
		MaxTokens:   a.MaxTokens,
		JSONOutput:  a.OutputFormat == "json" || a.Implements != "",
		Stream:      !d.r.noStream && (a.Stream == nil || *a.Stream),
		CacheKey:    d.st.ID,
	}
	if schema := d.r.outputSchema(); schema != nil {
		req.Output = &provider.OutputSchema{Name: a.Implements, Schema: schema}
	}
	rounds := d.rounds
	offerTools := len(d.r.exposed) > 0 && a.ToolCallStrategy != "none"
	if a.MaxToolCalls > 0 && rounds >= a.MaxToolCalls {
		// The agent's tool rounds are used up: ask for an answer.
		offerTools = false
	}
	if offerTools {
		names := make([]string, 0, len(d.r.exposed))
		for n := range d.r.exposed {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t := d.r.exposed[n]
			req.Tools = append(req.Tools, provider.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
		req.ToolChoice = "auto"
		req.ParallelToolCalls = d.r.maxParallel > 1
		if a.ToolCallStrategy == "required" && rounds == 0 {
			req.ToolChoice = "required"
		}
	}
	return req
}

// assignCallIDs makes every call id of a reply non-empty and unique within
// the run: the journal is keyed by call id, and some servers repeat ids.
func (d *driver) assignCallIDs(msg *state.Message, turn int) {
	seen := func(id string) bool { _, ok := d.callIdx[id]; return ok }
	taken := map[string]bool{}
	for i := range msg.ToolCalls {
		id := msg.ToolCalls[i].ID
		if id == "" || seen(id) || taken[id] || !safeID(id) {
			id = fmt.Sprintf("call_%d_%d", turn, i+1)
			for n := 2; seen(id) || taken[id]; n++ {
				id = fmt.Sprintf("call_%d_%d_%d", turn, i+1, n)
			}
			msg.ToolCalls[i].ID = id
		}
		taken[id] = true
	}
}

// safeID accepts call ids an operator can type in a shell unquoted.
func safeID(id string) bool {
	if len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// journalCalls records every call of a reply. Calls that may never execute
// (unexposed tool, invalid arguments, beyond MaxCallsPerReply) are
// completed at once with the reason, so the model learns what was wrong.
// The others get what the program and the policy say of them: whether a
// person must decide, or a rule's decision.
func (d *driver) journalCalls(msg state.Message, turn int) []state.JournalEntry {
	now := d.r.now().UTC()
	var out []state.JournalEntry
	for i, c := range msg.ToolCalls {
		e := state.JournalEntry{
			CallID:    c.ID,
			Tool:      c.Name,
			Seq:       len(d.st.Journal),
			Turn:      turn,
			Stage:     state.StageNotStarted,
			CreatedAt: now,
		}
		var (
			args   json.RawMessage
			reason string
		)
		if i >= MaxCallsPerReply {
			reason = fmt.Sprintf("error: the reply asked for %d tool calls; nexa runs at most %d calls of one reply, so call %s was not executed; ask for fewer calls at a time", len(msg.ToolCalls), MaxCallsPerReply, c.ID)
		} else if args, reason = d.r.checkCall(c); reason == "" {
			reason = d.precheck(c, args)
		}
		if reason != "" {
			e.Arguments = rawOrString(c.Arguments)
			e.RawArgs = c.Arguments
			e.Stage = state.StageCompleted
			e.Outcome = "refused"
			e.Result = reason
			e.Success = false
			e.CompletedAt = &now
		} else {
			e.Arguments = args
			e.Valid = true
			t := d.r.exposed[c.Name]
			e.Description = t.Description
			e.Sandbox = t.Sandbox
			d.r.applyApproval(&e, t, d.st.Config, now)
		}
		d.st.Journal = append(d.st.Journal, e)
		d.callIdx[e.CallID] = len(d.st.Journal) - 1
		out = append(out, e)
	}
	return out
}

// precheck asks the tool's executor, when it can tell, whether the call
// would be refused anyway (docs/reference/runtime.md#call-checks: answered before any policy).
func (d *driver) precheck(c state.ToolCall, args json.RawMessage) string {
	t := d.r.exposed[c.Name]
	pc, ok := d.r.executors[t.Body.Kind].(tool.Prechecker)
	if !ok {
		return ""
	}
	err := pc.Precheck(tool.Invocation{RunID: d.st.ID, CallID: c.ID, Tool: t, Arguments: args, WorkDir: d.r.toolDir(d.st)})
	if err == nil {
		return ""
	}
	return fmt.Sprintf("error: %s refused before execution: %v", t.Name, err)
}

// rawOrString keeps arguments that are JSON as they are and wraps anything
// else as a JSON string, so the journal always holds valid JSON.
func rawOrString(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// checkCall applies docs/reference/runtime.md#call-checks: exposure, then the arguments
// against the tool's schema. It returns the normalised arguments or the
// reason for refusal.
func (r *Runner) checkCall(c state.ToolCall) (json.RawMessage, string) {
	t, ok := r.exposed[c.Name]
	if !ok {
		names := make([]string, 0, len(r.exposed))
		for n := range r.exposed {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Sprintf("error: tool %q is not available to this agent; it has no tools", c.Name)
		}
		return nil, fmt.Sprintf("error: tool %q is not available to this agent; available tools: %s", c.Name, strings.Join(names, ", "))
	}
	raw := strings.TrimSpace(c.Arguments)
	if raw == "" {
		raw = "{}"
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, fmt.Sprintf("error: the arguments of %s are not valid JSON; send a JSON object matching the tool's schema", t.Name)
	}
	if _, isObj := v.(map[string]any); !isObj {
		return nil, fmt.Sprintf("error: the arguments of %s must be a JSON object", t.Name)
	}
	if err := r.schemas.validateArgs(t.Name, v); err != nil {
		return nil, fmt.Sprintf("error: invalid arguments for %s: %s", t.Name, err)
	}
	// The one place defaults are filled: the saved arguments hold every
	// parameter, so executors bind them as they are.
	t.FillDefaults(v.(map[string]any))
	norm, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Sprintf("error: the arguments of %s could not be encoded: %v", t.Name, err)
	}
	return norm, ""
}

// complete ends the run with the final answer.
func (d *driver) complete(ctx context.Context, msg state.Message, delta state.Delta) (step, error) {
	out, err := d.finalOutput(msg.Content)
	if err != nil {
		return d.finish(ctx, state.StatusFailed, &state.RunError{Code: CodeOutputInvalid, Message: err.Error()}, delta)
	}
	d.st.Output = out
	return d.finish(ctx, state.StatusCompleted, nil, delta)
}

// appendToolMessages appends one tool message per call of the latest reply,
// in the order of the calls, once all of them have saved results.
//
// The loop usually appends them in the write of the last result
// (saveResult); this separate write is for a run whose last result was
// saved by someone else (an operator's resolve) or by an older nexa.
func (d *driver) appendToolMessages(ctx context.Context) (step, error) {
	var delta state.Delta
	if !d.closeRound(&delta) {
		last := d.st.Messages[len(d.st.Messages)-1]
		for _, c := range last.ToolCalls {
			if e := d.entry(c.ID); e == nil || e.Stage != state.StageCompleted {
				return stepStop, &Error{Code: CodeInternal, Message: fmt.Sprintf("run %s: call %s has no saved result", d.st.ID, c.ID)}
			}
		}
	}
	if err := d.save(ctx, delta); err != nil {
		return stepStop, err
	}
	failpoint.Hit("after-tool-messages")
	return stepContinue, nil
}

// closeRound adds to delta (and to the run) one tool message per call of
// the latest reply, in the order of the calls, when every one of them is
// completed, and reports whether it did. A round's tool messages are only
// a copy of its saved results, so they may share the write of its last
// result: a crash can then never fall between the two.
func (d *driver) closeRound(delta *state.Delta) bool {
	last := d.st.Messages[len(d.st.Messages)-1]
	if last.Role != state.RoleAssistant || len(last.ToolCalls) == 0 {
		return false
	}
	msgs := make([]state.Message, 0, len(last.ToolCalls))
	for i, c := range last.ToolCalls {
		e := d.entry(c.ID)
		if e == nil || e.Stage != state.StageCompleted {
			return false
		}
		msgs = append(msgs, state.Message{Seq: len(d.st.Messages) + i, Role: state.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: e.Result, IsError: !e.Success})
	}
	d.st.Messages = append(d.st.Messages, msgs...)
	delta.Messages = append(delta.Messages, msgs...)
	return true
}

// saveResult saves a completed journal entry and, when it was the last
// open call of its reply, the round's tool messages in the same write.
func (d *driver) saveResult(ctx context.Context, e *state.JournalEntry) error {
	return d.saveClosing(ctx, state.Delta{Journal: []state.JournalEntry{*e}})
}

// saveClosing saves delta (with the held results) and, when the latest
// reply's calls are then all completed, the round's tool messages in the
// same write.
func (d *driver) saveClosing(ctx context.Context, delta state.Delta) error {
	closed := d.closeRound(&delta)
	if err := d.save(ctx, delta); err != nil {
		return err
	}
	if closed {
		failpoint.Hit("after-tool-messages")
	}
	return nil
}

// policyRef is what a new run records of its policy, or nil.
func (r *Runner) policyRef() *state.PolicyRef {
	if r.rules == nil {
		return nil
	}
	ref := r.rules.Ref()
	return &ref
}

// toolDir is where the tools of run st execute: the runner's WorkDir when
// set (a worker's), else the run's own.
func (r *Runner) toolDir(st *state.RunState) string {
	if r.workDir != "" {
		return r.workDir
	}
	return st.Config.WorkDir
}

// lockedWriter lets the calls of one reply, running at once, write to one
// log: each Write reaches it whole, never interleaved with another.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineWriter is one call's way into the shared tool log: it passes on
// whole lines only, keeping a partial one until its end arrives (or the
// call ends: Flush), so that a line a tool prints in several writes — an
// unbuffered interpreter writes a print's text and its newline apart — is
// never cut by a line of a call running beside it.
type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	partial []byte
}

// maxPartialLine bounds what a lineWriter keeps of a line without an end:
// a tool printing megabytes without a newline is passed on in pieces.
const maxPartialLine = 64 << 10

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	end := bytes.LastIndexByte(l.partial, '\n') + 1
	if end == 0 && len(l.partial) < maxPartialLine {
		return len(p), nil
	}
	if end == 0 {
		end = len(l.partial)
	}
	_, err := l.w.Write(l.partial[:end])
	l.partial = append(l.partial[:0], l.partial[end:]...)
	return len(p), err
}

// Flush passes on a last line without an end, once the call is over,
// ended with a newline, so that the next call's output starts a line.
func (l *lineWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		_, _ = l.w.Write(append(l.partial, '\n'))
		l.partial = nil
	}
}

package session

import (
	"context"
	"errors"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/telemetry"
	"github.com/nexa-run/nexa/internal/tool"
)

// This file decorates what the assembly builds with the process's
// telemetry (Env.Tracing, Env.Metrics): the provider and each executor are
// wrapped, so that the engine is not changed and knows nothing of spans
// or metrics. The decorations record ids, names, counts, durations and
// short error kinds only, never arguments, outputs, messages or an
// error's text, so no secret can reach a span or a metric.

// Segment starts the span of this process's drive of run runID (a run
// segment); pass the returned context to Runner.Start or Runner.Resume so
// that the model requests and tool calls are its children, and call end
// with what they returned. end also counts the segment in the metrics.
func (s *Session) Segment(ctx context.Context, runID string) (context.Context, func(*state.RunState, error)) {
	ctx, seg := s.env.Tracing.StartSegment(ctx, runID, s.agent.Name)
	return ctx, func(run *state.RunState, err error) {
		status, errType := segmentEnd(run, err)
		seg.End(status, errType)
		s.env.Metrics.SegmentEnded(status)
	}
}

// segmentEnd names how a drive ended: the run's status, and an error kind
// (the engine's error code) when the drive returned an error.
func segmentEnd(run *state.RunState, err error) (status, errType string) {
	if run != nil {
		status = string(run.Status)
	}
	if err != nil {
		errType = "error"
		if e, ok := engine.AsError(err); ok && e.Code != "" {
			errType = e.Code
		}
		if status == "" {
			status = "error"
		}
	}
	return status, errType
}

// RunCounter counts the runs of st by status for the nexa_runs gauge:
// every known status is present (0 when no run has it), so a dashboard
// sees a status drop to zero rather than vanish. A store that counts in
// one query (state.StatusCounter) is asked to; another is listed.
func RunCounter(st state.Store) telemetry.RunCounter {
	return func(ctx context.Context) (map[string]int, error) {
		byStatus, err := countByStatus(ctx, st)
		if err != nil {
			return nil, err
		}
		counts := map[string]int{}
		for _, s := range []state.Status{state.StatusQueued, state.StatusRunning, state.StatusWaitingApproval, state.StatusWaitingInput,
			state.StatusUnknownOutcome, state.StatusInterrupted, state.StatusFailed, state.StatusCompleted, state.StatusTimedOut,
			state.StatusBudgetExhausted} {
			counts[string(s)] = 0
		}
		for s, n := range byStatus {
			counts[string(s)] += n
		}
		return counts, nil
	}
}

// countByStatus counts the runs of st by status.
func countByStatus(ctx context.Context, st state.Store) (map[state.Status]int, error) {
	if c, ok := st.(state.StatusCounter); ok {
		return c.CountByStatus(ctx)
	}
	runs, err := st.List(ctx, state.Filter{})
	if err != nil {
		return nil, err
	}
	out := map[state.Status]int{}
	for _, r := range runs {
		out[r.Status]++
	}
	return out, nil
}

// observedProvider gives each model request of run runID a chat span and
// a model step in the metrics. It wraps the provider with its retries, so
// one span covers a request and its retries; each HTTP attempt carries
// the span's trace context (telemetry.Transport in the HTTP providers).
type observedProvider struct {
	provider.Provider
	runID   string
	tracing *telemetry.Tracing
	metrics *telemetry.Metrics
}

// Complete times and traces one request.
func (p observedProvider) Complete(ctx context.Context, req provider.Request, progress func(provider.Event)) (provider.Reply, error) {
	id := p.Identity()
	model := req.Model
	if model == "" {
		model = id.Model
	}
	ctx, span := p.tracing.StartChat(ctx, telemetry.ChatRequest{RunID: p.runID, Provider: id.Kind, Model: model, BaseURL: id.BaseURL})
	start := time.Now()
	reply, err := p.Provider.Complete(ctx, req, progress)
	p.metrics.Step(telemetry.StepModel, time.Since(start))
	res := telemetry.ChatResult{InputTokens: reply.Usage.InputTokens, OutputTokens: reply.Usage.OutputTokens, FinishReason: reply.FinishReason}
	if err != nil {
		res = telemetry.ChatResult{ErrType: providerErrType(err)}
	}
	span.End(res)
	return reply, err
}

// providerErrType is a provider failure's kind ("rate_limited",
// "timeout"), or a short word for the caller's cancellation.
func providerErrType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	if e, ok := provider.AsError(err); ok && e.Kind != "" {
		return e.Kind
	}
	return "error"
}

// observedExecutor gives each tool execution an execute_tool span and
// its metrics. It keeps what the engine asks of an executor besides
// Execute (StoreReacher, Prechecker) as the wrapped one answers.
type observedExecutor struct {
	next    tool.Executor
	body    ir.BodyKind
	tracing *telemetry.Tracing
	metrics *telemetry.Metrics
}

// Execute times and traces one execution.
func (e observedExecutor) Execute(ctx context.Context, inv tool.Invocation) (tool.Outcome, error) {
	name := ""
	if inv.Tool != nil {
		name = inv.Tool.Name
	}
	ctx, span := e.tracing.StartTool(ctx, telemetry.ToolCall{RunID: inv.RunID, CallID: inv.CallID, Tool: name, Body: string(e.body)})
	start := time.Now()
	out, err := e.next.Execute(ctx, inv)
	outcome := toolOutcome(out, err)
	e.metrics.ToolDone(name, outcome, time.Since(start))
	span.End(outcome)
	return out, err
}

// toolOutcome classifies an execution the way the engine journals it: an
// error that is not "not executed" leaves the outcome unknown.
func toolOutcome(out tool.Outcome, err error) string {
	switch {
	case err == nil && out.Success:
		return telemetry.OutcomeOK
	case err == nil:
		return telemetry.OutcomeError
	case errors.Is(err, tool.ErrNotExecuted):
		return telemetry.OutcomeNotExecuted
	}
	return telemetry.OutcomeUnknown
}

// ReachesStore answers as the wrapped executor does; one that does not
// say is taken to reach the store (the safe side, as the engine takes it).
func (e observedExecutor) ReachesStore(t *ir.Tool) bool {
	if sr, ok := e.next.(tool.StoreReacher); ok {
		return sr.ReachesStore(t)
	}
	return true
}

// Precheck answers as the wrapped executor does; one without a precheck
// refuses nothing.
func (e observedExecutor) Precheck(inv tool.Invocation) error {
	if pc, ok := e.next.(tool.Prechecker); ok {
		return pc.Precheck(inv)
	}
	return nil
}

// observe wraps the provider and the executors of a run with the
// process's telemetry; without any (no tracing enabled, no metrics) they
// are returned as they are.
func (s *Session) observe(runID string, p provider.Provider, execs map[ir.BodyKind]tool.Executor) (provider.Provider, map[ir.BodyKind]tool.Executor) {
	tr, m := s.env.Tracing, s.env.Metrics
	if !tr.Enabled() && m == nil {
		return p, execs
	}
	out := make(map[ir.BodyKind]tool.Executor, len(execs))
	for k, x := range execs {
		out[k] = observedExecutor{next: x, body: k, tracing: tr, metrics: m}
	}
	return observedProvider{Provider: p, runID: runID, tracing: tr, metrics: m}, out
}

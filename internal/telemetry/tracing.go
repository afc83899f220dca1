package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Attribute names of the spans: the OpenTelemetry GenAI semantic
// conventions where they name the thing, nexa.* for the rest.
const (
	AttrOperation     = "gen_ai.operation.name"
	AttrProviderName  = "gen_ai.provider.name"
	AttrSystem        = "gen_ai.system" // the older name of gen_ai.provider.name, still read by many backends
	AttrRequestModel  = "gen_ai.request.model"
	AttrAgentName     = "gen_ai.agent.name"
	AttrInputTokens   = "gen_ai.usage.input_tokens"
	AttrOutputTokens  = "gen_ai.usage.output_tokens"
	AttrFinishReasons = "gen_ai.response.finish_reasons"
	AttrToolName      = "gen_ai.tool.name"
	AttrToolCallID    = "gen_ai.tool.call.id"
	AttrToolType      = "gen_ai.tool.type"
	AttrErrorType     = "error.type"
	AttrServerAddress = "server.address"
	AttrServerPort    = "server.port"
	AttrRunID         = "nexa.run.id"
	AttrRunStatus     = "nexa.run.status"
	AttrToolBody      = "nexa.tool.body"
	AttrToolOutcome   = "nexa.tool.outcome"
)

// Operation names (gen_ai.operation.name) of nexa's spans.
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// tracerName is the instrumentation scope of nexa's spans.
const tracerName = "github.com/nexa-run/nexa"

// Tracing makes the spans of one process. Without an OTLP endpoint in the
// environment it is off: its tracer is a no-op, no exporter exists and no
// span costs more than a function call.
type Tracing struct {
	tracer trace.Tracer
	tp     *sdktrace.TracerProvider // nil when off
	once   sync.Once
}

// TracingEnabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT) and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none turns them off.
func TracingEnabled(getenv func(string) string) bool {
	if getenv == nil {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) != "" ||
		strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != ""
}

// StartTracing returns the process's tracing: off when TracingEnabled is
// false, else exporting over OTLP/HTTP (protobuf) as the standard
// OTEL_EXPORTER_OTLP_* variables configure it, in batches. version names
// the service's version (service.name is "nexa" unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES say otherwise). Call Shutdown before the
// process exits, so the last spans are sent.
func StartTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	if !TracingEnabled(getenv) {
		return &Tracing{tracer: noop.NewTracerProvider().Tracer(tracerName)}, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "nexa"), attribute.String("service.version", version)),
		resource.WithFromEnv())
	if err != nil && res == nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES keeps what could be read.
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tracer: tp.Tracer(tracerName), tp: tp}, nil
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// Shutdown sends the spans not yet exported and stops the exporter,
// waiting at most until ctx ends. Only the first call does anything.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	var err error
	t.once.Do(func() { err = t.tp.Shutdown(ctx) })
	return err
}

// ShutdownWithin is Shutdown bounded by d, so that an unreachable
// collector delays the exit of the process by at most d.
func (t *Tracing) ShutdownWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return t.Shutdown(ctx)
}

func (t *Tracing) start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !t.Enabled() {
		// The context is returned as it is: no span, nothing to
		// propagate, nothing allocated.
		return ctx, noop.Span{}
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Segment is the span of one process's drive of a run (gen_ai operation
// invoke_agent); End closes it with the status the run stopped at.
type Segment struct{ span trace.Span }

// StartSegment starts the span of a drive of run runID by agent; the
// returned context carries it to the model requests and tool calls.
func (t *Tracing) StartSegment(ctx context.Context, runID, agent string) (context.Context, *Segment) {
	ctx, span := t.start(ctx, "invoke_agent "+agent, trace.SpanKindInternal,
		attribute.String(AttrOperation, OpInvokeAgent),
		attribute.String(AttrAgentName, agent),
		attribute.String(AttrRunID, runID))
	return ctx, &Segment{span: span}
}

// End closes the segment: status is the run's status when the drive
// stopped ("" when unknown); errType a short error kind (an engine error
// code) when the drive failed, never the error's text.
func (s *Segment) End(status, errType string) {
	if s == nil || !s.span.IsRecording() {
		return
	}
	if status != "" {
		s.span.SetAttributes(attribute.String(AttrRunStatus, status))
	}
	if errType != "" {
		s.span.SetAttributes(attribute.String(AttrErrorType, errType))
		s.span.SetStatus(codes.Error, errType)
	}
	s.span.End()
}

// ChatRequest describes a model request for its span.
type ChatRequest struct {
	RunID string
	// Provider is gen_ai.provider.name: openai, anthropic, or script
	// for the offline script.
	Provider string
	Model    string
	// BaseURL is the server's address; only its host and port are
	// recorded.
	BaseURL string
}

// ChatResult is what the span of a model request records of its end.
type ChatResult struct {
	InputTokens, OutputTokens int
	FinishReason              string
	// ErrType is a short error kind (a provider error's kind), "" on
	// success.
	ErrType string
}

// Chat is the span of one model request.
type Chat struct{ span trace.Span }

// StartChat starts the span of a model request (gen_ai operation chat, a
// client span); the returned context carries it to the HTTP request, whose
// traceparent header names it.
func (t *Tracing) StartChat(ctx context.Context, r ChatRequest) (context.Context, *Chat) {
	if !t.Enabled() {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrOperation, OpChat),
		attribute.String(AttrProviderName, r.Provider),
		attribute.String(AttrSystem, r.Provider),
		attribute.String(AttrRequestModel, r.Model),
		attribute.String(AttrRunID, r.RunID),
	}
	if u, err := url.Parse(r.BaseURL); err == nil && u.Hostname() != "" {
		// The host and port only: a URL's user info or query may hold
		// a credential.
		attrs = append(attrs, attribute.String(AttrServerAddress, u.Hostname()))
		if p, err := strconv.Atoi(u.Port()); err == nil {
			attrs = append(attrs, attribute.Int(AttrServerPort, p))
		}
	}
	ctx, span := t.start(ctx, strings.TrimSpace("chat "+r.Model), trace.SpanKindClient, attrs...)
	return ctx, &Chat{span: span}
}

// End closes the span of a model request with its usage or error kind.
func (c *Chat) End(r ChatResult) {
	if c == nil {
		return
	}
	if r.ErrType != "" {
		c.span.SetAttributes(attribute.String(AttrErrorType, r.ErrType))
		c.span.SetStatus(codes.Error, r.ErrType)
	} else {
		c.span.SetAttributes(attribute.Int(AttrInputTokens, r.InputTokens), attribute.Int(AttrOutputTokens, r.OutputTokens))
		if r.FinishReason != "" {
			c.span.SetAttributes(attribute.StringSlice(AttrFinishReasons, []string{r.FinishReason}))
		}
	}
	c.span.End()
}

// ToolCall describes a tool execution for its span.
type ToolCall struct {
	RunID, CallID, Tool string
	// Body is how the tool is implemented: python, native, builtin, mcp.
	Body string
}

// ToolSpan is the span of one tool execution.
type ToolSpan struct{ span trace.Span }

// StartTool starts the span of a tool execution (gen_ai operation
// execute_tool); the returned context carries it to an MCP server's HTTP
// request.
func (t *Tracing) StartTool(ctx context.Context, c ToolCall) (context.Context, *ToolSpan) {
	if !t.Enabled() {
		return ctx, nil
	}
	ctx, span := t.start(ctx, "execute_tool "+c.Tool, trace.SpanKindInternal,
		attribute.String(AttrOperation, OpExecuteTool),
		attribute.String(AttrToolName, c.Tool),
		attribute.String(AttrToolCallID, c.CallID),
		attribute.String(AttrToolType, "function"),
		attribute.String(AttrToolBody, c.Body),
		attribute.String(AttrRunID, c.RunID))
	return ctx, &ToolSpan{span: span}
}

// End closes the span of a tool execution with its outcome (an Outcome
// constant); any outcome but ok marks the span as an error of that type.
func (s *ToolSpan) End(outcome string) {
	if s == nil {
		return
	}
	s.span.SetAttributes(attribute.String(AttrToolOutcome, outcome))
	if outcome != OutcomeOK {
		s.span.SetAttributes(attribute.String(AttrErrorType, outcome))
		s.span.SetStatus(codes.Error, outcome)
	}
	s.span.End()
}

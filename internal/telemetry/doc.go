// Package telemetry is nexa's observability: Prometheus metrics on a
// registry of their own, OpenTelemetry traces named after the GenAI
// semantic conventions, the propagation of the trace context to the HTTP
// servers nexa calls, and structured logs on log/slog.
//
// Nothing here runs at import: a process builds what it wants (NewMetrics,
// StartTracing, NewLogger) and hands it to the assembly (internal/session),
// which decorates the provider and the tool executors with it. Every method
// is safe on a nil receiver and then does nothing, so callers that were
// given no telemetry need no checks.
//
// What is recorded is chosen so that no secret can reach it: ids, names,
// counts, durations and short error kinds, never a tool's arguments or
// output, a model's messages, or an error's free text (docs/observability.md).
package telemetry

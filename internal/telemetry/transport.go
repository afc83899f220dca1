package telemetry

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext writes the W3C traceparent (and tracestate) header. It is
// used directly rather than through the global propagator, so nothing of
// the process's global state is read or set.
var traceContext = propagation.TraceContext{}

// Transport wraps base so that a request made inside a span carries the
// span's W3C trace context (the traceparent header) to the server: a model
// server or an MCP server then joins nexa's trace. A request outside any
// span goes out untouched. base nil means http.DefaultTransport.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if _, ok := base.(*propagating); ok {
		return base
	}
	return &propagating{base: base}
}

// propagating is the RoundTripper of Transport.
type propagating struct{ base http.RoundTripper }

// RoundTrip sends req, with the trace context of its context's span when
// there is one (on a copy: a RoundTripper must not change the request).
func (p *propagating) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return p.base.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	traceContext.Inject(req.Context(), propagation.HeaderCarrier(out.Header))
	return p.base.RoundTrip(out)
}

// CloseIdleConnections passes through to the wrapped transport, so that
// http.Client.CloseIdleConnections still reaches it.
func (p *propagating) CloseIdleConnections() {
	if ci, ok := p.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

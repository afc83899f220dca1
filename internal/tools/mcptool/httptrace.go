package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/nexa-run/nexa/internal/telemetry"
)

// callTrace follows the HTTP requests made on behalf of one tool call, so a
// failure can be classified: no request reached the server (nothing ran), or
// one may have (the outcome is unknown). It also notices a response stream
// that breaks, which the SDK would otherwise wait on until the timeout.
type callTrace struct {
	mu sync.Mutex
	// attempts counts requests handed to the transport, dialFailures
	// those that failed to open a connection (so sent nothing).
	attempts, dialFailures int
	cancel                 context.CancelCauseFunc
}

type traceKey struct{}

// withTrace returns ctx carrying tr for the tracing transport.
func withTrace(ctx context.Context, tr *callTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

// mayHaveReached reports whether a request of this call may have reached
// the server.
func (tr *callTrace) mayHaveReached() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.attempts > tr.dialFailures
}

func (tr *callTrace) count(attempt, dialFailure int) {
	tr.mu.Lock()
	tr.attempts += attempt
	tr.dialFailures += dialFailure
	tr.mu.Unlock()
}

// errStreamBroken is the cause of a call cancelled because its response
// stream broke.
var errStreamBroken = errors.New("the connection to the MCP server broke while the call was in flight")

// tracingTransport wraps the HTTP client's transport for the trace.
type tracingTransport struct {
	base http.RoundTripper
	// fresh, when set, carries the requests of tool calls, each on a new
	// connection. On a kept-alive connection a request can race the
	// server closing it while idle; the failure then looks exactly like
	// a server dying mid-call, and a call that never ran would be
	// reported as unknown. On a new connection, failing to connect is
	// the only way a request is lost unseen.
	fresh http.RoundTripper
}

// newTracingTransport wraps base; when base is an *http.Transport, tool
// calls get a clone of it without keep-alives (see tracingTransport.fresh).
// Both carry the trace context of a request made inside a span (a tool
// call's) to the server (telemetry.Transport).
func newTracingTransport(base http.RoundTripper) *tracingTransport {
	t := &tracingTransport{base: telemetry.Transport(base)}
	if ht, ok := base.(*http.Transport); ok {
		fresh := ht.Clone()
		fresh.DisableKeepAlives = true
		t.fresh = telemetry.Transport(fresh)
	}
	return t
}

// RoundTrip records whether the request may have reached the server (any
// outcome but a failure to connect) and watches the response body.
func (t *tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tr, _ := req.Context().Value(traceKey{}).(*callTrace)
	if tr == nil {
		return t.base.RoundTrip(req)
	}
	rt := t.base
	if t.fresh != nil {
		rt = t.fresh
	}
	// Counted before the request goes out: while it is on its way it
	// may reach the server.
	tr.count(1, 0)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if isDialError(err) {
			tr.count(0, 1)
		}
		return resp, err
	}
	resp.Body = &tracedBody{ReadCloser: resp.Body, ctx: req.Context(), tr: tr}
	return resp, nil
}

// CloseIdleConnections drops pooled connections, so the next request dials
// afresh: after a failure, a kept-alive connection to a server that died
// would make a request that never ran look like one that may have.
func (t *tracingTransport) CloseIdleConnections() { closeIdle(t.base, t.fresh) }

// closeIdle passes CloseIdleConnections on to the transports that have it,
// as the wrappers of the HTTP client's transport all do.
func closeIdle(rts ...http.RoundTripper) {
	for _, rt := range rts {
		if ci, ok := rt.(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
}

// isDialError reports whether err is a failure to open a connection, so no
// byte of the request was sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// tracedBody cancels the call when its response stream ends with an error
// other than a clean end or our own cancellation: the server or the
// connection died while the call was in flight.
type tracedBody struct {
	io.ReadCloser
	ctx    context.Context
	tr     *callTrace
	mu     sync.Mutex
	closed bool
}

// Read passes data through and reports a broken stream.
func (b *tracedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() == nil {
		b.mu.Lock()
		closed := b.closed
		b.mu.Unlock()
		if !closed && b.tr.cancel != nil {
			b.tr.cancel(fmt.Errorf("%w: %v", errStreamBroken, err))
		}
	}
	return n, err
}

// Close marks the body closed by its reader, so later read errors are not
// taken for a broken connection.
func (b *tracedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.ReadCloser.Close()
}

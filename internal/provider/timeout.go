package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// Defaults of Timeouts. A whole reply gets ten minutes, which a long answer
// of a slow model fits in; a stream that sends nothing for five minutes (no
// headers, no chunk) has stalled, since even a model that thinks before it
// writes keeps its stream alive far more often.
const (
	DefaultRequestTimeout = 10 * time.Minute
	DefaultIdleTimeout    = 5 * time.Minute
)

// Timeouts bound each provider request, so that a server that accepts a
// request and never answers fails (and is retried) instead of holding the
// run until its deadline, or forever when it has none. The run's deadline
// still applies on top: a request never outlives it.
type Timeouts struct {
	// Request bounds one request, from sending it to the end of the
	// reply (a whole stream); 0 means DefaultRequestTimeout, a negative
	// value means none.
	Request time.Duration
	// Idle bounds the silence of a streamed request: before the response
	// headers and between two reads of the body; 0 means
	// DefaultIdleTimeout, a negative value means none. A request that is
	// not streamed has only the Request bound, since its server says
	// nothing until the reply is complete.
	Idle time.Duration
}

// errRequestTimeout and errIdleTimeout are the causes with which a
// request's context is cancelled when a timeout fires.
var (
	errRequestTimeout = errors.New("per-request timeout")
	errIdleTimeout    = errors.New("stream idle timeout")
)

// WithTimeouts wraps p so that every request gets the bounds of t. A
// request cut by them fails with a transient *Error of KindTimeout, which
// WithRetry retries; wrap the result of WithTimeouts in WithRetry, so each
// try has its own bounds. HTTP providers report stream activity to the idle
// bound through their client's transport (httpClient); other providers
// only have the Request bound.
func WithTimeouts(p Provider, t Timeouts) Provider {
	if t.Request == 0 {
		t.Request = DefaultRequestTimeout
	}
	if t.Idle == 0 {
		t.Idle = DefaultIdleTimeout
	}
	return &timed{p: p, t: t}
}

// timed is the Provider WithTimeouts returns.
type timed struct {
	p Provider
	t Timeouts
}

// Identity is the wrapped provider's: timeouts do not change the endpoint.
func (w *timed) Identity() state.ProviderIdentity { return w.p.Identity() }

// Complete calls the wrapped provider under the bounds, and turns a cut
// made by them (not by the caller's context) into a KindTimeout error.
func (w *timed) Complete(ctx context.Context, req Request, progress func(Event)) (Reply, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if w.t.Request > 0 {
		timer := time.AfterFunc(w.t.Request, func() { cancel(errRequestTimeout) })
		defer timer.Stop()
	}
	if req.Stream && w.t.Idle > 0 {
		watch := &idleWatch{d: w.t.Idle, timer: time.AfterFunc(w.t.Idle, func() { cancel(errIdleTimeout) })}
		defer watch.timer.Stop()
		actx = context.WithValue(actx, idleWatchKey{}, watch)
	}
	reply, err := w.p.Complete(actx, req, progress)
	if err == nil || ctx.Err() != nil {
		return reply, err
	}
	switch context.Cause(actx) {
	case errRequestTimeout:
		return Reply{}, &Error{Kind: KindTimeout, Transient: true, Message: fmt.Sprintf(
			"no complete reply within %s (the per-request timeout, NEXA_PROVIDER_TIMEOUT)", w.t.Request)}
	case errIdleTimeout:
		return Reply{}, &Error{Kind: KindTimeout, Transient: true, Message: fmt.Sprintf(
			"the server sent nothing for %s (the stream idle timeout, NEXA_PROVIDER_IDLE_TIMEOUT)", w.t.Idle)}
	}
	return reply, err
}

// idleWatchKey finds a request's idleWatch in its context.
type idleWatchKey struct{}

// idleWatch cancels a streamed request that has been silent for d; every
// read that returns data starts the wait again.
type idleWatch struct {
	d     time.Duration
	timer *time.Timer
}

func (w *idleWatch) touch() { w.timer.Reset(w.d) }

// watchTransport reports the response and every read of its body to the
// request's idleWatch, when it has one.
type watchTransport struct{ base http.RoundTripper }

// RoundTrip passes the request on and wraps the body of its response.
func (t watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if w, ok := req.Context().Value(idleWatchKey{}).(*idleWatch); ok && err == nil && res != nil && res.Body != nil {
		w.touch()
		res.Body = &watchedBody{ReadCloser: res.Body, watch: w}
	}
	return res, err
}

// watchedBody is a response body whose reads keep its idleWatch waiting.
type watchedBody struct {
	io.ReadCloser
	watch *idleWatch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.watch.touch()
	}
	return n, err
}

package provider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// The limits on one model reply (docs/providers.md, "Size limits"). The
// server is whatever --base-url names, so a broken or hostile one could
// otherwise send an endless body and make nexa hold it all in memory. The
// numbers are far above any real reply: a model's longest answer is a few
// hundred thousand tokens, about a megabyte of text, and a stream of it
// costs a few hundred bytes of framing per token.
const (
	// MaxReplyBytes bounds the body of a reply that is not streamed,
	// one event of a stream, and the content a stream accumulates (its
	// text, refusal, thinking, tool-call ids, names and arguments), so a
	// reply is refused for its size the same way whichever way it comes.
	MaxReplyBytes = 32 << 20
	// MaxStreamBytes bounds all the bytes of one streamed reply, framing
	// and events that carry nothing (pings, comments) included, so that
	// a server cannot keep a request reading for ever below the other
	// limits.
	MaxStreamBytes = 256 << 20
	// maxErrorBodyBytes is how much of an error response (HTTP 400 and
	// above) is read: only its first few hundred bytes reach a message,
	// and the status alone classifies the error, so the rest is ignored
	// rather than refused.
	maxErrorBodyBytes = 64 << 10
)

// replyLimits holds the limits one provider applies; the constructors set
// the documented ones and tests shrink them to run fast.
type replyLimits struct {
	body    int64 // a reply that is not a stream
	event   int64 // one event of a stream, from its first line to the blank line that ends it
	content int64 // what a stream accumulates into the reply
	stream  int64 // all the bytes of one stream
}

// defaultReplyLimits returns the documented limits, for a new provider.
func defaultReplyLimits() *replyLimits {
	return &replyLimits{body: MaxReplyBytes, event: MaxReplyBytes, content: MaxReplyBytes, stream: MaxStreamBytes}
}

// errTooLarge is the error a limited body returns once the server has sent
// more than a limit allows. It is not a network error, so the callers can
// tell it from a broken connection (which is retried) with errors.As.
type errTooLarge struct{ msg string }

func (e *errTooLarge) Error() string { return e.msg }

// tooLarge turns a read error caused by a size limit into the permanent
// KindBadReply error the request fails with; nil for any other error. A
// line the SDK's SSE decoder refuses as too long (bufio.ErrTooLong, its own
// cap of 32 MiB a line) is the same fault as an event over the limit. The
// error is not transient: a server that sends too much once will do it
// again, and each try would read the limit's worth before failing.
func tooLarge(err error, lim *replyLimits) *Error {
	var tl *errTooLarge
	switch {
	case errors.As(err, &tl):
		return &Error{Kind: KindBadReply, Message: tl.msg}
	case errors.Is(err, bufio.ErrTooLong):
		return &Error{Kind: KindBadReply, Message: eventTooLarge(lim.event)}
	}
	return nil
}

// contentTooLarge is the error of a stream whose accumulated content has
// passed its limit.
func contentTooLarge(limit int64) *Error {
	return &Error{Kind: KindBadReply, Message: fmt.Sprintf(
		"the streamed reply's content (text, thinking, tool calls) is over %s, the limit on one reply; it was not read further", sizeText(limit))}
}

func eventTooLarge(limit int64) string {
	return fmt.Sprintf("one event of the stream is over %s, the limit on a stream event; it was not read further", sizeText(limit))
}

// limitTransport bounds the body of every response: an error response is
// cut silently at maxErrorBodyBytes, a stream (Content-Type
// text/event-stream) by the stream and event limits, and any other body by
// the body limit. It sits in the transport so that it also bounds the
// bodies the SDKs read themselves, without reaching into them.
type limitTransport struct {
	base   http.RoundTripper
	limits *replyLimits
}

// RoundTrip passes the request on and wraps the body of its response.
func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil || res == nil || res.Body == nil {
		return res, err
	}
	lim := t.limits
	if lim == nil {
		lim = defaultReplyLimits()
	}
	switch mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); {
	case res.StatusCode >= 400:
		res.Body = cutBody{Reader: io.LimitReader(res.Body, maxErrorBodyBytes), Closer: res.Body}
	case mt == "text/event-stream":
		res.Body = &limitedBody{rc: res.Body, max: lim.stream, eventMax: lim.event, lineStart: true,
			msg: fmt.Sprintf("the stream is over %s, the limit on one streamed reply; it was not read further", sizeText(lim.stream))}
	default:
		res.Body = &limitedBody{rc: res.Body, max: lim.body,
			msg: fmt.Sprintf("the reply is over %s, the limit on one reply; it was not read further", sizeText(lim.body))}
	}
	return res, nil
}

// cutBody is an error response's body, read up to its limit and closed
// as a whole.
type cutBody struct {
	io.Reader
	io.Closer
}

// limitedBody fails with an *errTooLarge once more than max bytes have
// been read, or, for a stream (eventMax > 0), once one event is longer
// than eventMax. It never asks the connection for more than one byte past
// a limit, so what a refused reply costs is bounded by the limit.
type limitedBody struct {
	rc  io.ReadCloser
	max int64
	n   int64
	msg string // the error past max
	// eventMax bounds an SSE event: the bytes since the last blank line
	// (a line ending right after another; a CR before the LF is part of
	// the ending). 0 for a body that is not a stream.
	eventMax  int64
	event     int64
	lineStart bool
	err       error
}

// Read reads from the body and counts, failing once a limit is passed.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	allowed := b.max - b.n
	if b.eventMax > 0 {
		allowed = min(allowed, b.eventMax-b.event)
	}
	if int64(len(p)) > allowed+1 {
		p = p[:allowed+1]
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		b.err = &errTooLarge{msg: b.msg}
		return 0, b.err
	}
	if b.eventMax > 0 && b.countEvents(p[:n]) {
		b.err = &errTooLarge{msg: eventTooLarge(b.eventMax)}
		return 0, b.err
	}
	return n, err
}

// countEvents adds the bytes of p to the current event, starting a new
// one at each blank line; it reports whether an event passed eventMax.
func (b *limitedBody) countEvents(p []byte) bool {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.event += int64(len(p))
			if len(bytes.Trim(p, "\r")) > 0 {
				b.lineStart = false
			}
			return b.event > b.eventMax
		}
		if b.lineStart && len(bytes.Trim(p[:i], "\r")) == 0 {
			b.event = 0 // a blank line: the event is over
		} else {
			b.event += int64(i + 1)
		}
		b.lineStart = true
		if b.event > b.eventMax {
			return true
		}
		p = p[i+1:]
	}
	return false
}

// Close closes the underlying body.
func (b *limitedBody) Close() error { return b.rc.Close() }

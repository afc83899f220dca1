package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// The tests below answer with bodies that never end and check that a
// request stops reading at the documented limit, fails with a permanent
// bad_reply naming it, and is not retried. What a reply cost is measured
// as the bytes the provider took from the response body, never by time.

// endless is a body that never ends: prefix, then unit over and over.
type endless struct {
	prefix, unit string
	off          int // position in unit once prefix is spent
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if e.prefix != "" {
			k := copy(p[n:], e.prefix)
			e.prefix = e.prefix[k:]
			n += k
			continue
		}
		k := copy(p[n:], e.unit[e.off:])
		e.off = (e.off + k) % len(e.unit)
		n += k
	}
	return n, nil
}

// readCounter counts the bytes a provider reads from response bodies. Past
// stop it fails the read, so that a provider without a limit ends with an
// error the test tells apart instead of reading for ever.
type readCounter struct {
	n    atomic.Int64
	stop int64
}

func (c *readCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && res.Body != nil {
		res.Body = &countedBody{ReadCloser: res.Body, c: c}
	}
	return res, err
}

type countedBody struct {
	io.ReadCloser
	c *readCounter
}

var errReadTooFar = errors.New("test: the provider read far past its limit")

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.c.n.Add(int64(n)) > b.c.stop {
		return n, errReadTooFar
	}
	return n, err
}

// limitCase is an endless answer and how the request must end.
type limitCase struct {
	name        string
	stream      bool // the request asks for a stream
	status      int  // 0 means 200
	contentType string
	prefix      string
	unit        string
	kind        string
	transient   bool
	msg         string                    // in the error's message
	maxRead     func(l replyLimits) int64 // the most the provider may read
}

// testSizeLimits runs each case against the provider newProvider builds
// (with limits lim, or the documented ones when lim is nil), through
// WithRetry, and checks the error, the bytes read and the number of
// requests: one for a permanent error.
func testSizeLimits[P Provider](t *testing.T, newProvider func(t *testing.T, baseURL string, c *http.Client) (P, *replyLimits), lim *replyLimits, cases []limitCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				w.WriteHeader(max(c.status, 200))
				io.Copy(w, &endless{prefix: c.prefix, unit: c.unit})
			})
			counter := &readCounter{}
			p, pl := newProvider(t, f.URL, &http.Client{Transport: counter})
			if lim != nil {
				*pl = *lim
			}
			bound := c.maxRead(*pl)
			counter.stop = 4 * bound
			sleeps := 0
			rp := WithRetry(p, RetryPolicy{Attempts: 1, Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }})
			_, err := rp.Complete(context.Background(), userOnly(c.stream), nil)
			pe, ok := AsError(err)
			if !ok || pe.Kind != c.kind || pe.Transient != c.transient || !strings.Contains(pe.Message, c.msg) {
				t.Fatalf("err = %v, want %s (transient %v) saying %q", err, c.kind, c.transient, c.msg)
			}
			tries := int64(f.count())
			if !c.transient && (tries != 1 || sleeps != 0) {
				t.Errorf("%d requests, %d waits: a reply over a limit must not be retried", tries, sleeps)
			}
			if n := counter.n.Load(); n > tries*bound {
				t.Errorf("read %d bytes in %d requests, want at most %d each", n, tries, bound)
			}
		})
	}
}

// smallLimits keep the tests fast; the defaults are tested apart.
var smallLimits = replyLimits{body: 64 << 10, event: 32 << 10, content: 48 << 10, stream: 256 << 10}

func limitedOpenAI(t *testing.T, baseURL string, c *http.Client) (*OpenAI, *replyLimits) {
	t.Helper()
	p, err := NewOpenAI(OpenAIConfig{BaseURL: baseURL + "/v1", Model: "gpt-test", HTTPClient: c})
	if err != nil {
		t.Fatal(err)
	}
	return p, p.limits
}

func limitedAnthropic(t *testing.T, baseURL string, c *http.Client) (*Anthropic, *replyLimits) {
	t.Helper()
	p, err := NewAnthropic(AnthropicConfig{BaseURL: baseURL, Model: "claude-test", HTTPClient: c})
	if err != nil {
		t.Fatal(err)
	}
	return p, p.limits
}

// Bounds on what a refused reply may cost: the limit and one byte to see it
// passed; for an event, also the bytes before it; for content, checked
// after each event, the chunks that carried the content up to the limit,
// the one that passed it and what the SSE decoder buffers ahead.
func bodyBound(l replyLimits) int64   { return l.body + 1 }
func streamBound(l replyLimits) int64 { return l.stream + 1 }
func eventBound(l replyLimits) int64  { return l.event + 4<<10 }

// contentBound is the bound for an endless stream of chunk, each of which
// adds perChunk bytes of content, after prefix.
func contentBound(prefix, chunk string, perChunk int) func(replyLimits) int64 {
	return func(l replyLimits) int64 {
		return int64(len(prefix)) + (l.content/int64(perChunk)+2)*int64(len(chunk)) + 16<<10
	}
}

// openAIChunkText is the text each endless text chunk carries, and
// inputPerChunk the decoded bytes of each endless argument chunk (`\"x`
// decodes to two bytes).
const (
	openAIChunkText = 4 << 10
	inputPerChunk   = 2 * (openAIChunkText / 3)
)

var (
	bigText         = strings.Repeat("a", openAIChunkText)
	openAIChunk     = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + bigText + `"},"finish_reason":null}]}` + "\n\n"
	openAIEmpty     = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}` + "\n\n"
	anthropicStart  = "event: message_start\ndata: " + toolUseStream[0].data + "\n\nevent: content_block_start\ndata: " + toolUseStream[1].data + "\n\n"
	anthropicDelta  = "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + bigText + `"}}` + "\n\n"
	anthropicInput  = "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"` + strings.Repeat(`\"x`, openAIChunkText/3) + `"}}` + "\n\n"
	anthropicPing   = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	openAIToolChunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + strings.Repeat(`\"x`, openAIChunkText/3) + `"}}]},"finish_reason":null}]}` + "\n\n"
)

// commonLimitCases are the cases both protocols share: a whole reply that
// never ends (asked for or not), one stream event that never ends (one
// line, or endless data lines), a stream of events that carry nothing, and
// an error status whose body never ends (cut, and classified by status).
func commonLimitCases(wholePrefix string) []limitCase {
	return []limitCase{
		{name: "whole reply", contentType: "application/json", prefix: wholePrefix, unit: "a",
			kind: KindBadReply, msg: "the reply is over 65536 bytes, the limit on one reply", maxRead: bodyBound},
		{name: "stream asked, whole reply sent", stream: true, contentType: "application/json", prefix: wholePrefix, unit: "a",
			kind: KindBadReply, msg: "the reply is over 65536 bytes", maxRead: bodyBound},
		{name: "one endless line", stream: true, contentType: "text/event-stream", prefix: `data: {"x":"`, unit: "a",
			kind: KindBadReply, msg: "one event of the stream is over 32768 bytes, the limit on a stream event", maxRead: eventBound},
		{name: "one event of endless lines", stream: true, contentType: "text/event-stream", unit: "data: aaaaaaaaaaaaaaaa\r\n",
			kind: KindBadReply, msg: "one event of the stream is over 32768 bytes", maxRead: eventBound},
		{name: "endless comments", stream: true, contentType: "text/event-stream", unit: ": keep-alive\n\n",
			kind: KindBadReply, msg: "the stream is over 262144 bytes, the limit on one streamed reply", maxRead: streamBound},
		{name: "endless error body", status: 500, contentType: "text/plain", unit: "boom ",
			kind: KindServer, transient: true, msg: "boom", maxRead: func(replyLimits) int64 { return maxErrorBodyBytes }},
	}
}

func TestOpenAIReplySizeLimits(t *testing.T) {
	cases := append(commonLimitCases(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`),
		limitCase{name: "endless text", stream: true, contentType: "text/event-stream", unit: openAIChunk,
			kind: KindBadReply, msg: "the streamed reply's content (text, thinking, tool calls) is over 49152 bytes", maxRead: contentBound("", openAIChunk, openAIChunkText)},
		limitCase{name: "endless arguments", stream: true, contentType: "text/event-stream", unit: openAIToolChunk,
			kind: KindBadReply, msg: "content (text, thinking, tool calls) is over 49152 bytes", maxRead: contentBound("", openAIToolChunk, inputPerChunk)},
		limitCase{name: "endless empty chunks", stream: true, contentType: "text/event-stream", unit: openAIEmpty,
			kind: KindBadReply, msg: "the stream is over 262144 bytes", maxRead: streamBound},
	)
	testSizeLimits(t, limitedOpenAI, &smallLimits, cases)
}

func TestAnthropicReplySizeLimits(t *testing.T) {
	cases := append(commonLimitCases(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"`),
		limitCase{name: "endless text", stream: true, contentType: "text/event-stream", prefix: anthropicStart, unit: anthropicDelta,
			kind: KindBadReply, msg: "the streamed reply's content (text, thinking, tool calls) is over 49152 bytes", maxRead: contentBound(anthropicStart, anthropicDelta, openAIChunkText)},
		limitCase{name: "endless input", stream: true, contentType: "text/event-stream", prefix: anthropicStart, unit: anthropicInput,
			kind: KindBadReply, msg: "content (text, thinking, tool calls) is over 49152 bytes", maxRead: contentBound(anthropicStart, anthropicInput, inputPerChunk)},
		limitCase{name: "endless pings", stream: true, contentType: "text/event-stream", prefix: anthropicStart, unit: anthropicPing,
			kind: KindBadReply, msg: "the stream is over 262144 bytes", maxRead: streamBound},
	)
	testSizeLimits(t, limitedAnthropic, &smallLimits, cases)
}

// The documented limits themselves: 32 MiB for a whole reply and for the
// content of a stream.
func TestOpenAIReplyDefaultLimits(t *testing.T) {
	testSizeLimits(t, limitedOpenAI, nil, []limitCase{
		{name: "whole reply", contentType: "application/json", prefix: `{"choices":[{"message":{"content":"`, unit: bigText,
			kind: KindBadReply, msg: "the reply is over 32 MiB, the limit on one reply", maxRead: bodyBound},
		{name: "endless text", stream: true, contentType: "text/event-stream", unit: openAIChunk,
			kind: KindBadReply, msg: "content (text, thinking, tool calls) is over 32 MiB, the limit on one reply", maxRead: contentBound("", openAIChunk, openAIChunkText)},
	})
}

func TestAnthropicReplyDefaultLimits(t *testing.T) {
	testSizeLimits(t, limitedAnthropic, nil, []limitCase{
		{name: "whole reply", contentType: "application/json", prefix: `{"type":"message","content":[{"type":"text","text":"`, unit: bigText,
			kind: KindBadReply, msg: "the reply is over 32 MiB, the limit on one reply", maxRead: bodyBound},
		{name: "endless text", stream: true, contentType: "text/event-stream", prefix: anthropicStart, unit: anthropicDelta,
			kind: KindBadReply, msg: "content (text, thinking, tool calls) is over 32 MiB, the limit on one reply", maxRead: contentBound(anthropicStart, anthropicDelta, openAIChunkText)},
	})
}

// A reply just under the limits is accepted: the limits refuse only what
// passes them.
func TestReplyUnderLimitsAccepted(t *testing.T) {
	text := strings.Repeat("b", 40<<10)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		sseWriter(w, []string{
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + text[:20<<10] + `"},"finish_reason":null}]}`,
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + text[20<<10:] + `"},"finish_reason":"stop"}]}`,
			`[DONE]`,
		}, 9)
	})
	p, lim := limitedOpenAI(t, f.URL, nil)
	*lim = smallLimits
	reply, err := p.Complete(context.Background(), userOnly(true), nil)
	if err != nil || reply.Message.Content != text {
		t.Fatalf("reply of %d bytes, err = %v", len(reply.Message.Content), err)
	}
}

// The event count starts again at every blank line, whatever the line
// endings and wherever the reads split the stream; an event longer than
// the limit fails even when it is sent in pieces.
func TestLimitedBodyCountsEvents(t *testing.T) {
	for name, c := range map[string]struct {
		body string
		ok   bool
	}{
		"LF events":        {strings.Repeat("data: 0123456789\n\n", 100), true},
		"CRLF events":      {strings.Repeat("data: 0123456789\r\n\r\n", 100), true},
		"comments":         {strings.Repeat(": ping\n\n", 200), true},
		"one long event":   {strings.Repeat("data: 0123456789\n", 10), false},
		"CRLF long event":  {strings.Repeat("data: 0123456789\r\n", 10), false},
		"one long line":    {"data: " + strings.Repeat("x", 100) + "\n\n", false},
		"lone CR no break": {strings.Repeat("data: 0123456789\n\r", 10), false},
	} {
		for _, split := range []bool{false, true} {
			var r io.Reader = strings.NewReader(c.body)
			if split {
				r = iotest.OneByteReader(r)
			}
			b := &limitedBody{rc: io.NopCloser(r), max: 1 << 20, eventMax: 64, lineStart: true, msg: "stream"}
			_, err := io.ReadAll(b)
			var tl *errTooLarge
			if c.ok != (err == nil) || (err != nil && (!errors.As(err, &tl) || !strings.Contains(err.Error(), "over 64 bytes, the limit on a stream event"))) {
				t.Errorf("%s (split %v): err = %v, want ok %v", name, split, err, c.ok)
			}
		}
	}
}

package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// This file holds the fake server and the checks that openai_test.go and
// anthropic_test.go run alike against their provider. A check takes
// newProvider, which builds the provider under test for a server's URL and
// a key (newTestOpenAI, newTestAnthropic).

const testKey = "sk-test-0123456789abcdef"

// fakeServer records every request it receives and answers with handler.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

// recorded is one request. Raw and Body leave out the prompt-caching
// markers (cache_control), so that the checks of how a conversation is
// converted need not say where they sit; Sent is the body as sent, which
// TestAnthropicCacheBreakpoints checks.
type recorded struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    []byte
	Sent   []byte
}

// withoutCacheMarkers removes the cache_control markers from a request
// body, byte for byte otherwise.
func withoutCacheMarkers(raw []byte) []byte {
	const marker = `"cache_control":{"type":"ephemeral"}`
	s := strings.ReplaceAll(string(raw), ","+marker, "")
	return []byte(strings.ReplaceAll(s, marker+",", ""))
}

func newFake(t *testing.T, handler http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent, _ := io.ReadAll(r.Body)
		raw := withoutCacheMarkers(sent)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.requests = append(f.requests, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: raw, Sent: sent})
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("the server received no request")
	}
	return f.requests[len(f.requests)-1]
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// userOnly is the smallest request.
func userOnly(stream bool) Request {
	return Request{Messages: []state.Message{{Role: state.RoleUser, Content: "x"}}, Stream: stream}
}

// writeInPieces writes s in pieces pieces (about), flushing each, so that
// chunk boundaries fall inside JSON and inside lines.
func writeInPieces(w http.ResponseWriter, s string, pieces int) {
	fl := w.(http.Flusher)
	step := len(s)/pieces + 1
	for i := 0; i < len(s); i += step {
		io.WriteString(w, s[i:min(i+step, len(s))])
		fl.Flush()
	}
}

// closeMidEvent answers with a stream that sends partial and then drops
// the connection.
func closeMidEvent(t *testing.T, partial string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, partial)
		w.(http.Flusher).Flush()
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.Flush()
		conn.Close()
	}
}

// testRefusedBeforeSending checks that every request in reqs fails as a
// permanent KindInvalidRequest without reaching the server.
func testRefusedBeforeSending[P Provider](t *testing.T, newProvider func(t *testing.T, baseURL, key string) P, reqs map[string]Request) {
	t.Helper()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {})
	p := newProvider(t, f.URL, "")
	for name, req := range reqs {
		_, err := p.Complete(context.Background(), req, nil)
		pe, ok := AsError(err)
		if !ok || pe.Kind != KindInvalidRequest || pe.Transient {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if f.count() != 0 {
		t.Errorf("%d requests sent", f.count())
	}
}

// statusCase is an HTTP error answer and the *Error it must become.
type statusCase struct {
	name       string
	status     int
	header     map[string]string
	body       string
	kind       string
	transient  bool
	retryAfter time.Duration // 0: expect none; <0: roughly 90s
	msg        string
}

// testStatusErrors answers a minimal request, streamed and not, with each
// case's status, headers and body (as JSON when it starts with "{"), and
// checks the *Error's kind, transience, status, RetryAfter and message,
// and that exactly one request was made.
func testStatusErrors[P Provider](t *testing.T, newProvider func(t *testing.T, baseURL, key string) P, cases []statusCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range c.header {
						w.Header().Set(k, v)
					}
					if strings.HasPrefix(c.body, "{") {
						w.Header().Set("Content-Type", "application/json")
					}
					w.WriteHeader(c.status)
					io.WriteString(w, c.body)
				})
				p := newProvider(t, f.URL, testKey)
				_, err := p.Complete(context.Background(), userOnly(stream), nil)
				pe, ok := AsError(err)
				if !ok {
					t.Fatalf("stream=%v: err = %v (%T)", stream, err, err)
				}
				if pe.Kind != c.kind || pe.Transient != c.transient || pe.Status != c.status {
					t.Errorf("stream=%v: err = %#v", stream, pe)
				}
				switch {
				case c.retryAfter < 0:
					if pe.RetryAfter < 80*time.Second || pe.RetryAfter > 91*time.Second {
						t.Errorf("stream=%v: RetryAfter = %s", stream, pe.RetryAfter)
					}
				case pe.RetryAfter != c.retryAfter:
					t.Errorf("stream=%v: RetryAfter = %s, want %s", stream, pe.RetryAfter, c.retryAfter)
				}
				if !strings.Contains(pe.Message, c.msg) {
					t.Errorf("stream=%v: message %q lacks %q", stream, pe.Message, c.msg)
				}
				// The SDK's own retries are off: exactly one request.
				if n := f.count(); n != 1 {
					t.Errorf("stream=%v: %d requests, want 1", stream, n)
				}
			}
		})
	}
}

// testKeyNeverLeaks sends a minimal request, streamed and not, to each echo
// handler (each answers with the key it received, one way or another) and
// checks that no rendering of the error contains testKey; under a handler
// whose name contains "401" the error must be a permanent KindAuth whose
// message starts with rejected.
func testKeyNeverLeaks[P Provider](t *testing.T, newProvider func(t *testing.T, baseURL, key string) P, echo map[string]http.HandlerFunc, rejected string) {
	t.Helper()
	for name, h := range echo {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, h)
			p := newProvider(t, f.URL, testKey)
			for _, stream := range []bool{false, true} {
				_, err := p.Complete(context.Background(), userOnly(stream), nil)
				if err == nil {
					t.Fatal("no error")
				}
				for _, text := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
					if strings.Contains(text, testKey) {
						t.Fatalf("stream=%v: the key leaked: %s", stream, text)
					}
				}
				if strings.Contains(name, "401") {
					pe, _ := AsError(err)
					if pe == nil || pe.Kind != KindAuth || pe.Transient ||
						!strings.HasPrefix(pe.Message, rejected) {
						t.Errorf("401: %#v", pe)
					}
				}
			}
		})
	}
}

// testConnectionErrors checks that a refused connection (streamed and not)
// and a server that hangs up without answering are transient
// KindConnection errors.
func testConnectionErrors[P Provider](t *testing.T, newProvider func(t *testing.T, baseURL, key string) P) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newProvider(t, "http://"+addr, testKey)
	for _, stream := range []bool{false, true} {
		_, err := p.Complete(context.Background(), userOnly(stream), nil)
		pe, ok := AsError(err)
		if !ok || pe.Kind != KindConnection || !pe.Transient || !strings.Contains(pe.Message, "refused") {
			t.Fatalf("stream=%v: err = %v", stream, err)
		}
	}

	// A server that accepts and hangs up without answering.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			c.Close()
		}
	}()
	p = newProvider(t, "http://"+hang.Addr().String(), testKey)
	_, err = p.Complete(context.Background(), userOnly(false), nil)
	if pe, ok := AsError(err); !ok || pe.Kind != KindConnection || !pe.Transient {
		t.Fatalf("hang-up: err = %v", err)
	}
}

// testContextCanceled cancels a streamed request once the server has sent
// firstEvent (raw SSE text, blank line included) and checks that the error
// is the context's, not an *Error.
func testContextCanceled[P Provider](t *testing.T, newProvider func(t *testing.T, baseURL, key string) P, firstEvent string) {
	t.Helper()
	started := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, firstEvent)
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	})
	p := newProvider(t, f.URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := p.Complete(ctx, userOnly(true), nil)
	if _, ok := AsError(err); ok || err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("err = %v", err)
	}
}

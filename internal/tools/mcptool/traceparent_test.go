package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// TestHTTPCallCarriesTraceContext: a tool call made inside a span (the
// session's execute_tool span) reaches the MCP server with that span's
// W3C traceparent; a call outside any span carries none.
func TestHTTPCallCarriesTraceContext(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := mcpHTTPHandler(newTestServer("base", true))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			mu.Lock()
			seen = append(seen, r.Header.Get("Traceparent"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	opts, _ := testOptions(t)
	s := connect(t, ts.URL, opts)

	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(), sc), 20*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, "read_note", json.RawMessage(`{"name":"x"}`), ""); err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, "read_note", `{"name":"x"}`)

	mu.Lock()
	defer mu.Unlock()
	want := []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("traceparent of the calls: %q, want %q", seen, want)
	}
}

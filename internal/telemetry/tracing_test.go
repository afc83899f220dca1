package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/telemetry"
	"github.com/nexa-run/nexa/internal/telemetry/telemetrytest"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestTracingEnabledOnlyWithAnEndpoint: traces are on only when an OTLP
// endpoint variable is set, and the standard switches turn them off.
func TestTracingEnabledOnlyWithAnEndpoint(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "nexa"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, false},
	}
	for _, c := range cases {
		if got := telemetry.TracingEnabled(envOf(c.env)); got != c.want {
			t.Errorf("TracingEnabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// TestNoExporterWithoutTheVariables: with the variables unset no exporter
// exists, spans are not even made (the context comes back as it was), no
// traceparent leaves, and a collector that would listen hears nothing; the
// same when OTEL_SDK_DISABLED turns a configured endpoint off.
func TestNoExporterWithoutTheVariables(t *testing.T) {
	col := telemetrytest.NewCollector(t)
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL, "OTEL_SDK_DISABLED": "true"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		tr, err := telemetry.StartTracing(context.Background(), os.Getenv, "test")
		if err != nil {
			t.Fatal(err)
		}
		if tr.Enabled() {
			t.Fatalf("tracing on with %v", env)
		}
		ctx := context.Background()
		sctx, seg := tr.StartSegment(ctx, "run_1", "Reviewer")
		cctx, chat := tr.StartChat(sctx, telemetry.ChatRequest{RunID: "run_1", Provider: "openai", Model: "m"})
		if cctx != ctx {
			t.Error("a span context was made with tracing off")
		}
		var header string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { header = r.Header.Get("Traceparent") }))
		req, _ := http.NewRequestWithContext(cctx, "GET", srv.URL, nil)
		res, err := (&http.Client{Transport: telemetry.Transport(nil)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		srv.Close()
		if header != "" {
			t.Errorf("traceparent %q sent with tracing off", header)
		}
		chat.End(telemetry.ChatResult{})
		seg.End("completed", "")
		if err := tr.ShutdownWithin(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if n := col.Requests(); n != 0 {
		t.Errorf("the collector got %d requests with tracing off", n)
	}
}

// TestSpansReachTheCollector: a segment, a model request and a tool call
// arrive over OTLP/HTTP with the GenAI attribute names, the run and call
// ids, as one trace (chat and tool under the segment); the HTTP request made
// inside the chat span carries its traceparent.
func TestSpansReachTheCollector(t *testing.T) {
	col := telemetrytest.NewCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	tr, err := telemetry.StartTracing(context.Background(), os.Getenv, "v9")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() {
		t.Fatal("tracing off with an endpoint")
	}
	ctx, seg := tr.StartSegment(context.Background(), "run_7", "Reviewer")
	cctx, chat := tr.StartChat(ctx, telemetry.ChatRequest{RunID: "run_7", Provider: "openai", Model: "gpt-test", BaseURL: "http://user:pw@models.internal:8000/v1"})
	var traceparent string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { traceparent = r.Header.Get("Traceparent") }))
	defer srv.Close()
	req, _ := http.NewRequestWithContext(cctx, "POST", srv.URL, nil)
	res, err := (&http.Client{Transport: telemetry.Transport(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if req.Header.Get("Traceparent") != "" {
		t.Error("the caller's request was changed")
	}
	chat.End(telemetry.ChatResult{InputTokens: 30, OutputTokens: 12, FinishReason: "tool_calls"})
	_, ts := tr.StartTool(ctx, telemetry.ToolCall{RunID: "run_7", CallID: "call_1", Tool: "record_review", Body: "python"})
	ts.End(telemetry.OutcomeUnknown)
	seg.End("unknown_outcome", "")
	if err := tr.ShutdownWithin(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	spans := map[string]telemetrytest.Span{}
	for _, s := range col.Spans() {
		spans[s.Name] = s
	}
	segS, chatS, toolS := spans["invoke_agent Reviewer"], spans["chat gpt-test"], spans["execute_tool record_review"]
	if segS.SpanID == "" || chatS.SpanID == "" || toolS.SpanID == "" {
		t.Fatalf("spans received: %v", col.Spans())
	}
	want := []struct {
		span      telemetrytest.Span
		key, want string
	}{
		{segS, "gen_ai.operation.name", "invoke_agent"},
		{segS, "gen_ai.agent.name", "Reviewer"},
		{segS, "nexa.run.id", "run_7"},
		{segS, "nexa.run.status", "unknown_outcome"},
		{chatS, "gen_ai.operation.name", "chat"},
		{chatS, "gen_ai.provider.name", "openai"},
		{chatS, "gen_ai.system", "openai"},
		{chatS, "gen_ai.request.model", "gpt-test"},
		{chatS, "gen_ai.usage.input_tokens", "30"},
		{chatS, "gen_ai.usage.output_tokens", "12"},
		{chatS, "gen_ai.response.finish_reasons", "tool_calls"},
		{chatS, "server.address", "models.internal"},
		{chatS, "server.port", "8000"},
		{chatS, "nexa.run.id", "run_7"},
		{toolS, "gen_ai.operation.name", "execute_tool"},
		{toolS, "gen_ai.tool.name", "record_review"},
		{toolS, "gen_ai.tool.call.id", "call_1"},
		{toolS, "nexa.run.id", "run_7"},
		{toolS, "error.type", "unknown"},
	}
	for _, w := range want {
		if got := w.span.Attrs[w.key]; got != w.want {
			t.Errorf("%s: %s = %q, want %q", w.span.Name, w.key, got, w.want)
		}
	}
	if chatS.TraceID != segS.TraceID || chatS.ParentSpanID != segS.SpanID || toolS.ParentSpanID != segS.SpanID {
		t.Errorf("chat and tool are not children of the segment: %+v %+v %+v", segS, chatS, toolS)
	}
	if want := "00-" + chatS.TraceID + "-" + chatS.SpanID + "-01"; traceparent != want {
		t.Errorf("traceparent %q, want %q", traceparent, want)
	}
	if segS.ResourceServiceName != "nexa" {
		t.Errorf("service.name %q, want nexa", segS.ResourceServiceName)
	}
	if raw := string(col.Raw()); strings.Contains(raw, "pw@") || strings.Contains(raw, "user:pw") {
		t.Error("the base URL's credentials reached the collector")
	}
}

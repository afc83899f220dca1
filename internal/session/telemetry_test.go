package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/telemetry"
	"github.com/nexa-run/nexa/internal/telemetry/telemetrytest"
)

// The secrets of the traced run: the provider key, and a value the model
// passes to the tool, which the tool echoes in its output.
const (
	tracedKey    = "sk-test-TRACEDKEY-5151"
	tracedSecret = "hush-SECRETARG-8080"
)

// fakeModel is an OpenAI-compatible server answering a tool call, then a
// final answer; it records each request's traceparent header.
type fakeModel struct {
	mu           sync.Mutex
	traceparents []string
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.traceparents = append(f.traceparents, r.Header.Get("Traceparent"))
	turn := len(f.traceparents)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if turn == 1 || !strings.Contains(string(body), `"tool"`) {
		args, _ := json.Marshal(map[string]string{"content": tracedSecret})
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"echo","arguments":%q}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}`, args)
		return
	}
	fmt.Fprint(w, `{"id":"c2","object":"chat.completion","created":2,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":3,"total_tokens":53}}`)
}

func (f *fakeModel) headers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.traceparents...)
}

// tracedRun runs an agent with one tool call to completion against the
// fake model, with tr and m as the process's telemetry.
func tracedRun(t *testing.T, tr *telemetry.Tracing, m *telemetry.Metrics, model string) *state.RunState {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "echo.nx")
	prog := `@tool("Echo the text")
fn echo(content: string): string {
    return "echoed #{content}"
}

agent Echoer uses echo {
    prompt: "Echo, then answer.",
    stream: false
}
`
	if err := os.WriteFile(src, []byte(prog), 0o600); err != nil {
		t.Fatal(err)
	}
	p, diags := compile.Compile(src, compile.Options{})
	if p == nil || diags.HasErrors() {
		t.Fatalf("compile: %v", diags)
	}
	vars := map[string]string{"NEXA_API_KEY": tracedKey}
	env := Env{Getenv: func(k string) string { return vars[k] }, Environ: func() []string { return []string{"NEXA_API_KEY=" + tracedKey} },
		Version: "test", Tracing: tr, Metrics: m}
	sess, err := Prepare(Options{Env: env, Program: p, Agent: p.Agent("Echoer"),
		Provider: ProviderOptions{Provider: "openai", Model: "gpt-test", BaseURL: model}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	st, err := OpenStore(env, "", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runID := engine.NewRunID(time.Now())
	runner, err := sess.Connect(context.Background(), RunOptions{Store: st, RunID: runID, WorkDir: dir, NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, end := sess.Segment(context.Background(), runID)
	run, err := runner.Start(ctx, engine.NewRun{ID: runID, Task: "echo it", File: src, WorkDir: dir})
	end(run, err)
	if err != nil || run.Status != state.StatusCompleted {
		t.Fatalf("run: %v %v", run, err)
	}
	return run
}

// TestRunTracedAtTheCollector: a run driven through the assembly sends
// the collector a segment span with a chat span per model request and an
// execute_tool span for the call, named and attributed as the GenAI
// conventions say, with the run and call ids; each model request carries
// the traceparent of its chat span; neither the key nor the tool's
// arguments and output reach the collector.
func TestRunTracedAtTheCollector(t *testing.T) {
	col := telemetrytest.NewCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	tr, err := telemetry.StartTracing(context.Background(), os.Getenv, "test")
	if err != nil {
		t.Fatal(err)
	}
	fm := &fakeModel{}
	model := httptest.NewServer(fm)
	defer model.Close()
	run := tracedRun(t, tr, nil, model.URL)
	if err := tr.ShutdownWithin(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	var seg telemetrytest.Span
	var chats, tools []telemetrytest.Span
	for _, s := range col.Spans() {
		switch s.Attrs["gen_ai.operation.name"] {
		case "invoke_agent":
			seg = s
		case "chat":
			chats = append(chats, s)
		case "execute_tool":
			tools = append(tools, s)
		}
	}
	if seg.Name != "invoke_agent Echoer" || seg.Attrs["nexa.run.id"] != run.ID || seg.Attrs["nexa.run.status"] != "completed" {
		t.Errorf("segment span %+v", seg)
	}
	if len(chats) != 2 || len(tools) != 1 {
		t.Fatalf("%d chat and %d tool spans, want 2 and 1: %+v", len(chats), len(tools), col.Spans())
	}
	for _, c := range chats {
		if c.Name != "chat gpt-test" || c.Attrs["gen_ai.provider.name"] != "openai" || c.Attrs["gen_ai.request.model"] != "gpt-test" ||
			c.Attrs["nexa.run.id"] != run.ID || c.ParentSpanID != seg.SpanID || c.TraceID != seg.TraceID {
			t.Errorf("chat span %+v", c)
		}
	}
	if chats[0].Attrs["gen_ai.usage.input_tokens"] != "30" || chats[0].Attrs["gen_ai.usage.output_tokens"] != "12" {
		t.Errorf("first chat's usage %v", chats[0].Attrs)
	}
	tool := tools[0]
	if tool.Name != "execute_tool echo" || tool.Attrs["gen_ai.tool.name"] != "echo" || tool.Attrs["gen_ai.tool.call.id"] != "call_1" ||
		tool.Attrs["nexa.run.id"] != run.ID || tool.ParentSpanID != seg.SpanID {
		t.Errorf("tool span %+v", tool)
	}
	got := fm.headers()
	if len(got) != 2 {
		t.Fatalf("the model got %d requests", len(got))
	}
	for i, h := range got {
		want := "00-" + chats[i].TraceID + "-" + chats[i].SpanID + "-01"
		if h != want {
			t.Errorf("request %d: traceparent %q, want %q (its chat span)", i+1, h, want)
		}
	}
	raw := string(col.Raw())
	for _, secret := range []string{tracedKey, tracedSecret} {
		if strings.Contains(raw, secret) {
			t.Errorf("%s reached the collector", secret)
		}
	}
}

// TestRunUntracedWithoutTheVariables: with no endpoint configured the same
// run sends no traceparent to the model server.
func TestRunUntracedWithoutTheVariables(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, err := telemetry.StartTracing(context.Background(), os.Getenv, "test")
	if err != nil {
		t.Fatal(err)
	}
	fm := &fakeModel{}
	model := httptest.NewServer(fm)
	defer model.Close()
	tracedRun(t, tr, nil, model.URL)
	for i, h := range fm.headers() {
		if h != "" {
			t.Errorf("request %d carried traceparent %q with tracing off", i+1, h)
		}
	}
}

// TestRunCountedInTheMetrics: the assembly counts a run's model steps,
// its tool call by tool and outcome, and the segment by the status it
// ended at.
func TestRunCountedInTheMetrics(t *testing.T) {
	m := telemetry.NewMetrics(telemetry.MetricsOptions{})
	model := httptest.NewServer(&fakeModel{})
	defer model.Close()
	tracedRun(t, nil, m, model.URL)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for _, line := range []string{
		`nexa_tool_calls_total{outcome="ok",tool="echo"} 1`,
		`nexa_tool_duration_seconds_count{tool="echo"} 1`,
		`nexa_step_duration_seconds_count{kind="model"} 2`,
		`nexa_step_duration_seconds_count{kind="tool"} 1`,
		`nexa_run_segments_total{status="completed"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("no line %s in\n%s", line, text)
		}
	}
	if strings.Contains(text, tracedSecret) || strings.Contains(text, tracedKey) {
		t.Error("a secret reached the metrics")
	}
}

// TestProviderRetriesCounted: a model request retried after a transient
// failure counts in nexa_provider_retries_total, and the caller's own
// OnRetry still hears of it. (The retry waits the default backoff, about
// a second.)
func TestProviderRetriesCounted(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a.nx")
	script := filepath.Join(dir, "model.json")
	if err := os.WriteFile(src, []byte("agent A {\n    prompt: \"Answer.\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(`{"turns": [{"error": {"status": 503, "message": "overloaded", "times": 1}, "content": "Hi."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, diags := compile.Compile(src, compile.Options{})
	if p == nil || diags.HasErrors() {
		t.Fatalf("compile: %v", diags)
	}
	m := telemetry.NewMetrics(telemetry.MetricsOptions{})
	heard := 0
	env := Env{Metrics: m}
	sess, err := Prepare(Options{Env: env, Program: p, Agent: p.Agent("A"), Provider: ProviderOptions{Provider: "script:" + script},
		OnRetry: func(int, error, time.Duration) { heard++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	st, err := OpenStore(env, "", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runID := engine.NewRunID(time.Now())
	runner, err := sess.Connect(context.Background(), RunOptions{Store: st, RunID: runID, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	run, err := runner.Start(context.Background(), engine.NewRun{ID: runID, Task: "hi", File: src, WorkDir: dir})
	if err != nil || run.Status != state.StatusCompleted {
		t.Fatalf("run: %v %v", run, err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "nexa_provider_retries_total 1\n") || heard != 1 {
		t.Errorf("retries: OnRetry heard %d; metrics:\n%s", heard, rec.Body)
	}
}

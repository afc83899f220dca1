package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/schemacheck"
	"github.com/nexa-run/nexa/internal/state"
)

// eventSchemas reads the JSON Schema of every event type out of
// docs/reference/events.md: the first json block under each "## `TYPE`".
func eventSchemas(t *testing.T) map[string]*schemacheck.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)\n## `([a-z._]+)`\n.*?```json\n(.*?)```")
	out := map[string]*schemacheck.Schema{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		s, err := schemacheck.Compile([]byte(m[2]))
		if err != nil {
			t.Fatalf("schema of %s in events.md: %v", m[1], err)
		}
		if _, dup := out[m[1]]; dup {
			t.Fatalf("events.md documents %s twice", m[1])
		}
		out[m[1]] = s
	}
	if len(out) == 0 {
		t.Fatal("events.md has no schemas")
	}
	return out
}

// checkLines validates every line but the last against its type's schema
// and returns the types in order.
func checkLines(t *testing.T, schemas map[string]*schemacheck.Schema, out string) []string {
	t.Helper()
	var types []string
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		v, err := schemacheck.Decode([]byte(line))
		if err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i+1, err, line)
		}
		typ, _ := v.(map[string]any)["type"].(string)
		s := schemas[typ]
		if s == nil {
			t.Fatalf("line %d has type %q, which events.md does not document: %s", i+1, typ, line)
		}
		if ps := s.Validate(v); len(ps) > 0 {
			t.Errorf("line %d does not match the schema of %s: %s\n%s", i+1, typ, schemacheck.Explain(ps, 5), line)
		}
		types = append(types, typ)
	}
	return types
}

// TestJSONLEventsMatchTheirSchemas renders every kind of event the engine
// reports, in each of its forms, and checks each line against the schema
// docs/reference/events.md gives its type: the documentation is what nexa
// prints, and every type printed is documented.
func TestJSONLEventsMatchTheirSchemas(t *testing.T) {
	schemas := eventSchemas(t)
	var buf bytes.Buffer
	clock := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	j := newJSONLStream(&buf, func() time.Time { clock = clock.Add(1500 * time.Microsecond); return clock }, strings.NewReplacer("sk-secret", "[REDACTED]").Replace)
	id := "run_01JD7ZZZZZZZZZZZZZZZZZZZZZ"
	expires := clock.Add(time.Hour)
	for _, ev := range []engine.Event{
		{Kind: engine.EventRunStarted, RunID: id},
		{Kind: engine.EventRunResumed, RunID: id},
		{Kind: engine.EventProviderStart, RunID: id, Turn: 1},
		{Kind: engine.EventProviderDelta, RunID: id, Turn: 1, Text: "not streamed"},
		{Kind: engine.EventProviderDone, RunID: id, Turn: 1, Duration: 1783 * time.Millisecond, Calls: 2, Usage: &state.Usage{InputTokens: 17, OutputTokens: 8, TotalTokens: 25}},
		{Kind: engine.EventProviderDone, RunID: id, Turn: 2, Duration: time.Second, Err: errors.New("provider 401: key sk-secret refused")},
		{Kind: engine.EventCallDecided, RunID: id, CallID: "call_1", Tool: "read", Decision: "approved", By: "policy:reads"},
		{Kind: engine.EventCallDecided, RunID: id, CallID: "call_2", Tool: "write", Decision: "denied", By: "ana", Reason: "wrong file"},
		{Kind: engine.EventCallDecided, RunID: id, CallID: "call_3", Tool: "write", Decision: "expired"},
		{Kind: engine.EventToolStart, RunID: id, CallID: "call_1", Tool: "read"},
		{Kind: engine.EventToolDone, RunID: id, CallID: "call_1", Tool: "read", Outcome: "ok", Duration: 12 * time.Millisecond},
		{Kind: engine.EventToolDone, RunID: id, CallID: "call_4", Tool: "read", Outcome: "error", Duration: 3 * time.Millisecond, Err: errors.New("could not start")},
		{Kind: engine.EventToolDone, RunID: id, CallID: "call_2", Tool: "write", Outcome: "denied"},
		{Kind: engine.EventToolDone, RunID: id, CallID: "call_5", Tool: "deploy", Outcome: "unknown", Duration: time.Minute, Err: errors.New("timed out")},
		{Kind: engine.EventCallPending, RunID: id, CallID: "call_6", Tool: "deploy", Arguments: json.RawMessage(`{"token":"sk-secret","env":"prod"}`), Risk: "high", ExpiresAt: &expires},
		{Kind: engine.EventCallPending, RunID: id, CallID: "call_7", Tool: "deploy", Arguments: json.RawMessage(`{}`)},
		{Kind: engine.EventCallInputRequired, RunID: id, CallID: "call_8", Tool: "sign_up", Input: &state.InputRound{Server: "stdio:accounts", Requests: []state.InputRequest{
			{Key: "account", Mode: state.InputForm, Message: "Which account?", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
			{Key: "consent", Mode: state.InputURL, Message: "Grant access.", URL: "https://consent.example.test/x", Domain: "consent.example.test"}}}},
		{Kind: engine.EventCallResponded, RunID: id, CallID: "call_8", Tool: "sign_up", By: "ana"},
		{Kind: engine.EventRunStopped, RunID: id, Status: state.StatusWaitingInput},
	} {
		j.observe(ev)
	}
	j.retrying(1, errors.New("server error 503"), 2*time.Second)
	out := buf.String()
	types := checkLines(t, schemas, out)
	// The schemas are strict enough to catch a wrong line.
	for _, bad := range []string{
		`{"type":"run.started","run_id":"run_01","time":"2026-01-05T10:00:00.001Z"}`,
		`{"type":"tool.completed","run_id":"run_01","seq":2,"time":"2026-01-05T10:00:00.001Z","call_id":"c","tool":"t","outcome":"fine","duration_ms":1}`,
		`{"type":"run.finished","run_id":"run_01","seq":2,"time":"2026-01-05T10:00:00Z","status":"completed"}`,
	} {
		v, _ := schemacheck.Decode([]byte(bad))
		if ps := schemas[v.(map[string]any)["type"].(string)].Validate(v); len(ps) == 0 {
			t.Errorf("the schema accepts %s", bad)
		}
	}
	for typ := range schemas {
		if !strings.Contains(" "+strings.Join(types, " ")+" ", " "+typ+" ") {
			t.Errorf("events.md documents %s, which this test never printed", typ)
		}
	}
	if strings.Contains(out, "sk-secret") || strings.Contains(out, "not streamed") {
		t.Errorf("a secret or a text delta reached the stream:\n%s", out)
	}
	if !strings.Contains(out, `"seq":17,"time":"2026-01-05T10:00:00.025Z"`) || !strings.Contains(out, `"type":"model.retry","run_id":"`+id+`"`) {
		t.Errorf("seq, time or the retry's run id are not as expected:\n%s", out)
	}
}

// TestJSONLRunMatchesTheSchemas drives real runs through nexa agent
// --output jsonl (a scripted model, a tool that needs approval and one that
// does not, then the approving resume) and checks every event line against
// its schema and the last line against the --output json object.
func TestJSONLRunMatchesTheSchemas(t *testing.T) {
	schemas := eventSchemas(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nx := write("review.nx", `@tool("Say hello")
fn hello(name: string): string {
    return "hello " + name
}

@tool("Greet loudly", requires_approval: true, risk_level: "medium")
fn shout(name: string): string {
    return "HELLO " + name
}

agent Greeter uses hello, shout {
    prompt: "Greet."
}
`)
	model := write("model.json", `{"turns": [
  {"tool_calls": [{"id": "call_1", "name": "hello", "arguments": {"name": "ana"}}, {"id": "call_2", "name": "shout", "arguments": {"name": "ana"}}]},
  {"content": "Greeted."}
]}`)
	store := filepath.Join(dir, "runs.sqlite3")
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Main(append(args, "--store", store, "--provider", "script:"+model, "--quiet"), strings.NewReader(""), &out, &errb)
		return code, out.String()
	}
	code, out := run("agent", nx, "Greeter", "Greet ana", "--output", "jsonl")
	if code != ExitWaitingApproval {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitWaitingApproval, out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	types := checkLines(t, schemas, strings.Join(lines[:len(lines)-1], "\n"))
	if got := strings.Join(types, " "); got != "run.started model.request model.reply tool.started tool.completed call.pending run.finished" {
		t.Errorf("event types: %s", got)
	}
	var res runResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.RunID == nil || res.Status != "waiting_approval" {
		t.Fatalf("last line is not the final object (%v): %s", err, lines[len(lines)-1])
	}

	code, out = run("agent", nx, "Greeter", "--resume", *res.RunID, "--approve", "call_2", "--output", "jsonl")
	if code != ExitOK {
		t.Fatalf("resume: exit %d:\n%s", code, out)
	}
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	types = checkLines(t, schemas, strings.Join(lines[:len(lines)-1], "\n"))
	if got := strings.Join(types, " "); got != "run.resumed call.decided tool.started tool.completed model.request model.reply run.finished" {
		t.Errorf("resume's event types: %s", got)
	}
	_, want := run("agent", nx, "Greeter", "--resume", *res.RunID, "--output", "json")
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(want)); err != nil {
		t.Fatal(err)
	}
	if lines[len(lines)-1] != compact.String() {
		t.Errorf("last line:\n%s\nis not the --output json object:\n%s", lines[len(lines)-1], compact.String())
	}
}

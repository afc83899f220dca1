package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/runtime/state"
)

func writeScript(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const reviewScript = `{
  "model": "review-bot",
  "turns": [
    {"content": "Let me record that.",
     "tool_calls": [
       {"id": "call_1", "name": "record_review", "arguments": {"content": "fine", "score": 3}},
       {"name": "notify", "arguments": "{not json"}
     ]},
    {"tool_calls": [{"name": "noop"}], "usage": {"input_tokens": 7, "output_tokens": 5}},
    {"content": "Done."}
  ]
}`

func TestScriptTurnsFollowAssistantCount(t *testing.T) {
	path := writeScript(t, reviewScript)
	s, err := NewScript(path)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []state.Message{
		{Role: state.RoleSystem, Content: "You review."},
		{Role: state.RoleUser, Content: "Review this."},
	}
	ctx := context.Background()

	r, err := s.Complete(ctx, Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Role != state.RoleAssistant || r.Message.Content != "Let me record that." {
		t.Fatalf("turn 1 message = %+v", r.Message)
	}
	want := []state.ToolCall{
		{ID: "call_1", Name: "record_review", Arguments: `{"content":"fine","score":3}`},
		{ID: "call_1_2", Name: "notify", Arguments: "{not json"},
	}
	if len(r.Message.ToolCalls) != 2 || r.Message.ToolCalls[0] != want[0] || r.Message.ToolCalls[1] != want[1] {
		t.Fatalf("tool calls = %+v, want %+v", r.Message.ToolCalls, want)
	}
	if r.FinishReason != "tool_calls" {
		t.Errorf("finish = %q", r.FinishReason)
	}
	// Estimated usage: ceil(bytes/4).
	inBytes := len("You review.") + len("Review this.")
	if r.Usage.InputTokens != (inBytes+3)/4 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens || r.Usage.OutputTokens == 0 || r.Usage.ProviderRequests != 1 {
		t.Errorf("usage = %+v", r.Usage)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.Raw, &raw); err != nil || raw["turn"] != float64(1) || raw["provider"] != "script" {
		t.Errorf("raw = %s (%v)", r.Raw, err)
	}

	// Same request again → same reply (stateless).
	r2, err := s.Complete(ctx, Request{Messages: msgs}, nil)
	if err != nil || string(r2.Raw) != string(r.Raw) {
		t.Fatalf("repeat differs: %s vs %s (%v)", r2.Raw, r.Raw, err)
	}

	msgs = append(msgs, r.Message,
		state.Message{Role: state.RoleTool, ToolCallID: "call_1", Content: "ok"},
		state.Message{Role: state.RoleTool, ToolCallID: "call_1_2", Content: "bad args", IsError: true})
	r, err = s.Complete(ctx, Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0] != (state.ToolCall{ID: "call_2_1", Name: "noop", Arguments: "{}"}) {
		t.Fatalf("turn 2 calls = %+v", r.Message.ToolCalls)
	}
	if r.Usage != (state.Usage{InputTokens: 7, OutputTokens: 5, TotalTokens: 12, ProviderRequests: 1}) {
		t.Errorf("usage override = %+v", r.Usage)
	}

	msgs = append(msgs, r.Message, state.Message{Role: state.RoleTool, ToolCallID: "call_2_1", Content: "{}"})
	var deltas []string
	r, err = s.Complete(ctx, Request{Messages: msgs, Stream: true}, func(e Event) { deltas = append(deltas, e.TextDelta) })
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "Done." || len(r.Message.ToolCalls) != 0 || r.FinishReason != "stop" {
		t.Fatalf("turn 3 = %+v %q", r.Message, r.FinishReason)
	}
	if strings.Join(deltas, "") != "Done." {
		t.Errorf("stream deltas = %q", deltas)
	}

	msgs = append(msgs, r.Message)
	_, err = s.Complete(ctx, Request{Messages: msgs}, nil)
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindScriptExhausted || pe.Transient {
		t.Fatalf("exhausted err = %v", err)
	}
	if !strings.Contains(pe.Message, "3 turn(s)") || !strings.Contains(pe.Message, path) {
		t.Errorf("exhausted message = %q", pe.Message)
	}
}

func TestScriptIdentity(t *testing.T) {
	path := writeScript(t, reviewScript)
	s, err := NewScript(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(reviewScript))
	want := state.ProviderIdentity{Kind: "script", Model: "review-bot", Digest: "sha256:" + hex.EncodeToString(sum[:])}
	if s.Identity() != want {
		t.Errorf("identity = %+v, want %+v", s.Identity(), want)
	}
	if s.Turns() != 3 {
		t.Errorf("turns = %d", s.Turns())
	}
	s2, err := NewScript(writeScript(t, `{"turns": [{"content": "hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s2.Identity().Model != DefaultScriptModel {
		t.Errorf("default model = %q", s2.Identity().Model)
	}
}

func TestScriptErrorTurns(t *testing.T) {
	s, err := NewScript(writeScript(t, `{"turns": [
  {"error": {"status": 503, "message": "overloaded", "times": 2, "retry_after": 1.5}, "content": "recovered"},
  {"error": {"status": 400, "message": "bad request"}}
]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := Request{Messages: []state.Message{{Role: state.RoleUser, Content: "go"}}}
	for i := 0; i < 2; i++ {
		_, err := s.Complete(ctx, req, nil)
		pe, ok := AsError(err)
		if !ok || pe.Kind != KindServer || !pe.Transient || pe.Status != 503 || pe.Message != "overloaded" || pe.RetryAfter.Seconds() != 1.5 {
			t.Fatalf("attempt %d: err = %#v", i, err)
		}
	}
	r, err := s.Complete(ctx, req, nil)
	if err != nil || r.Message.Content != "recovered" {
		t.Fatalf("after failures: %+v %v", r, err)
	}
	req.Messages = append(req.Messages, r.Message)
	for i := 0; i < 3; i++ {
		_, err := s.Complete(ctx, req, nil)
		pe, ok := AsError(err)
		if !ok || pe.Kind != KindInvalidRequest || pe.Transient {
			t.Fatalf("permanent error turn: %v", err)
		}
	}
}

func TestScriptBadFiles(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"syntax", "{\n  \"turns\": [\n    {\"content\": \"a\",}\n  ]\n}", []string{":3:", "invalid character"}},
		{"unknown top", `{"modle": "x", "turns": []}`, []string{`unknown field "modle"`, ":1:"}},
		{"unknown turn field", "{\"turns\": [\n  {\"content\": \"a\"},\n  {\"contnet\": \"b\"}\n]}", []string{":3:4:", "turn 2", `unknown field "contnet"`}},
		{"unknown call field", `{"turns": [{"tool_calls": [{"name": "a", "args": {}}]}]}`, []string{"turn 1", `unknown field "args"`}},
		{"wrong type", "{\"turns\": [\n {\"content\": 5}\n]}", []string{"turn 1", "content", ":2:"}},
		{"empty turn", `{"turns": [{"content": "ok"}, {}]}`, []string{"turn 2", "says nothing"}},
		{"empty turn, placed", "{\"turns\": [\n {\"content\": \"ok\"},\n  {}\n]}", []string{":3:3:", "turn 2", "says nothing"}},
		{"nameless call", `{"turns": [{"tool_calls": [{"id": "x"}]}]}`, []string{"turn 1", `no "name"`}},
		{"dup ids", `{"turns": [{"tool_calls": [{"id": "x", "name": "a"}, {"id": "x", "name": "b"}]}]}`, []string{`"x" is used twice`}},
		{"no turns", `{"model": "m"}`, []string{`no "turns"`}},
		{"empty", ``, []string{"empty file"}},
		{"trailing", `{"turns": [{"content": "a"}]} {}`, []string{"unexpected data"}},
		{"not object", `[1]`, []string{"expected"}},
		{"bad error", `{"turns": [{"error": {"message": "x"}}]}`, []string{`"status"`}},
		{"times without answer", `{"turns": [{"error": {"status": 500, "times": 1}}]}`, []string{`"times" needs`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeScript(t, c.text)
			_, err := NewScript(path)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
	_, err := NewScript(filepath.Join(t.TempDir(), "missing.json"))
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing file: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		next := u.Unwrap()
		if next == nil {
			return err
		}
		err = next
	}
}

func TestScriptCanceledContext(t *testing.T) {
	s, err := NewScript(writeScript(t, `{"turns": [{"content": "a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Complete(ctx, Request{}, nil); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("err = %v", err)
	}
}

func TestSplitWords(t *testing.T) {
	for _, s := range []string{"", "a", "a b", "  lead", "trail  ", "x\n\ny z"} {
		if got := strings.Join(splitWords(s), ""); got != s {
			t.Errorf("splitWords(%q) joined = %q", s, got)
		}
	}
}

// A conversation that grows by appending is counted incrementally; the
// estimate must be the one a fresh count of the whole request gives, also
// when a message counted before is edited in place or another
// conversation comes in between.
func TestScriptUsageIncrementalMatchesFresh(t *testing.T) {
	path := writeScript(t, `{"turns": [{"content": "a"}, {"content": "bb"}, {"content": "ccc"}, {"content": "dddd"}]}`)
	s, err := NewScript(path)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(msgs []state.Message) state.Usage {
		f, err := NewScript(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.Complete(context.Background(), Request{Messages: append([]state.Message(nil), msgs...)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Usage
	}
	msgs := make([]state.Message, 0, 16)
	msgs = append(msgs, state.Message{Seq: 0, Role: state.RoleUser, Content: "hello there"})
	other := []state.Message{{Seq: 0, Role: state.RoleUser, Content: "x"}}
	for i := 0; i < 3; i++ {
		r, err := s.Complete(context.Background(), Request{Messages: msgs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := fresh(msgs); r.Usage != want {
			t.Fatalf("turn %d: usage %+v, want %+v", i+1, r.Usage, want)
		}
		if i == 0 {
			if _, err := s.Complete(context.Background(), Request{Messages: other}, nil); err != nil {
				t.Fatal(err)
			}
		}
		msgs = append(msgs, r.Message, state.Message{Seq: len(msgs) + 1, Role: state.RoleUser, Content: "more text"})
		if i == 1 {
			msgs[len(msgs)-1].Content = "edited in place, longer"
		}
	}
}

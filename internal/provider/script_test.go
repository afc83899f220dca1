package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
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
	s, err := NewScript(path, CheckEveryTurn)
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
	s, err := NewScript(path, CheckEveryTurn)
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
	s2, err := NewScript(writeScript(t, `{"turns": [{"content": "hi"}]}`), CheckEveryTurn)
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
]}`), CheckEveryTurn)
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

// TestScriptBadFiles: a file that is not a script fails in NewScript; a
// turn that is wrong fails the request that reaches it (turn > 0), with
// the same position and words, and the turns before it answer.
func TestScriptBadFiles(t *testing.T) {
	cases := []struct {
		name, text string
		turn       int // 0: NewScript fails; n: the request for turn n fails
		want       []string
	}{
		{"syntax", "{\n  \"turns\": [\n    {\"content\": \"a\",}\n  ]\n}", 0, []string{":3:", "invalid character"}},
		{"unknown top", `{"modle": "x", "turns": []}`, 0, []string{`unknown field "modle"`, ":1:"}},
		{"unknown turn field", "{\"turns\": [\n  {\"content\": \"a\"},\n  {\"contnet\": \"b\"}\n]}", 2, []string{":3:4:", "turn 2", `unknown field "contnet"`}},
		{"unknown call field", `{"turns": [{"tool_calls": [{"name": "a", "args": {}}]}]}`, 1, []string{"turn 1", `unknown field "args"`}},
		{"wrong type", "{\"turns\": [\n {\"content\": 5}\n]}", 1, []string{"turn 1", "content", ":2:"}},
		{"empty turn", `{"turns": [{"content": "ok"}, {}]}`, 2, []string{"turn 2", "says nothing"}},
		{"empty turn, placed", "{\"turns\": [\n {\"content\": \"ok\"},\n  {}\n]}", 2, []string{":3:3:", "turn 2", "says nothing"}},
		{"nameless call", `{"turns": [{"tool_calls": [{"id": "x"}]}]}`, 1, []string{"turn 1", `no "name"`}},
		{"dup ids", `{"turns": [{"tool_calls": [{"id": "x", "name": "a"}, {"id": "x", "name": "b"}]}]}`, 1, []string{`"x" is used twice`}},
		{"no turns", `{"model": "m"}`, 0, []string{`no "turns"`}},
		{"turns not a list", `{"turns": {"content": "a"}}`, 0, []string{"turns: expected array", ":1:11:"}},
		{"turn not an object", "{\"turns\": [\n {\"content\": \"a\"},\n \"b\"\n]}", 0, []string{"turn 2: expected a JSON object", ":3:2:"}},
		{"model not a string", `{"model": 5, "turns": []}`, 0, []string{"model: expected string", ":1:11:"}},
		{"empty", ``, 0, []string{"empty file"}},
		{"trailing", `{"turns": [{"content": "a"}]} {}`, 0, []string{"unexpected data"}},
		{"cut short", `{"turns": [{"content": "a"}`, 0, []string{"unexpected end"}},
		{"not object", `[1]`, 0, []string{"a script is a JSON object"}},
		{"bad error", `{"turns": [{"error": {"message": "x"}}]}`, 1, []string{`"status"`}},
		{"times without answer", `{"turns": [{"error": {"status": 500, "times": 1}}]}`, 1, []string{`"times" needs`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeScript(t, c.text)
			check := func(err error) {
				t.Helper()
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
			}
			// A new run: every problem is found when the file is read.
			_, err := NewScript(path, CheckEveryTurn)
			check(err)
			if c.turn == 0 {
				_, err = NewScript(path, CheckFromFirstRequest)
				check(err)
				return
			}
			// A resume whose next turn is the wrong one: the file loads,
			// the first request fails with the same words.
			s, err := NewScript(path, CheckFromFirstRequest)
			if err != nil {
				t.Fatalf("NewScript for a resume: %v (turns are checked on the first request)", err)
			}
			check(firstRequestAt(t, s, c.turn))
		})
	}
	_, err := NewScript(filepath.Join(t.TempDir(), "missing.json"), CheckEveryTurn)
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing file: %v", err)
	}
}

// firstRequestAt sends s, as its first request, a conversation whose next
// turn is turn (1-based), as a resumed run would, and returns its error
// (failing the test if it answers). The error must be the non-transient
// script_invalid, the same when asked again.
func firstRequestAt(t *testing.T, s *Script, turn int) error {
	t.Helper()
	msgs := []state.Message{{Role: state.RoleUser, Content: "go"}}
	for i := 1; i < turn; i++ {
		msgs = append(msgs, state.Message{Role: state.RoleAssistant, Content: "earlier"}, state.Message{Role: state.RoleUser, Content: "go"})
	}
	r, err := s.Complete(context.Background(), Request{Messages: msgs}, nil)
	if err == nil {
		t.Fatalf("turn %d answered %+v", turn, r.Message)
	}
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindScriptInvalid || pe.Transient {
		t.Fatalf("turn %d: error %v is not a permanent %s", turn, err, KindScriptInvalid)
	}
	if _, again := s.Complete(context.Background(), Request{Messages: msgs}, nil); again == nil || again.Error() != err.Error() {
		t.Fatalf("turn %d asked again: %v, want %v", turn, again, err)
	}
	return err
}

// TestScriptLongFileLateBadTurn: in a long script with a wrong turn near
// the end, a new run fails when the file is read, before any turn answers;
// a resume from a turn before the wrong one fails on its first request,
// before the resumed run does anything; a resume after it answers, since
// the turns before it are never decoded. Each error names the file, line,
// column and turn, and a syntax error anywhere is found when the file is
// read.
func TestScriptLongFileLateBadTurn(t *testing.T) {
	const n = 2000
	var b strings.Builder
	b.WriteString("{\"turns\": [\n")
	for i := 1; i <= n; i++ {
		switch i {
		case n - 1:
			b.WriteString(`  {"tool_calls": [{"name": "add", "argument": {}}]},` + "\n")
		case n:
			b.WriteString(`  {"content": "done"}` + "\n")
		default:
			fmt.Fprintf(&b, "  {\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": %d}}]},\n", i)
		}
	}
	b.WriteString("]}\n")
	path := writeScript(t, b.String())
	// Line 1 is the opening, so turn k is on line k+1; the unknown field
	// "argument" starts at column 35 of its line.
	want := []string{path + ":2000:35:", "turn 1999", `unknown field "argument"`}
	hasAll := func(err error) {
		t.Helper()
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v lacks %q", err, w)
			}
		}
	}
	_, err := NewScript(path, CheckEveryTurn)
	hasAll(err)

	s, err := NewScript(path, CheckFromFirstRequest)
	if err != nil {
		t.Fatalf("NewScript for a resume: %v", err)
	}
	if s.Turns() != n {
		t.Fatalf("turns = %d, want %d", s.Turns(), n)
	}
	hasAll(firstRequestAt(t, s, 1500))

	s, err = NewScript(path, CheckFromFirstRequest)
	if err != nil {
		t.Fatalf("NewScript for a resume: %v", err)
	}
	msgs := []state.Message{{Role: state.RoleUser, Content: "go"}}
	for i := 1; i < n; i++ {
		msgs = append(msgs, state.Message{Role: state.RoleAssistant, Content: "earlier"}, state.Message{Role: state.RoleUser, Content: "go"})
	}
	if r, err := s.Complete(context.Background(), Request{Messages: msgs}, nil); err != nil || r.Message.Content != "done" {
		t.Fatalf("a resume after the wrong turn: %+v, %v", r.Message, err)
	}

	broken := strings.Replace(b.String(), `{"content": "done"}`, `{"content": "done",}`, 1)
	for _, check := range []ScriptCheck{CheckEveryTurn, CheckFromFirstRequest} {
		_, err = NewScript(writeScript(t, broken), check)
		if err == nil || !strings.Contains(err.Error(), ":2001:") || !strings.Contains(err.Error(), "invalid character") {
			t.Fatalf("a syntax error in the last turn: %v", err)
		}
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
	s, err := NewScript(writeScript(t, `{"turns": [{"content": "a"}]}`), CheckEveryTurn)
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
	s, err := NewScript(path, CheckEveryTurn)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(msgs []state.Message) state.Usage {
		f, err := NewScript(path, CheckEveryTurn)
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

// TestScriptSizeLimit: a script file is read up to MaxScriptBytes and no
// further; a larger one, or an endless device, is refused with the limit
// named instead of being read into memory.
func TestScriptSizeLimit(t *testing.T) {
	const limit = 64
	fits := `{"turns": [{"content": "a"}]}`
	fits += strings.Repeat(" ", limit-len(fits))
	if data, err := readScriptFile(writeScript(t, fits), limit); err != nil || len(data) != limit {
		t.Fatalf("a file of exactly the limit: %d bytes, %v", len(data), err)
	}
	_, err := readScriptFile(writeScript(t, fits+" "), limit)
	if err == nil || !strings.Contains(err.Error(), "is over 64 bytes, the limit for a script file") {
		t.Fatalf("a file one byte over the limit: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	_, err = NewScript("/dev/zero", CheckEveryTurn)
	if err == nil || err.Error() != "script /dev/zero is over 16 MiB, the limit for a script file" {
		t.Fatalf("/dev/zero: %v", err)
	}
}

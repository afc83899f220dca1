package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// The tests below share newFake, testKey and the checks run against both
// providers with openai_test.go (testhelpers_test.go).

func newTestAnthropic(t *testing.T, baseURL, key string) *Anthropic {
	t.Helper()
	p, err := NewAnthropic(AnthropicConfig{BaseURL: baseURL, APIKey: key, Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// anthropicConversation is a request with every kind of message, adjacent
// messages of the same wire role, blank messages (the API rejects blank
// text blocks), a malformed call and two tools.
func anthropicConversation() Request {
	temp := 0.2
	return Request{
		Messages: []state.Message{
			{Seq: 1, Role: state.RoleSystem, Content: "You review."},
			{Seq: 2, Role: state.RoleUser, Content: "Review the text."},
			{Seq: 2, Role: state.RoleSystem, Content: " "},
			{Seq: 3, Role: state.RoleUser, Content: "Be brief."},
			{Seq: 4, Role: state.RoleAssistant, Content: "Reading it.", ToolCalls: []state.ToolCall{
				{ID: "toolu_a", Name: "read_file", Arguments: `{"path": "a.txt"}`},
				{ID: "toolu_b", Name: "record_review", Arguments: `{not json`},
			}},
			{Seq: 5, Role: state.RoleTool, ToolCallID: "toolu_a", Name: "read_file", Content: "hello"},
			{Seq: 6, Role: state.RoleTool, ToolCallID: "toolu_b", Name: "record_review", Content: "invalid arguments", IsError: true},
			{Seq: 7, Role: state.RoleAssistant, Content: "Noted."},
			{Seq: 8, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{{ID: "toolu_c", Name: "record_review", Arguments: ``}}},
			{Seq: 9, Role: state.RoleTool, ToolCallID: "toolu_c", Name: "record_review", Content: ""},
			{Seq: 9, Role: state.RoleUser, Content: "\n"},
			{Seq: 10, Role: state.RoleUser, Content: "Go on."},
		},
		Tools: []ToolSpec{
			{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":100}},"required":["path"],"additionalProperties":false}`)},
			{Name: "record_review", Description: "Record a review", Parameters: json.RawMessage(`{"properties": {"content": {"type": "string"}, "score": {"type": "number", "minimum": 0.50}}}`)},
		},
		ToolChoice:  "required",
		Temperature: &temp,
		MaxTokens:   256,
		JSONOutput:  true,
		// The engine's default (--max-parallel-tools 4): tool_choice
		// carries no disable_parallel_tool_use.
		ParallelToolCalls: true,
	}
}

// wantConversationMessages is the wire form of anthropicConversation's
// messages: alternating roles, tool results first and grouped, is_error
// kept, the malformed call sent with {} and its text kept.
var wantConversationMessages = []string{
	`{"content":[{"text":"Review the text.","type":"text"},{"text":"Be brief.","type":"text"}],"role":"user"}`,
	`{"content":[{"text":"Reading it.","type":"text"},{"id":"toolu_a","input":{"path":"a.txt"},"name":"read_file","type":"tool_use"},{"text":"(The arguments of tool call toolu_b to record_review were not a JSON object and were not sent: {not json)","type":"text"},{"id":"toolu_b","input":{},"name":"record_review","type":"tool_use"}],"role":"assistant"}`,
	`{"content":[{"content":[{"text":"hello","type":"text"}],"tool_use_id":"toolu_a","type":"tool_result"},{"content":[{"text":"invalid arguments","type":"text"}],"is_error":true,"tool_use_id":"toolu_b","type":"tool_result"}],"role":"user"}`,
	`{"content":[{"text":"Noted.","type":"text"},{"id":"toolu_c","input":{},"name":"record_review","type":"tool_use"}],"role":"assistant"}`,
	`{"content":[{"tool_use_id":"toolu_c","type":"tool_result"},{"text":"Go on.","type":"text"}],"role":"user"}`,
}

// checkAnthropicBody checks the wire form of anthropicConversation().
func checkAnthropicBody(t *testing.T, rec recorded, stream bool) {
	t.Helper()
	js := func(v any) string { out, _ := json.Marshal(v); return string(out) }
	b := rec.Body
	if b["model"] != "claude-test" || b["max_tokens"] != float64(256) {
		t.Errorf("model = %v, max_tokens = %v", b["model"], b["max_tokens"])
	}
	if got, want := js(b["system"]), `[{"text":"You review.","type":"text"},{"text":"`+AnthropicJSONInstruction+`","type":"text"}]`; got != want {
		t.Errorf("system = %s\nwant %s", got, want)
	}
	msgs, _ := b["messages"].([]any)
	if len(msgs) != len(wantConversationMessages) {
		t.Fatalf("messages = %s", js(msgs))
	}
	for i, m := range msgs {
		if js(m) != wantConversationMessages[i] {
			t.Errorf("message %d = %s\nwant %s", i, js(m), wantConversationMessages[i])
		}
	}
	// The schemas are sent byte for byte (compacted), "type" added where
	// the schema left it out.
	raw := string(rec.Raw)
	for _, s := range []string{
		`{"input_schema":{"type":"object","properties":{"path":{"type":"string","maxLength":100}},"required":["path"],"additionalProperties":false},"name":"read_file","description":"Read a file"}`,
		`{"input_schema":{"type":"object","properties":{"content":{"type":"string"},"score":{"type":"number","minimum":0.50}}},"name":"record_review","description":"Record a review"}`,
	} {
		if !strings.Contains(raw, s) {
			t.Errorf("tool %s not in %s", s, raw)
		}
	}
	if js(b["tool_choice"]) != `{"type":"any"}` {
		t.Errorf("tool_choice = %s", js(b["tool_choice"]))
	}
	if _, ok := b["temperature"]; ok {
		t.Errorf("temperature sent: %s", raw)
	}
	if stream {
		if b["stream"] != true || rec.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("stream = %v, Accept = %q", b["stream"], rec.Header.Get("Accept"))
		}
	} else if _, ok := b["stream"]; ok {
		t.Errorf("non-stream request has stream = %v", b["stream"])
	}
	validateAnthropicRequest(t, rec.Raw)
}

// validateAnthropicRequest checks the rules the Messages API enforces on a
// conversation, so that a converted request is known to be accepted.
func validateAnthropicRequest(t *testing.T, raw []byte) {
	t.Helper()
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"system"`
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string                     `json:"name"`
			InputSchema map[string]json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("request is not JSON: %v", err)
	}
	if body.Model == "" || body.MaxTokens <= 0 {
		t.Errorf("model = %q, max_tokens = %d", body.Model, body.MaxTokens)
	}
	for _, s := range body.System {
		if s.Type != "text" || strings.TrimSpace(s.Text) == "" {
			t.Errorf("bad system block %+v", s)
		}
	}
	tools := map[string]bool{}
	for _, tl := range body.Tools {
		tools[tl.Name] = true
		if string(tl.InputSchema["type"]) != `"object"` {
			t.Errorf("tool %s: input_schema type = %s", tl.Name, tl.InputSchema["type"])
		}
	}
	idRe := regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	if len(body.Messages) == 0 || body.Messages[0].Role != "user" {
		t.Fatalf("the first message is not from the user")
	}
	var pending []string // tool_use ids the next user message must answer
	for i, m := range body.Messages {
		if i > 0 && body.Messages[i-1].Role == m.Role {
			t.Errorf("message %d: role %s twice in a row", i, m.Role)
		}
		if len(m.Content) == 0 {
			t.Errorf("message %d: no content", i)
		}
		answered := map[string]bool{}
		seenOther := false
		var uses []string
		for j, c := range m.Content {
			var blk struct {
				Type      string          `json:"type"`
				Text      *string         `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			}
			if err := json.Unmarshal(c, &blk); err != nil {
				t.Fatalf("message %d block %d: %v", i, j, err)
			}
			switch blk.Type {
			case "text":
				seenOther = true
				if blk.Text == nil || strings.TrimSpace(*blk.Text) == "" {
					t.Errorf("message %d block %d: empty text block", i, j)
				}
			case "tool_use":
				if m.Role != "assistant" {
					t.Errorf("message %d: tool_use in a %s message", i, m.Role)
				}
				if !idRe.MatchString(blk.ID) || !tools[blk.Name] {
					t.Errorf("message %d: tool_use id %q name %q", i, blk.ID, blk.Name)
				}
				var obj map[string]any
				if json.Unmarshal(blk.Input, &obj) != nil || obj == nil {
					t.Errorf("message %d: tool_use input %s is not an object", i, blk.Input)
				}
				uses = append(uses, blk.ID)
			case "tool_result":
				if m.Role != "user" || seenOther {
					t.Errorf("message %d: tool_result not first in a user message", i)
				}
				answered[blk.ToolUseID] = true
				for _, rc := range blk.Content {
					if rc.Type != "text" || strings.TrimSpace(rc.Text) == "" {
						t.Errorf("message %d: bad tool_result content %+v", i, rc)
					}
				}
			default:
				t.Errorf("message %d: unexpected block type %q", i, blk.Type)
			}
		}
		if m.Role == "user" {
			for _, id := range pending {
				if !answered[id] {
					t.Errorf("message %d: tool_use %s has no tool_result", i, id)
				}
			}
			if len(answered) != len(pending) {
				t.Errorf("message %d: %d tool results for %d tool uses", i, len(answered), len(pending))
			}
			pending = nil
		} else {
			pending = uses
		}
	}
}

const anthropicMessageJSON = `{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-test-20250101",
  "content": [
    {"type": "text", "text": "Let me look."},
    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "read_file", "input": {"path": "a.txt", "opts": {"lines": [1, 2.50]}}},
    {"type": "text", "text": " And record."},
    {"type": "tool_use", "id": "toolu_01B", "name": "record_review", "input": {}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 120, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 30, "service_tier": "standard"}
}`

func TestAnthropicNonStreamToolUse(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_1")
		io.WriteString(w, anthropicMessageJSON)
	})
	p := newTestAnthropic(t, f.URL, testKey)
	reply, err := p.Complete(context.Background(), anthropicConversation(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []state.ToolCall{
		{ID: "toolu_01A09q90qw90lq917835lq9", Name: "read_file", Arguments: `{"path":"a.txt","opts":{"lines":[1,2.50]}}`},
		{ID: "toolu_01B", Name: "record_review", Arguments: `{}`},
	}
	m := reply.Message
	if m.Role != state.RoleAssistant || m.Content != "Let me look. And record." || len(m.ToolCalls) != 2 || m.ToolCalls[0] != want[0] || m.ToolCalls[1] != want[1] {
		t.Fatalf("message = %+v", m)
	}
	if reply.FinishReason != "tool_use" {
		t.Errorf("finish = %q", reply.FinishReason)
	}
	if reply.Usage != (state.Usage{InputTokens: 135, CachedInputTokens: 5, CacheCreationInputTokens: 10, OutputTokens: 30, TotalTokens: 165, ProviderRequests: 1}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
	if string(reply.Raw) != anthropicMessageJSON {
		t.Errorf("raw = %s", reply.Raw)
	}

	req := f.last(t)
	if req.Path != "/v1/messages" {
		t.Errorf("path = %s", req.Path)
	}
	if got := req.Header.Get("X-Api-Key"); got != testKey {
		t.Errorf("x-api-key = %q", got)
	}
	if got, ok := req.Header["Authorization"]; ok {
		t.Errorf("Authorization sent: %q", got)
	}
	if req.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	if got := req.Header.Get("X-Stainless-Retry-Count"); got != "0" {
		t.Errorf("retry count = %q", got)
	}
	if got := req.Header.Get("Traceparent"); got != "" {
		t.Errorf("trace header sent: %q", got)
	}
	checkAnthropicBody(t, req, false)
}

func TestAnthropicMinimalRequestNoKeyIgnoresEnvironment(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","stop_sequence":null}`)
	})
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-environment-must-not-be-sent")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-environment-must-not-be-sent")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/elsewhere")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: yes")
	p := newTestAnthropic(t, f.URL, "")
	reply, err := p.Complete(context.Background(), userOnly(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Message.Content != "Hi." || reply.FinishReason != "end_turn" || len(reply.Message.ToolCalls) != 0 {
		t.Errorf("reply = %+v", reply)
	}
	// No usage in the response: zero tokens, still one request.
	if reply.Usage != (state.Usage{ProviderRequests: 1}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
	req := f.last(t)
	for _, h := range []string{"X-Api-Key", "Authorization", "X-From-Env"} {
		if got, ok := req.Header[h]; ok {
			t.Errorf("%s sent: %q", h, got)
		}
	}
	if got := string(req.Raw); got != `{"max_tokens":4096,"messages":[{"content":[{"text":"x","type":"text"}],"role":"user"}],"model":"claude-test"}` {
		t.Errorf("body = %s", got)
	}
}

func TestAnthropicMaxTokens(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`)
	})
	for _, c := range []struct{ cfg, req, want int }{{0, 0, DefaultAnthropicMaxTokens}, {1000, 0, 1000}, {1000, 50, 50}, {0, 64000, 64000}} {
		p, err := NewAnthropic(AnthropicConfig{BaseURL: f.URL, Model: "claude-test", MaxTokens: c.cfg})
		if err != nil {
			t.Fatal(err)
		}
		req := userOnly(false)
		req.MaxTokens = c.req
		// 64000 tokens is more than the SDK lets a non-streamed request
		// ask for by default; the provider lifts that limit.
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got := f.last(t).Body["max_tokens"]; got != float64(c.want) {
			t.Errorf("%+v: max_tokens = %v", c, got)
		}
	}
}

func TestAnthropicToolChoice(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`)
	})
	p := newTestAnthropic(t, f.URL, "")
	tools := []ToolSpec{{Name: "noop"}}
	for _, c := range []struct {
		choice string
		tools  []ToolSpec
		want   string
	}{
		{"", tools, "null"},
		{"auto", tools, `{"type":"auto"}`},
		{"required", tools, `{"type":"any"}`},
		{"none", tools, `{"type":"none"}`},
		{"required", nil, "null"},
	} {
		req := userOnly(false)
		req.ToolChoice, req.Tools = c.choice, c.tools
		req.ParallelToolCalls = true
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		b := f.last(t)
		got, _ := json.Marshal(b.Body["tool_choice"])
		if string(got) != c.want {
			t.Errorf("%q: tool_choice = %s, want %s", c.choice, got, c.want)
		}
		// The tools stay defined with "none": a conversation with
		// tool_use blocks needs them.
		if wantTools := len(c.tools) > 0; wantTools != strings.Contains(string(b.Raw), `"tools":[{"input_schema":{"type":"object","properties":{}},"name":"noop"}]`) {
			t.Errorf("%q: tools in %s", c.choice, b.Raw)
		}
	}
}

// With --max-parallel-tools 1 (ParallelToolCalls false) a request that
// offers tools asks for one call per reply, whatever the tool choice, as an
// OpenAI request says parallel_tool_calls false; "none" asks for no call,
// and a request without tools has no tool_choice. The cache markers and the
// prefix are untouched: tool_choice is outside the cached content.
func TestAnthropicParallelToolUse(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`)
	})
	p := newTestAnthropic(t, f.URL, "")
	tools := []ToolSpec{{Name: "noop"}}
	for _, c := range []struct {
		choice   string
		tools    []ToolSpec
		parallel bool
		want     string
	}{
		{"", tools, false, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{"auto", tools, false, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{"required", tools, false, `{"disable_parallel_tool_use":true,"type":"any"}`},
		{"none", tools, false, `{"type":"none"}`},
		{"auto", nil, false, "null"},
		{"auto", tools, true, `{"type":"auto"}`},
		{"required", tools, true, `{"type":"any"}`},
	} {
		req := userOnly(false)
		req.ToolChoice, req.Tools, req.ParallelToolCalls = c.choice, c.tools, c.parallel
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		b := f.last(t)
		got, _ := json.Marshal(b.Body["tool_choice"])
		if string(got) != c.want {
			t.Errorf("%q, parallel %v: tool_choice = %s, want %s", c.choice, c.parallel, got, c.want)
		}
		validateAnthropicRequest(t, b.Raw)
	}

	// A protocol answer: the forced answer tool beside the agent's tools
	// is one call among them, so the same single call is asked for.
	req := verdictRequest(false)
	req.Tools, req.ToolChoice = tools, "auto"
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(f.last(t).Body["tool_choice"]); string(got) != `{"disable_parallel_tool_use":true,"type":"any"}` {
		t.Errorf("answer tool beside tools: tool_choice = %s", got)
	}

	// The whole conversation, one call at a time: the body as sent,
	// cache markers included, is the one sent for parallel calls but for
	// tool_choice.
	sent := func(req Request) (rest []byte, choice string) {
		t.Helper()
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(f.last(t).Sent, &body); err != nil {
			t.Fatal(err)
		}
		choice = string(body["tool_choice"])
		delete(body, "tool_choice")
		rest, _ = json.Marshal(body)
		return rest, choice
	}
	seq := anthropicConversation()
	seq.ParallelToolCalls = false
	parRest, parChoice := sent(anthropicConversation())
	seqRest, seqChoice := sent(seq)
	if string(parRest) != string(seqRest) || !strings.Contains(string(seqRest), `"cache_control"`) {
		t.Errorf("the body differs with one call at a time:\n%s\n%s", parRest, seqRest)
	}
	if parChoice != `{"type":"any"}` || seqChoice != `{"disable_parallel_tool_use":true,"type":"any"}` {
		t.Errorf("conversation: tool_choice = %s, then %s", parChoice, seqChoice)
	}
}

func TestAnthropicIdentityAndConfig(t *testing.T) {
	p, err := NewAnthropic(AnthropicConfig{BaseURL: "http://localhost:4000/", APIKey: testKey, Model: "claude-x"})
	if err != nil {
		t.Fatal(err)
	}
	if id := p.Identity(); id != (state.ProviderIdentity{Kind: "anthropic", BaseURL: "http://localhost:4000", Model: "claude-x"}) {
		t.Errorf("identity = %+v", id)
	}
	p, err = NewAnthropic(AnthropicConfig{Model: "claude-y"})
	if err != nil {
		t.Fatal(err)
	}
	if id := p.Identity(); id != (state.ProviderIdentity{Kind: "anthropic", BaseURL: DefaultAnthropicBaseURL, Model: "claude-y"}) {
		t.Errorf("identity = %+v", id)
	}
	if _, err := NewAnthropic(AnthropicConfig{}); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
	if _, err := NewAnthropic(AnthropicConfig{Model: "m", MaxTokens: -1}); err == nil {
		t.Error("negative max tokens accepted")
	}
	for _, u := range []string{"localhost:8080", "ftp://x", "http://", "::"} {
		if _, err := NewAnthropic(AnthropicConfig{Model: "m", BaseURL: u}); err == nil {
			t.Errorf("base URL %q accepted", u)
		}
	}
	var _ Provider = p
}

func TestAnthropicBadRequestsFailBeforeSending(t *testing.T) {
	testRefusedBeforeSending(t, newTestAnthropic, map[string]Request{
		"role":        {Messages: []state.Message{{Role: "narrator", Content: "x"}}},
		"tool choice": {Messages: []state.Message{{Role: "user", Content: "x"}}, ToolChoice: "always"},
		"schema":      {Messages: []state.Message{{Role: "user", Content: "x"}}, Tools: []ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
		"schema type": {Messages: []state.Message{{Role: "user", Content: "x"}}, Tools: []ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":"string"}`)}}},
		"tool id":     {Messages: []state.Message{{Role: "tool", Content: "x"}}},
		"call id":     {Messages: []state.Message{{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []state.ToolCall{{Name: "t"}}}}},
	})
}

// sse is one server-sent event as the Messages API writes it.
type sse struct{ event, data string }

// anthropicSSEWriter writes events in deliberately awkward pieces, flushing
// each, so that chunk boundaries fall inside JSON and inside lines.
func anthropicSSEWriter(w http.ResponseWriter, events []sse, pieces int) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var all strings.Builder
	for _, e := range events {
		if e.event != "" {
			all.WriteString("event: " + e.event + "\n")
		}
		all.WriteString("data: " + e.data + "\n\n")
	}
	writeInPieces(w, all.String(), pieces)
}

// toolUseStream is a stream as the API sends it: text, then two tool_use
// blocks whose input arrives in pieces, usage in message_start and
// message_delta, and a ping.
var toolUseStream = []sse{
	{"message_start", `{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-test-20250101","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":28,"output_tokens":2}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
	{"ping", `{"type": "ping"}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking "}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"two files."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"read_file","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"a.t"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"xt\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":1}`},
	{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"record_review","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"content\": \"fine \u00e9\", "}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"score\": 1.50}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":2}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

func TestAnthropicStreamAssemblesToolUse(t *testing.T) {
	for _, pieces := range []int{1, 7, 61, 997} {
		t.Run(fmt.Sprint(pieces), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { anthropicSSEWriter(w, toolUseStream, pieces) })
			p := newTestAnthropic(t, f.URL, testKey)
			req := anthropicConversation()
			req.Stream = true
			var deltas []string
			reply, err := p.Complete(context.Background(), req, func(e Event) { deltas = append(deltas, e.TextDelta) })
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(deltas, "|") != "Checking |two files." {
				t.Errorf("deltas = %q", deltas)
			}
			want := []state.ToolCall{
				{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read_file", Arguments: `{"path":"a.txt"}`},
				{ID: "toolu_02", Name: "record_review", Arguments: `{"content":"fine é","score":1.50}`},
			}
			m := reply.Message
			if m.Content != "Checking two files." || len(m.ToolCalls) != 2 || m.ToolCalls[0] != want[0] || m.ToolCalls[1] != want[1] {
				t.Fatalf("message = %+v", m)
			}
			if reply.FinishReason != "tool_use" {
				t.Errorf("finish = %q", reply.FinishReason)
			}
			if reply.Usage != (state.Usage{InputTokens: 500, CachedInputTokens: 28, OutputTokens: 89, TotalTokens: 589, ProviderRequests: 1}) {
				t.Errorf("usage = %+v", reply.Usage)
			}
			wantRaw := `{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-test-20250101","content":[` +
				`{"type":"text","text":"Checking two files."},` +
				`{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"read_file","input":{"path":"a.txt"}},` +
				`{"type":"tool_use","id":"toolu_02","name":"record_review","input":{"content":"fine é","score":1.50}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":28,"input_tokens":472,"output_tokens":89}}`
			if string(reply.Raw) != wantRaw {
				t.Errorf("raw = %s\nwant  %s", reply.Raw, wantRaw)
			}
			checkAnthropicBody(t, f.last(t), true)
		})
	}
}

func TestAnthropicStreamUsageInMessageDelta(t *testing.T) {
	// Newer servers repeat every count, cumulatively, in message_delta;
	// and a stream without "event:" lines is read by its data's type.
	events := []sse{
		{"", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`},
		{"", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}}`},
		{"", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":7}}`},
		{"", `{"type":"message_stop"}`},
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { anthropicSSEWriter(w, events, 3) })
	p := newTestAnthropic(t, f.URL, "")
	reply, err := p.Complete(context.Background(), userOnly(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Message.Content != "Done." || reply.FinishReason != "end_turn" {
		t.Errorf("reply = %+v", reply)
	}
	if reply.Usage != (state.Usage{InputTokens: 15, CachedInputTokens: 3, OutputTokens: 7, TotalTokens: 22, ProviderRequests: 1}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
}

func TestAnthropicStreamToolUseWithoutIDOrDeltas(t *testing.T) {
	// A compatible server that sends a tool_use whole in its start block
	// and no id.
	events := []sse{
		{"message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","name":"noop","input":{"a": 1}}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { anthropicSSEWriter(w, events, 2) })
	p := newTestAnthropic(t, f.URL, "")
	r1, err := p.Complete(context.Background(), userOnly(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := r1.Message.ToolCalls
	if len(calls) != 1 || calls[0].Name != "noop" || calls[0].Arguments != `{"a":1}` || !strings.HasPrefix(calls[0].ID, "call_") {
		t.Fatalf("calls = %+v", calls)
	}
	if !strings.Contains(string(r1.Raw), calls[0].ID) {
		t.Errorf("raw lacks the generated id: %s", r1.Raw)
	}
	r2, err := p.Complete(context.Background(), userOnly(true), nil)
	if err != nil || r2.Message.ToolCalls[0].ID != calls[0].ID {
		t.Errorf("generated ids are not deterministic: %v %v", r2.Message.ToolCalls, err)
	}
}

func TestAnthropicStreamCut(t *testing.T) {
	var partial strings.Builder
	for _, e := range toolUseStream[:9] {
		fmt.Fprintf(&partial, "event: %s\ndata: %s\n\n", e.event, e.data)
	}
	partial.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"ind")
	cases := map[string]http.HandlerFunc{
		"connection closed mid-event": closeMidEvent(t, partial.String()),
		"clean end before message_delta": func(w http.ResponseWriter, r *http.Request) {
			anthropicSSEWriter(w, toolUseStream[:9], 4)
		},
		"clean end after message_delta without message_stop": func(w http.ResponseWriter, r *http.Request) {
			anthropicSSEWriter(w, toolUseStream[:len(toolUseStream)-1], 4)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, h)
			p := newTestAnthropic(t, f.URL, testKey)
			var got []string
			reply, err := p.Complete(context.Background(), userOnly(true), func(e Event) { got = append(got, e.TextDelta) })
			pe, ok := AsError(err)
			if !ok || pe.Kind != KindStreamCut || !pe.Transient {
				t.Fatalf("err = %v", err)
			}
			if reply.Message.Content != "" || reply.Message.ToolCalls != nil || reply.Raw != nil {
				t.Errorf("a partial reply was returned: %+v", reply)
			}
			if len(got) == 0 {
				t.Error("no progress before the cut")
			}
		})
	}
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	for _, c := range []struct {
		data, kind string
		transient  bool
	}{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, KindServer, true},
		{`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, KindServer, true},
		{`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, KindRateLimited, true},
		{`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`, KindInvalidRequest, false},
		{`{"error":{"message":"no type at all"}}`, KindServer, true},
	} {
		events := append(append([]sse{}, toolUseStream[:5]...), sse{"error", c.data}, toolUseStream[len(toolUseStream)-1])
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) { anthropicSSEWriter(w, events, 5) })
		p := newTestAnthropic(t, f.URL, "")
		_, err := p.Complete(context.Background(), userOnly(true), nil)
		pe, ok := AsError(err)
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(c.data), &e)
		if !ok || pe.Kind != c.kind || pe.Transient != c.transient || !strings.Contains(pe.Message, e.Error.Message) {
			t.Errorf("%s: err = %v", c.data, err)
		}
	}
}

func TestAnthropicAnswerInTheOtherForm(t *testing.T) {
	// A stream request answered with a plain message.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, anthropicMessageJSON)
	})
	p := newTestAnthropic(t, f.URL, "")
	reply, err := p.Complete(context.Background(), userOnly(true), nil)
	if err != nil || len(reply.Message.ToolCalls) != 2 || string(reply.Raw) != anthropicMessageJSON {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
	// A plain request answered with a stream.
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) { anthropicSSEWriter(w, toolUseStream, 3) })
	p = newTestAnthropic(t, f.URL, "")
	reply, err = p.Complete(context.Background(), userOnly(false), nil)
	if err != nil || len(reply.Message.ToolCalls) != 2 || reply.FinishReason != "tool_use" {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
}

func TestAnthropicMalformedReplies(t *testing.T) {
	for name, c := range map[string]struct {
		contentType, body string
		kind              string
		transient         bool
	}{
		"html":          {"text/html", `<html>hello</html>`, KindMalformedReply, false},
		"not a message": {"application/json", `{"hello":"world"}`, KindMalformedReply, false},
		"bad block":     {"application/json", `{"type":"message","content":[{"type":"text","text":5}]}`, KindMalformedReply, false},
		"error body":    {"application/json", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, KindServer, true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				io.WriteString(w, c.body)
			})
			p := newTestAnthropic(t, f.URL, "")
			for _, stream := range []bool{false, true} {
				_, err := p.Complete(context.Background(), userOnly(stream), nil)
				pe, ok := AsError(err)
				if !ok || pe.Kind != c.kind || pe.Transient != c.transient {
					t.Fatalf("stream=%v: err = %v", stream, err)
				}
			}
		})
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		anthropicSSEWriter(w, []sse{{"message_start", `{"type":"message_start","message":`}}, 1)
	})
	p := newTestAnthropic(t, f.URL, "")
	_, err := p.Complete(context.Background(), userOnly(true), nil)
	if pe, ok := AsError(err); !ok || pe.Kind != KindMalformedReply {
		t.Fatalf("stream garbage: err = %v", err)
	}
}

func TestAnthropicStatusErrors(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	errBody := func(typ, msg string) string {
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`, typ, msg)
	}
	testStatusErrors(t, newTestAnthropic, []statusCase{
		{"500", 500, nil, errBody("api_error", "Internal server error"), KindServer, true, 0, "Internal server error"},
		{"529", 529, nil, errBody("overloaded_error", "Overloaded"), KindServer, true, 0, "the server is overloaded: Overloaded"},
		{"503 text", 503, map[string]string{"Retry-After": "3"}, `upstream connect error`, KindServer, true, 3 * time.Second, "upstream connect error"},
		{"429 seconds", 429, map[string]string{"Retry-After": "2", "anthropic-ratelimit-requests-remaining": "0"}, errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), KindRateLimited, true, 2 * time.Second, "per-minute rate limit"},
		{"429 date", 429, map[string]string{"Retry-After": date}, errBody("rate_limit_error", "slow down"), KindRateLimited, true, -1, "slow down"},
		{"400", 400, nil, errBody("invalid_request_error", "messages.1.content.0.tool_use.input: Input should be a valid dictionary"), KindInvalidRequest, false, 0, "Input should be a valid dictionary"},
		{"413", 413, nil, errBody("request_too_large", "Request exceeds the maximum allowed number of bytes."), KindInvalidRequest, false, 0, "maximum allowed number of bytes"},
		{"404 model", 404, nil, errBody("not_found_error", "model: claude-test"), KindModelNotFound, false, 0, `model "claude-test" is not available`},
		{"404 path", 404, nil, `404 page not found`, KindNotFound, false, 0, "without /v1"},
		{"403", 403, nil, errBody("permission_error", "Your API key does not have permission to use the specified resource."), KindAuth, false, 0, "the API key was rejected (HTTP 403); check ANTHROPIC_API_KEY"},
	})
}

func TestAnthropicKeyNeverLeaks(t *testing.T) {
	echo := map[string]http.HandlerFunc{
		"json 401": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s"}}`, r.Header.Get("X-Api-Key"))
		},
		"text 401": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			fmt.Fprintf(w, "denied: x-api-key: %s", r.Header.Get("X-Api-Key"))
		},
		"400 echo": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad header %s"}}`, r.Header.Get("X-Api-Key"))
		},
		"529 echo": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(529)
			fmt.Fprintf(w, "overloaded; request headers: %v", r.Header)
		},
		"stream error echo": func(w http.ResponseWriter, r *http.Request) {
			anthropicSSEWriter(w, []sse{toolUseStream[0], {"error", fmt.Sprintf(`{"type":"error","error":{"type":"overloaded_error","message":"key %s is overloaded"}}`, testKey)}}, 2)
		},
		"garbage echo": func(w http.ResponseWriter, r *http.Request) {
			anthropicSSEWriter(w, []sse{{"message_start", "not json " + r.Header.Get("X-Api-Key")}}, 2)
		},
		"200 html echo": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<p>%s</p>", r.Header.Get("X-Api-Key"))
		},
	}
	testKeyNeverLeaks(t, newTestAnthropic, echo,
		"the API key was rejected (HTTP 401); check ANTHROPIC_API_KEY (or NEXA_API_KEY, or API_KEY in the anthropic block of secrets.nxs)")
	// A successful reply that quotes the key is stored without it, streamed
	// or not.
	for _, stream := range []bool{false, true} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			if stream {
				anthropicSSEWriter(w, []sse{
					{"message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[]}}`},
					{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"your key is %s"}}`, testKey)},
					{"message_stop", `{"type":"message_stop"}`},
				}, 2)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"your key is %s"}],"stop_reason":"end_turn"}`, testKey)
		})
		p := newTestAnthropic(t, f.URL, testKey)
		reply, err := p.Complete(context.Background(), userOnly(stream), nil)
		if err != nil || strings.Contains(string(reply.Raw), testKey) || !json.Valid(reply.Raw) {
			t.Errorf("stream=%v: raw = %s, err = %v", stream, reply.Raw, err)
		}
	}
}

func TestAnthropicAuthWithoutKey(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}`)
	})
	p := newTestAnthropic(t, f.URL, "")
	_, err := p.Complete(context.Background(), userOnly(false), nil)
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindAuth || !strings.Contains(pe.Message, "none is configured; set ANTHROPIC_API_KEY") || !strings.Contains(pe.Message, "header is required") {
		t.Fatalf("err = %v", err)
	}
}

func TestAnthropicConnectionErrors(t *testing.T) {
	testConnectionErrors(t, newTestAnthropic)
}

func TestAnthropicContextCanceledIsNotAProviderError(t *testing.T) {
	testContextCanceled(t, newTestAnthropic, "event: message_start\ndata: "+toolUseStream[0].data+"\n\n")
}

func TestAnthropicRetriedThroughWithRetry(t *testing.T) {
	// 529 then a good answer: WithRetry sees a transient error, honours
	// Retry-After, and the second try succeeds.
	var tries atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		anthropicSSEWriter(w, toolUseStream, 5)
	})
	var waits []time.Duration
	p := WithRetry(newTestAnthropic(t, f.URL, testKey), RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	reply, err := p.Complete(context.Background(), userOnly(true), nil)
	if err != nil || len(reply.Message.ToolCalls) != 2 {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
	if len(waits) != 1 || waits[0] < 7*time.Second {
		t.Errorf("waits = %v", waits)
	}
}

func TestAnthropicStreamOddEventsDoNotPanic(t *testing.T) {
	odd := []sse{
		{"message_start", `{"type":"message_start","message":null}`},
		{"message_start", `{"type":"message_start","message":{"usage":null,"content":null}}`},
		{"content_block_start", `{"type":"content_block_start","index":-1,"content_block":null}`},
		{"content_block_start", `{"type":"content_block_start","index":1000000000000,"content_block":{"type":"tool_use"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":null}`},
		{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":7,"delta":{"type":"citations_delta","citation":{}}}`},
		{"content_block_start", `{"type":"content_block_start","index":8,"content_block":{"type":"server_tool_use","id":"s","name":"web_search","input":{}}}`},
		{"content_block_start", `{"type":"content_block_start","index":9,"content_block":{"type":"thinking","thinking":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":9,"delta":{"type":"thinking_delta","thinking":"hmm"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":9,"delta":{"type":"signature_delta","signature":"sig"}}`},
		{"content_block_stop", `{"type":"content_block_stop"}`},
		{"message_delta", `{"type":"message_delta","delta":null,"usage":null}`},
		{"message_delta", `{"type":"message_delta","usage":{"output_tokens":"many"}}`},
		{"future_event", `{"type":"future_event","whatever":[1,2]}`},
		{"ping", `{}`},
		{"content_block_start", `{"type":"content_block_start","index":2,"content_block":"text"}`},
		{"", `[1,2]`},
		{"", `"text"`},
		{"message_delta", `{"type":"message_delta","index":"x"}`},
	}
	for i := range odd {
		events := append(append([]sse{}, odd[:i+1]...), sse{"message_stop", `{"type":"message_stop"}`})
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) { anthropicSSEWriter(w, events, 5) })
		p := newTestAnthropic(t, f.URL, "")
		reply, err := p.Complete(context.Background(), userOnly(true), nil)
		if err != nil {
			if _, ok := AsError(err); !ok {
				t.Errorf("prefix %d: not an *Error: %v", i, err)
			}
			continue
		}
		var raw struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(reply.Raw, &raw); err != nil || slices.ContainsFunc(raw.Content, func(m map[string]any) bool { return m == nil }) {
			t.Errorf("prefix %d: raw = %s (%v)", i, reply.Raw, err)
		}
		if i >= len(odd)-4 {
			t.Errorf("prefix %d: a malformed event was accepted: %s", i, reply.Raw)
		}
	}
}

// TestAnthropicRoundTrip plays a multi-turn tool run the way the runtime
// does: each reply is appended to the conversation with its tool results,
// including a call whose arguments a max_tokens stop cut short, and every
// request the server receives must be one the Messages API accepts.
func TestAnthropicRoundTrip(t *testing.T) {
	turns := [][]sse{
		toolUseStream,
		{
			{"message_start", `{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":900,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_03","name":"record_review","input":{}}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"content\": \"a very long"}}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":256}}`},
			{"message_stop", `{"type":"message_stop"}`},
		},
		{
			{"message_start", `{"type":"message_start","message":{"id":"msg_3","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1000,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{\"verdict\": \"fine\"}"}}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`},
			{"message_stop", `{"type":"message_stop"}`},
		},
	}
	var n atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		// Counted before answering: the client sends the next request as
		// soon as it has read message_stop.
		i := int(n.Add(1)) - 1
		anthropicSSEWriter(w, turns[min(i, len(turns)-1)], 4)
	})
	p := newTestAnthropic(t, f.URL, testKey)
	conv := []state.Message{
		{Seq: 1, Role: state.RoleSystem, Content: "You review files."},
		{Seq: 2, Role: state.RoleUser, Content: "Review a.txt."},
	}
	tools := []ToolSpec{
		{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "record_review", Description: "Record a review", Parameters: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}}}`)},
	}
	var last Reply
	for turn := 0; turn < len(turns); turn++ {
		reply, err := p.Complete(context.Background(), Request{Messages: conv, Tools: tools, Stream: true, JSONOutput: true}, nil)
		if err != nil {
			t.Fatalf("turn %d: %v", turn+1, err)
		}
		validateAnthropicRequest(t, f.last(t).Raw)
		last = reply
		msg := reply.Message
		msg.Seq = len(conv) + 1
		conv = append(conv, msg)
		for i, c := range msg.ToolCalls {
			res := state.Message{Seq: len(conv) + 1, Role: state.RoleTool, ToolCallID: c.ID, Name: c.Name}
			switch {
			case !json.Valid([]byte(c.Arguments)):
				res.Content, res.IsError = "invalid arguments: unexpected end of JSON input", true
			case i == 1:
				res.Content, res.IsError = "permission denied", true
			default:
				res.Content = "hello"
			}
			conv = append(conv, res)
		}
	}
	if last.Message.Content != `{"verdict": "fine"}` || last.FinishReason != "end_turn" || f.count() != 3 {
		t.Fatalf("last = %+v after %d requests", last, f.count())
	}
	// The second reply's cut-off call reached the third request as {} with
	// its text kept, and its error result right after it.
	raw := string(f.last(t).Raw)
	for _, s := range []string{
		`{"text":"(The arguments of tool call toolu_03 to record_review were not a JSON object and were not sent: {\"content\": \"a very long)","type":"text"},{"id":"toolu_03","input":{},"name":"record_review","type":"tool_use"}`,
		`{"tool_use_id":"toolu_03","is_error":true,"content":[{"text":"invalid arguments: unexpected end of JSON input","type":"text"}],"type":"tool_result"}`,
		`{"tool_use_id":"toolu_02","is_error":true,`,
	} {
		if !strings.Contains(raw, s) {
			t.Errorf("request lacks %s:\n%s", s, raw)
		}
	}
}

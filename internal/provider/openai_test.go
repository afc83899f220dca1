package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

func newTestOpenAI(t *testing.T, baseURL, key string) *OpenAI {
	t.Helper()
	p, err := NewOpenAI(OpenAIConfig{BaseURL: baseURL + "/v1", APIKey: key, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// conversation is a request with every kind of message and two tools.
func conversation() Request {
	temp := 0.2
	return Request{
		Model: "gpt-test",
		Messages: []state.Message{
			{Seq: 1, Role: state.RoleSystem, Content: "You review."},
			{Seq: 2, Role: state.RoleUser, Content: "Review the text."},
			{Seq: 3, Role: state.RoleAssistant, ToolCalls: []state.ToolCall{
				{ID: "call_a", Name: "read_file", Arguments: `{"path":"a.txt"}`},
				{ID: "call_b", Name: "record_review", Arguments: `{not json`},
			}},
			{Seq: 4, Role: state.RoleTool, ToolCallID: "call_a", Name: "read_file", Content: "hello"},
			{Seq: 5, Role: state.RoleTool, ToolCallID: "call_b", Name: "record_review", Content: "invalid arguments", IsError: true},
		},
		Tools: []ToolSpec{
			{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":100}},"required":["path"],"additionalProperties":false}`)},
			{Name: "record_review", Description: "Record a review", Parameters: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"},"score":{"type":"number","minimum":0.5}}}`)},
		},
		ToolChoice:  "required",
		Temperature: &temp,
		MaxTokens:   256,
		JSONOutput:  true,
	}
}

const completionJSON = `{
  "id": "chatcmpl-1",
  "object": "chat.completion",
  "created": 1700000000,
  "model": "gpt-test-2024",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_x", "type": "function", "function": {"name": "record_review", "arguments": "{\"content\":\"ok\"}"}},
        {"id": "call_y", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":"}}
      ]
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
}`

func TestOpenAINonStreamToolCalls(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completionJSON)
	})
	p := newTestOpenAI(t, f.URL, testKey)
	reply, err := p.Complete(context.Background(), conversation(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []state.ToolCall{
		{ID: "call_x", Name: "record_review", Arguments: `{"content":"ok"}`},
		{ID: "call_y", Name: "read_file", Arguments: `{"path":`},
	}
	if reply.Message.Role != state.RoleAssistant || reply.Message.Content != "" || len(reply.Message.ToolCalls) != 2 ||
		reply.Message.ToolCalls[0] != want[0] || reply.Message.ToolCalls[1] != want[1] {
		t.Fatalf("message = %+v", reply.Message)
	}
	if reply.FinishReason != "tool_calls" {
		t.Errorf("finish = %q", reply.FinishReason)
	}
	if reply.Usage != (state.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150, ProviderRequests: 1}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
	if string(reply.Raw) != completionJSON {
		t.Errorf("raw = %s", reply.Raw)
	}

	req := f.last(t)
	if req.Path != "/v1/chat/completions" {
		t.Errorf("path = %s", req.Path)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	checkRequestBody(t, req.Body, false)
}

// checkRequestBody checks the wire form of conversation().
func checkRequestBody(t *testing.T, b map[string]any, stream bool) {
	t.Helper()
	js := func(v any) string { out, _ := json.Marshal(v); return string(out) }
	if b["model"] != "gpt-test" {
		t.Errorf("model = %v", b["model"])
	}
	msgs, _ := b["messages"].([]any)
	wantMsgs := []string{
		`{"content":"You review.","role":"system"}`,
		// json_object mode: OpenAI requires the word JSON in a message.
		`{"content":"` + JSONInstruction + `","role":"system"}`,
		`{"content":"Review the text.","role":"user"}`,
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.txt\"}","name":"read_file"},"id":"call_a","type":"function"},{"function":{"arguments":"{not json","name":"record_review"},"id":"call_b","type":"function"}]}`,
		`{"content":"hello","role":"tool","tool_call_id":"call_a"}`,
		`{"content":"invalid arguments","role":"tool","tool_call_id":"call_b"}`,
	}
	if len(msgs) != len(wantMsgs) {
		t.Fatalf("messages = %s", js(msgs))
	}
	for i, m := range msgs {
		if js(m) != wantMsgs[i] {
			t.Errorf("message %d = %s\nwant %s", i, js(m), wantMsgs[i])
		}
	}
	wantTools := `[{"function":{"description":"Read a file","name":"read_file","parameters":{"additionalProperties":false,"properties":{"path":{"maxLength":100,"type":"string"}},"required":["path"],"type":"object"}},"type":"function"},` +
		`{"function":{"description":"Record a review","name":"record_review","parameters":{"properties":{"content":{"type":"string"},"score":{"minimum":0.5,"type":"number"}},"type":"object"}},"type":"function"}]`
	if js(b["tools"]) != wantTools {
		t.Errorf("tools = %s\nwant %s", js(b["tools"]), wantTools)
	}
	if b["tool_choice"] != "required" {
		t.Errorf("tool_choice = %v", b["tool_choice"])
	}
	if b["temperature"] != 0.2 || b["max_tokens"] != float64(256) {
		t.Errorf("temperature = %v, max_tokens = %v", b["temperature"], b["max_tokens"])
	}
	if js(b["response_format"]) != `{"type":"json_object"}` {
		t.Errorf("response_format = %s", js(b["response_format"]))
	}
	if stream {
		if b["stream"] != true || js(b["stream_options"]) != `{"include_usage":true}` {
			t.Errorf("stream = %v, stream_options = %s", b["stream"], js(b["stream_options"]))
		}
	} else if _, ok := b["stream"]; ok || b["stream_options"] != nil {
		t.Errorf("non-stream request has stream = %v, stream_options = %v", b["stream"], b["stream_options"])
	}
}

func TestOpenAIMinimalRequestNoKey(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}]}`)
	})
	t.Setenv("OPENAI_API_KEY", "sk-from-environment-must-not-be-sent")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/elsewhere")
	p := newTestOpenAI(t, f.URL, "")
	reply, err := p.Complete(context.Background(), Request{Messages: []state.Message{{Role: state.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Message.Content != "Hi." || reply.FinishReason != "stop" || len(reply.Message.ToolCalls) != 0 {
		t.Errorf("reply = %+v", reply)
	}
	// No usage in the response: zero tokens, still one request.
	if reply.Usage != (state.Usage{ProviderRequests: 1}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
	req := f.last(t)
	if got, ok := req.Header["Authorization"]; ok {
		t.Errorf("Authorization sent without a key: %q", got)
	}
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls", "temperature", "max_tokens", "response_format", "stream", "stream_options"} {
		if _, ok := req.Body[k]; ok {
			t.Errorf("unexpected %q in %s", k, req.Raw)
		}
	}
	if req.Body["model"] != "gpt-test" {
		t.Errorf("model = %v", req.Body["model"])
	}
}

// A request with tools states parallel_tool_calls as the runtime will run
// the calls: true when several calls of a reply may run at once, false
// when they run one after another.
func TestOpenAIParallelToolCalls(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completionJSON)
	})
	p := newTestOpenAI(t, f.URL, testKey)
	for _, parallel := range []bool{true, false} {
		req := conversation()
		req.ParallelToolCalls = parallel
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		if got := f.last(t).Body["parallel_tool_calls"]; got != parallel {
			t.Errorf("ParallelToolCalls %v sent parallel_tool_calls = %v", parallel, got)
		}
	}
}

func TestOpenAIIdentityAndConfig(t *testing.T) {
	p, err := NewOpenAI(OpenAIConfig{BaseURL: "http://localhost:11434/v1/", APIKey: testKey, Model: "llama3"})
	if err != nil {
		t.Fatal(err)
	}
	if id := p.Identity(); id != (state.ProviderIdentity{Kind: "openai", BaseURL: "http://localhost:11434/v1", Model: "llama3"}) {
		t.Errorf("identity = %+v", id)
	}
	p, err = NewOpenAI(OpenAIConfig{Model: "gpt-4o", Kind: "deepseek"})
	if err != nil {
		t.Fatal(err)
	}
	if id := p.Identity(); id != (state.ProviderIdentity{Kind: "deepseek", BaseURL: DefaultOpenAIBaseURL, Model: "gpt-4o"}) {
		t.Errorf("identity = %+v", id)
	}
	if _, err := NewOpenAI(OpenAIConfig{}); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
	for _, u := range []string{"localhost:8080", "ftp://x/v1", "http://", "::"} {
		if _, err := NewOpenAI(OpenAIConfig{Model: "m", BaseURL: u}); err == nil {
			t.Errorf("base URL %q accepted", u)
		}
	}
}

func TestOpenAIBadRequestsFailBeforeSending(t *testing.T) {
	testRefusedBeforeSending(t, newTestOpenAI, map[string]Request{
		"role":        {Messages: []state.Message{{Role: "narrator", Content: "x"}}},
		"tool choice": {Messages: []state.Message{{Role: "user", Content: "x"}}, ToolChoice: "always"},
		"schema":      {Messages: []state.Message{{Role: "user", Content: "x"}}, Tools: []ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
		"tool id":     {Messages: []state.Message{{Role: "tool", Content: "x"}}},
	})
}

// sseWriter writes a stream in deliberately awkward pieces, flushing each,
// so that chunk boundaries fall inside JSON and inside "data:" lines.
func sseWriter(w http.ResponseWriter, events []string, pieces int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var all strings.Builder
	for _, e := range events {
		all.WriteString("data: " + e + "\n\n")
	}
	writeInPieces(w, all.String(), pieces)
}

var toolStream = []string{
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{"content":"Checking "},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{"content":"two files."},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"record_review","arguments":"{\"content\""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"a.txt\"}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":": \"fine \u00e9\"}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`,
	`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000001,"model":"gpt-test-2024","choices":[],"usage":{"prompt_tokens":200,"completion_tokens":41,"total_tokens":241}}`,
	`[DONE]`,
}

func TestOpenAIStreamAssemblesToolCalls(t *testing.T) {
	for _, pieces := range []int{1, 7, 61, 997} {
		t.Run(fmt.Sprint(pieces), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { sseWriter(w, toolStream, pieces) })
			p := newTestOpenAI(t, f.URL, testKey)
			req := conversation()
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
				{ID: "call_0", Name: "read_file", Arguments: `{"path": "a.txt"}`},
				{ID: "call_1", Name: "record_review", Arguments: `{"content": "fine é"}`},
			}
			m := reply.Message
			if m.Content != "Checking two files." || len(m.ToolCalls) != 2 || m.ToolCalls[0] != want[0] || m.ToolCalls[1] != want[1] {
				t.Fatalf("message = %+v", m)
			}
			if reply.FinishReason != "tool_calls" {
				t.Errorf("finish = %q", reply.FinishReason)
			}
			if reply.Usage != (state.Usage{InputTokens: 200, OutputTokens: 41, TotalTokens: 241, ProviderRequests: 1}) {
				t.Errorf("usage = %+v", reply.Usage)
			}
			wantRaw := `{"id":"chatcmpl-s","object":"chat.completion","created":1700000001,"model":"gpt-test-2024","system_fingerprint":"fp_1","choices":[{"index":0,"message":{"role":"assistant","content":"Checking two files.","refusal":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.txt\"}"}},{"id":"call_1","type":"function","function":{"name":"record_review","arguments":"{\"content\": \"fine é\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":200,"completion_tokens":41,"total_tokens":241}}`
			if string(reply.Raw) != wantRaw {
				t.Errorf("raw = %s\nwant  %s", reply.Raw, wantRaw)
			}
			req2 := f.last(t)
			checkRequestBody(t, req2.Body, true)
			if got := req2.Header.Get("Accept"); got != "text/event-stream" {
				t.Errorf("Accept = %q", got)
			}
		})
	}
}

func TestOpenAIStreamTextOnlyWithoutIndexOrIDs(t *testing.T) {
	// A server that omits tool-call index and id, and sends no usage.
	events := []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"noop","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`,
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { sseWriter(w, events, 3) })
	p := newTestOpenAI(t, f.URL, "")
	req := userOnly(true)
	r1, err := p.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Message.ToolCalls) != 1 || r1.Message.ToolCalls[0].Name != "noop" || !strings.HasPrefix(r1.Message.ToolCalls[0].ID, "call_") {
		t.Fatalf("calls = %+v", r1.Message.ToolCalls)
	}
	if !strings.Contains(string(r1.Raw), r1.Message.ToolCalls[0].ID) {
		t.Errorf("raw lacks the generated id: %s", r1.Raw)
	}
	r2, err := p.Complete(context.Background(), req, nil)
	if err != nil || r2.Message.ToolCalls[0].ID != r1.Message.ToolCalls[0].ID {
		t.Errorf("generated ids are not deterministic: %v %v", r2.Message.ToolCalls, err)
	}
	if r1.Usage != (state.Usage{ProviderRequests: 1}) {
		t.Errorf("usage = %+v", r1.Usage)
	}
}

func TestOpenAIStreamCut(t *testing.T) {
	partial := strings.Join([]string{"data: " + toolStream[0], "data: " + toolStream[1], "data: " + toolStream[3][:40]}, "\n\n")
	cases := map[string]http.HandlerFunc{
		"connection closed mid-event": closeMidEvent(t, partial),
		"clean end without finish_reason": func(w http.ResponseWriter, r *http.Request) {
			sseWriter(w, toolStream[:5], 4)
		},
		"done without finish_reason": func(w http.ResponseWriter, r *http.Request) {
			sseWriter(w, append(append([]string{}, toolStream[:3]...), "[DONE]"), 2)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, h)
			p := newTestOpenAI(t, f.URL, testKey)
			var got []string
			_, err := p.Complete(context.Background(), userOnly(true),
				func(e Event) { got = append(got, e.TextDelta) })
			pe, ok := AsError(err)
			if !ok || pe.Kind != KindStreamCut || !pe.Transient {
				t.Fatalf("err = %v", err)
			}
			if len(got) == 0 {
				t.Error("no progress before the cut")
			}
		})
	}
}

func TestOpenAIStreamErrorEvent(t *testing.T) {
	events := []string{toolStream[0], `{"error":{"message":"The server had an error while processing your request.","type":"server_error","code":null}}`}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { sseWriter(w, events, 2) })
	p := newTestOpenAI(t, f.URL, "")
	_, err := p.Complete(context.Background(), userOnly(true), nil)
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindServer || !pe.Transient || !strings.Contains(pe.Message, "had an error") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIStreamRequestAnsweredWithJSON(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, completionJSON)
	})
	p := newTestOpenAI(t, f.URL, "")
	reply, err := p.Complete(context.Background(), userOnly(true), nil)
	if err != nil || len(reply.Message.ToolCalls) != 2 || string(reply.Raw) != completionJSON {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
}

func TestOpenAIMalformedReplies(t *testing.T) {
	for name, body := range map[string]string{
		"html":       `<html>hello</html>`,
		"no choices": `{"id":"x","object":"chat.completion","choices":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(body, "<") {
					w.Header().Set("Content-Type", "text/html")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				io.WriteString(w, body)
			})
			p := newTestOpenAI(t, f.URL, "")
			_, err := p.Complete(context.Background(), userOnly(false), nil)
			pe, ok := AsError(err)
			if !ok || pe.Kind != KindMalformedReply || pe.Transient {
				t.Fatalf("err = %v", err)
			}
		})
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { sseWriter(w, []string{`{"choices": [`}, 1) })
	p := newTestOpenAI(t, f.URL, "")
	_, err := p.Complete(context.Background(), userOnly(true), nil)
	if pe, ok := AsError(err); !ok || pe.Kind != KindMalformedReply {
		t.Fatalf("stream garbage: err = %v", err)
	}
}

func TestOpenAIStatusErrors(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	testStatusErrors(t, newTestOpenAI, []statusCase{
		{"500", 500, nil, `{"error":{"message":"boom","type":"server_error"}}`, KindServer, true, 0, "boom"},
		{"503 text", 503, map[string]string{"Retry-After": "3"}, `upstream unavailable`, KindServer, true, 3 * time.Second, "upstream unavailable"},
		{"429 seconds", 429, map[string]string{"Retry-After": "2"}, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, KindRateLimited, true, 2 * time.Second, "Rate limit reached"},
		{"429 date", 429, map[string]string{"Retry-After": date}, `{"error":{"message":"slow down"}}`, KindRateLimited, true, -1, "slow down"},
		{"429 ms", 429, map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, `{}`, KindRateLimited, true, 250 * time.Millisecond, "rate limiting"},
		{"400", 400, nil, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, KindInvalidRequest, false, 0, "maximum context length"},
		{"422 detail", 422, nil, `{"detail":"bad field"}`, KindInvalidRequest, false, 0, "bad field"},
		{"404 model", 404, nil, `{"error":{"message":"The model 'gpt-test' does not exist","type":"invalid_request_error","code":"model_not_found"}}`, KindModelNotFound, false, 0, "does not exist"},
		{"404 ollama", 404, nil, `{"error":"model \"llama9\" not found, try pulling it first"}`, KindModelNotFound, false, 0, "try pulling"},
		{"404 path", 404, nil, `404 page not found`, KindNotFound, false, 0, "--base-url"},
		{"403", 403, nil, `{"error":{"message":"forbidden"}}`, KindAuth, false, 0, "the API key was rejected (HTTP 403); check NEXA_API_KEY or the provider's key variable"},
	})
}

func TestOpenAIKeyNeverLeaks(t *testing.T) {
	echo := map[string]http.HandlerFunc{
		"json 401": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (header %q)","type":"invalid_request_error","code":"invalid_api_key"}}`, testKey, r.Header.Get("Authorization"))
		},
		"text 401": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			fmt.Fprintf(w, "denied: Authorization: %s", r.Header.Get("Authorization"))
		},
		"400 echo": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":"bad header %s"}}`, r.Header.Get("Authorization"))
		},
		"500 echo": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			fmt.Fprintf(w, "crash; request headers: %v", r.Header)
		},
		"stream error echo": func(w http.ResponseWriter, r *http.Request) {
			sseWriter(w, []string{fmt.Sprintf(`{"error":{"message":"key %s is over quota"}}`, testKey)}, 2)
		},
		"garbage echo": func(w http.ResponseWriter, r *http.Request) {
			sseWriter(w, []string{"not json " + r.Header.Get("Authorization")}, 2)
		},
	}
	testKeyNeverLeaks(t, newTestOpenAI, echo, "the API key was rejected (HTTP 401); check NEXA_API_KEY or the provider's key variable")
	// A successful reply that quotes the key is stored without it.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"your key is %s"},"finish_reason":"stop"}]}`, testKey)
	})
	p := newTestOpenAI(t, f.URL, testKey)
	reply, err := p.Complete(context.Background(), userOnly(false), nil)
	if err != nil || strings.Contains(string(reply.Raw), testKey) || !json.Valid(reply.Raw) {
		t.Errorf("raw = %s, err = %v", reply.Raw, err)
	}
}

func TestOpenAIAuthWithoutKey(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) })
	p := newTestOpenAI(t, f.URL, "")
	_, err := p.Complete(context.Background(), userOnly(false), nil)
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindAuth || !strings.Contains(pe.Message, "none is configured") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIConnectionErrors(t *testing.T) {
	testConnectionErrors(t, newTestOpenAI)
}

func TestOpenAIContextCanceledIsNotAProviderError(t *testing.T) {
	testContextCanceled(t, newTestOpenAI, "data: "+toolStream[0]+"\n\n")
}

func TestErrorText(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"m1"}}`: "m1",
		`{"error":"m2"}`:             "m2",
		`{"message":"m3"}`:           "m3",
		`{"detail":"m4"}`:            "m4",
		`{"detail":[{"loc":1}]}`:     `[{"loc":1}]`,
		`plain`:                      "plain",
		``:                           "",
	} {
		if got := errorText([]byte(body)); got != want {
			t.Errorf("errorText(%s) = %q, want %q", body, got, want)
		}
	}
}

func TestOpenAIStreamOddChunksDoNotPanic(t *testing.T) {
	odd := []string{
		`{"choices":null}`,
		`{"choices":[{"delta":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"x"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1000000000000,"id":"a"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":null,"content":null}}]}`,
		`{"choices":[{"index":3,"delta":{"content":"other choice"},"finish_reason":"stop"}]}`,
		`{"usage":"x","choices":[]}`,
		`{"choices":"x"}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":null}]}}]}`,
		`[1,2]`,
		`"text"`,
		`{"error":null,"choices":[]}`,
		`{"choices":[{"index":0,"delta":{"content":"end"},"finish_reason":"stop"}]}`,
	}
	for i := range odd {
		events := append(append([]string{}, odd[:i+1]...), "[DONE]")
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) { sseWriter(w, events, 5) })
		p := newTestOpenAI(t, f.URL, "")
		reply, err := p.Complete(context.Background(), userOnly(true), nil)
		if err != nil {
			if _, ok := AsError(err); !ok {
				t.Errorf("prefix %d: not an *Error: %v", i, err)
			}
			continue
		}
		if !json.Valid(reply.Raw) {
			t.Errorf("prefix %d: raw = %s", i, reply.Raw)
		}
	}
}

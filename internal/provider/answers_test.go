package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The tests below cover structured answers (the protocol's schema sent to
// the model), the rules every reply must satisfy (bad replies are errors),
// and the per-request timeouts.

const verdictSchema = `{"type":"object","properties":{"verdict":{"type":"string"},"score":{"type":"integer"}},"required":["verdict","score"],"additionalProperties":false}`

func verdictRequest(stream bool) Request {
	req := userOnly(stream)
	req.JSONOutput = true
	req.Output = &OutputSchema{Name: "Verdict", Schema: json.RawMessage(verdictSchema)}
	return req
}

// openaiRules rejects what OpenAI rejects about response_format, as the
// real API does: json_object without the word JSON in a message, a
// json_schema without name or schema, and strict with a schema that breaks
// strict mode (checked at the top level here).
func openaiRules(body map[string]any) string {
	rf, _ := body["response_format"].(map[string]any)
	if rf == nil {
		return ""
	}
	switch rf["type"] {
	case "json_object":
		msgs, _ := json.Marshal(body["messages"])
		if !strings.Contains(strings.ToLower(string(msgs)), "json") {
			return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
		}
	case "json_schema":
		js, _ := rf["json_schema"].(map[string]any)
		if js == nil || js["name"] == nil || js["schema"] == nil {
			return "Missing required parameter: 'response_format.json_schema.name' or 'schema'."
		}
		if js["strict"] == true {
			s, _ := js["schema"].(map[string]any)
			props, _ := s["properties"].(map[string]any)
			req, _ := s["required"].([]any)
			if s["additionalProperties"] != false || len(req) != len(props) {
				return "Invalid schema for response_format: strict mode rules are not met"
			}
		}
	}
	return ""
}

// answering returns a handler that checks each request (the last one *f
// recorded) by openaiRules (HTTP 400 when broken) and answers with text.
func answering(t *testing.T, f **fakeServer, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body := (*f).last(t).Body
		w.Header().Set("Content-Type", "application/json")
		if problem := openaiRules(body); problem != "" {
			w.WriteHeader(http.StatusBadRequest)
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": problem, "type": "invalid_request_error"}})
			w.Write(b)
			return
		}
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}})
		w.Write(b)
	}
}

func TestOpenAISendsTheProtocolSchema(t *testing.T) {
	var f *fakeServer
	f = newFake(t, answering(t, &f, `{"verdict":"pass","score":4}`))
	p := newTestOpenAI(t, f.URL, "")
	reply, err := p.Complete(context.Background(), verdictRequest(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Message.Content != `{"verdict":"pass","score":4}` {
		t.Errorf("content = %q", reply.Message.Content)
	}
	got, _ := json.Marshal(f.last(t).Body["response_format"])
	want := `{"json_schema":{"name":"Verdict","schema":{"additionalProperties":false,"properties":{"score":{"type":"integer"},"verdict":{"type":"string"}},"required":["verdict","score"],"type":"object"},"strict":true},"type":"json_schema"}`
	if string(got) != want {
		t.Errorf("response_format = %s\nwant %s", got, want)
	}
}

func TestOpenAIStrictOnlyWhenTheSchemaAllows(t *testing.T) {
	var f *fakeServer
	f = newFake(t, answering(t, &f, `{"verdict":"pass","score":4}`))
	p := newTestOpenAI(t, f.URL, "")
	for schema, strict := range map[string]bool{
		verdictSchema: true,
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`:                     false,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`:                                                                        false,
		`{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"integer"}}},"required":["a"],"additionalProperties":false}`: false,
		`{"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":false}`:                                                          false,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"x"}},"required":["a"],"additionalProperties":false}`:                             false,
		`{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"anyOf":[{"type":"integer"},{"type":"null"}]},"c":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}}},"required":["a","b","c"],"additionalProperties":false}`: true,
	} {
		req := verdictRequest(false)
		req.Output.Schema = json.RawMessage(schema)
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		rf := f.last(t).Body["response_format"].(map[string]any)
		if got := rf["json_schema"].(map[string]any)["strict"]; got != strict {
			t.Errorf("%s: strict = %v, want %v", schema, got, strict)
		}
	}
}

func TestOpenAIFallsBackToJSONObject(t *testing.T) {
	var f *fakeServer
	answer := answering(t, &f, `{"verdict":"pass","score":4}`)
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(string(f.last(t).Raw), `"json_schema"`) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"response_format type json_schema is not supported"}}`)
			return
		}
		answer(w, r)
	})
	p := newTestOpenAI(t, f.URL, "")
	for i := range 2 {
		if _, err := p.Complete(context.Background(), verdictRequest(false), nil); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	// The first call learns (two requests); the second goes straight to
	// json_object.
	last := f.last(t)
	if rf, _ := json.Marshal(last.Body["response_format"]); string(rf) != `{"type":"json_object"}` {
		t.Errorf("response_format = %s", rf)
	}
	msgs, _ := last.Body["messages"].([]any)
	first, _ := json.Marshal(msgs[0])
	if !strings.Contains(string(first), "JSON object") || !strings.Contains(string(first), `protocol Verdict`) || !strings.Contains(string(first), `\"required\":[\"verdict\",\"score\"]`) {
		t.Errorf("the system message does not give the schema: %s", first)
	}
}

func TestOpenAIJSONObjectSaysJSON(t *testing.T) {
	var f *fakeServer
	f = newFake(t, answering(t, &f, `{"a":1}`))
	p := newTestOpenAI(t, f.URL, "")
	req := userOnly(false)
	req.JSONOutput = true
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
}

func TestToolChoiceOnlyWithTools(t *testing.T) {
	var f *fakeServer
	f = newFake(t, answering(t, &f, "ok"))
	p := newTestOpenAI(t, f.URL, "")
	req := userOnly(false)
	req.ToolChoice = "auto"
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.last(t).Body["tool_choice"]; ok {
		t.Error("tool_choice sent without tools")
	}
}

func TestOpenAIBadReplies(t *testing.T) {
	const head = `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`
	for name, c := range map[string]struct{ body, want string }{
		"message null":                {head + `"message":null,"finish_reason":"stop"}]}`, "message is null"},
		"message missing":             {head + `"finish_reason":"stop"}]}`, "message is missing"},
		"tool_calls not a list":       {head + `"message":{"role":"assistant","content":null,"tool_calls":{"id":"a"}},"finish_reason":"tool_calls"}]}`, "tool_calls is not a list"},
		"tool_calls finish, no calls": {head + `"message":{"role":"assistant","content":"x"},"finish_reason":"tool_calls"}]}`, "carries no tool calls"},
		"empty answer":                {head + `"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`, "reply is empty"},
		"blank answer":                {head + `"message":{"role":"assistant","content":" \n"},"finish_reason":"length"}]}`, `reply is empty: no text and no tool calls (finish reason "length")`},
		"negative usage":              {head + `"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-100,"completion_tokens":1,"total_tokens":-99}}`, "-100 input tokens"},
		"absurd usage":                {head + `"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":900000000000,"total_tokens":900000000001}}`, "900000000000 output tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, c.body)
			})
			p := newTestOpenAI(t, f.URL, "")
			_, err := p.Complete(context.Background(), userOnly(false), nil)
			pe, ok := AsError(err)
			if !ok || pe.Kind != KindBadReply || !pe.Transient || !strings.Contains(pe.Message, c.want) {
				t.Fatalf("err = %v, want a transient bad_reply saying %q", err, c.want)
			}
		})
	}
}

func TestOpenAIStreamBadReplies(t *testing.T) {
	const chunk = `{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,`
	for name, c := range map[string]struct {
		events []string
		want   string
	}{
		"lost calls":            {[]string{chunk + `"delta":{"role":"assistant"},"finish_reason":null}]}`, chunk + `"delta":{},"finish_reason":"tool_calls"}]}`}, "carries no tool calls"},
		"tool_calls not a list": {[]string{chunk + `"delta":{"role":"assistant","tool_calls":"x"},"finish_reason":null}]}`, chunk + `"delta":{},"finish_reason":"tool_calls"}]}`}, "tool_calls is not a list"},
		"empty":                 {[]string{chunk + `"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`}, "reply is empty"},
		"negative usage": {[]string{chunk + `"delta":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
			`{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":-7,"total_tokens":-2}}`}, "-7 output tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { sseWriter(w, c.events, 3) })
			p := newTestOpenAI(t, f.URL, "")
			_, err := p.Complete(context.Background(), userOnly(true), nil)
			pe, ok := AsError(err)
			if !ok || pe.Kind != KindBadReply || !pe.Transient || !strings.Contains(pe.Message, c.want) {
				t.Fatalf("err = %v, want a transient bad_reply saying %q", err, c.want)
			}
		})
	}
}

func TestRawRepliesAreValidUTF8(t *testing.T) {
	body := "{\"id\":\"x\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"caf\xe9 \xff\"},\"finish_reason\":\"stop\"}]}"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	})
	p := newTestOpenAI(t, f.URL, "")
	reply, err := p.Complete(context.Background(), userOnly(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(reply.Raw) || !json.Valid(reply.Raw) {
		t.Fatalf("raw = %q", reply.Raw)
	}
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(reply.Raw, &v); err != nil || v.Choices[0].Message.Content != "caf\ufffd \ufffd" {
		t.Errorf("raw content = %q (%v)", v.Choices[0].Message.Content, err)
	}
}

func TestAnthropicAnswersThroughAForcedTool(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","role":"assistant","content":[{"type":"text","text":"Here it is."},{"type":"tool_use","id":"tu1","name":"final_answer","input":{"verdict":"pass","score":4}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`)
	})
	p := newTestAnthropic(t, f.URL, "")
	reply, err := p.Complete(context.Background(), verdictRequest(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Message.Content != `{"verdict":"pass","score":4}` || len(reply.Message.ToolCalls) != 0 {
		t.Errorf("message = %+v", reply.Message)
	}
	b := f.last(t).Body
	js := func(v any) string { out, _ := json.Marshal(v); return string(out) }
	if got := js(b["tool_choice"]); got != `{"name":"final_answer","type":"tool"}` {
		t.Errorf("tool_choice = %s", got)
	}
	if got, want := js(b["tools"]), `[{"description":"Your final answer, as protocol Verdict. Call it once, when you are done.","input_schema":`+js(mustJSON(verdictSchema))+`,"name":"final_answer"}]`; got != want {
		t.Errorf("tools = %s\nwant %s", got, want)
	}
	if !strings.Contains(js(b["system"]), "calling the tool final_answer") {
		t.Errorf("system = %s", js(b["system"]))
	}
}

func TestAnthropicAnswerToolBesideAgentTools(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"read","input":{}},{"type":"tool_use","id":"tu2","name":"final_answer","input":{"verdict":"x","score":1}}],"stop_reason":"tool_use"}`)
	})
	p := newTestAnthropic(t, f.URL, "")
	req := verdictRequest(false)
	req.Tools = []ToolSpec{{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}}
	req.ToolChoice = "auto"
	req.ParallelToolCalls = true
	reply, err := p.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Message.ToolCalls) != 1 || reply.Message.ToolCalls[0].Name != "read" {
		t.Errorf("calls = %+v", reply.Message.ToolCalls)
	}
	if got, _ := json.Marshal(f.last(t).Body["tool_choice"]); string(got) != `{"type":"any"}` {
		t.Errorf("tool_choice = %s", got)
	}
}

func TestAnthropicBadReplies(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"empty":              {`{"type":"message","content":[],"stop_reason":"end_turn"}`, "reply is empty"},
		"null content":       {`{"type":"message","content":null,"stop_reason":"end_turn"}`, "reply is empty"},
		"tool_use, no calls": {`{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"tool_use"}`, "carries no tool calls"},
		"negative usage":     {`{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":-3,"output_tokens":1}}`, "-3 input_tokens"},
		"absurd usage":       {`{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1e12}}`, "output_tokens, which is impossible"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, c.body)
			})
			p := newTestAnthropic(t, f.URL, "")
			_, err := p.Complete(context.Background(), userOnly(false), nil)
			pe, ok := AsError(err)
			if !ok || pe.Kind != KindBadReply || !pe.Transient || !strings.Contains(pe.Message, c.want) {
				t.Fatalf("err = %v, want a transient bad_reply saying %q", err, c.want)
			}
		})
	}
}

func TestScriptBadReplies(t *testing.T) {
	path := writeScript(t, `{"turns": [{"content": " \n", "finish_reason": "stop"}]}`)
	s, err := NewScript(path, CheckEveryTurn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Complete(context.Background(), userOnly(false), nil)
	if pe, ok := AsError(err); !ok || pe.Kind != KindBadReply {
		t.Fatalf("empty turn: err = %v", err)
	}
	path = writeScript(t, `{"turns": [{"content": "x", "finish_reason": "tool_calls"}]}`)
	if s, err = NewScript(path, CheckEveryTurn); err != nil {
		t.Fatal(err)
	}
	_, err = s.Complete(context.Background(), userOnly(false), nil)
	if pe, ok := AsError(err); !ok || pe.Kind != KindBadReply {
		t.Fatalf("tool_calls finish without calls: err = %v", err)
	}
}

// hangingServer accepts requests and never answers (after writing head,
// if any): it waits until the client goes away.
func hangingServer(t *testing.T, head string) *fakeServer {
	return newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if head != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, head)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	})
}

func TestRequestTimeout(t *testing.T) {
	f := hangingServer(t, "")
	p := WithTimeouts(newTestOpenAI(t, f.URL, ""), Timeouts{Request: 50 * time.Millisecond, Idle: -1})
	_, err := p.Complete(context.Background(), userOnly(false), nil)
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindTimeout || !pe.Transient || !strings.Contains(pe.Message, "no complete reply within 50ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestIdleTimeoutBetweenChunks(t *testing.T) {
	f := hangingServer(t, `data: {"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`+"\n\n")
	p := WithTimeouts(newTestOpenAI(t, f.URL, ""), Timeouts{Request: -1, Idle: 50 * time.Millisecond})
	_, err := p.Complete(context.Background(), userOnly(true), nil)
	pe, ok := AsError(err)
	if !ok || pe.Kind != KindTimeout || !pe.Transient || !strings.Contains(pe.Message, "sent nothing for 50ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestTimeoutsDoNotReplaceTheCallersDeadline(t *testing.T) {
	f := hangingServer(t, "")
	p := WithTimeouts(newTestOpenAI(t, f.URL, ""), Timeouts{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Complete(ctx, userOnly(true), nil)
	if _, ok := AsError(err); ok || ctx.Err() == nil {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	f := hangingServer(t, "")
	p := WithRetry(WithTimeouts(newTestOpenAI(t, f.URL, ""), Timeouts{Request: 20 * time.Millisecond}),
		RetryPolicy{Attempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }})
	_, err := p.Complete(context.Background(), userOnly(false), nil)
	var re *RetryError
	if !errors.As(err, &re) || re.Tries != 3 {
		t.Fatalf("err = %v", err)
	}
}

func mustJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

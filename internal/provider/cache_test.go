package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
)

// cacheMarker is the prompt-caching breakpoint as the SDK encodes it.
const cacheMarker = `"cache_control":{"type":"ephemeral"}`

// growingConversation is the messages of a run after n rounds of one tool
// call each: the request of round n+1 extends the request of round n.
func growingConversation(rounds int) []state.Message {
	msgs := []state.Message{
		{Role: state.RoleSystem, Content: "You count."},
		{Role: state.RoleUser, Content: "Count to many."},
	}
	for i := 1; i <= rounds; i++ {
		id := "toolu_" + strings.Repeat("x", i)
		msgs = append(msgs,
			state.Message{Role: state.RoleAssistant, Content: "Counting.", ToolCalls: []state.ToolCall{{ID: id, Name: "count", Arguments: `{"n": 1}`}}},
			state.Message{Role: state.RoleTool, ToolCallID: id, Name: "count", Content: "counted"})
	}
	return msgs
}

// cachingRequest is a request of growingConversation(rounds) with two
// tools, in the order the runtime sends them (sorted by name).
func cachingRequest(rounds int) Request {
	return Request{
		Messages: growingConversation(rounds),
		Tools: []ToolSpec{
			{Name: "count", Description: "Count", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
			{Name: "note", Description: "Note", Parameters: json.RawMessage(`{"type":"object"}`)},
		},
		ToolChoice: "auto",
	}
}

// wireParts splits a Messages API body into the raw bytes of its tools,
// system and each message, as sent.
func wireParts(t *testing.T, body []byte) (tools, system []byte, messages []json.RawMessage) {
	t.Helper()
	var b struct {
		Tools    json.RawMessage   `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body: %v: %s", err, body)
	}
	return b.Tools, b.System, b.Messages
}

// TestAnthropicCacheBreakpoints: a request marks the last tool, the last
// system block, the last message and the message the previous request
// ended with, never more than the API's four markers.
func TestAnthropicCacheBreakpoints(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, anthropicMessageJSON)
	})
	p := newTestAnthropic(t, f.URL, testKey)
	for rounds := 0; rounds <= 3; rounds++ {
		if _, err := p.Complete(context.Background(), cachingRequest(rounds), nil); err != nil {
			t.Fatal(err)
		}
		sent := f.last(t).Sent
		if n := bytes.Count(sent, []byte(cacheMarker)); n > 4 {
			t.Fatalf("round %d: %d cache markers, the API allows 4: %s", rounds, n, sent)
		}
		tools, system, msgs := wireParts(t, sent)
		var toolList []json.RawMessage
		_ = json.Unmarshal(tools, &toolList)
		if !bytes.Contains(toolList[len(toolList)-1], []byte(cacheMarker)) || bytes.Contains(toolList[0], []byte(cacheMarker)) {
			t.Errorf("round %d: tools = %s, want a marker on the last tool only", rounds, tools)
		}
		if !bytes.Contains(system, []byte(cacheMarker)) {
			t.Errorf("round %d: system = %s, want a marker", rounds, system)
		}
		for i, m := range msgs {
			// The last message, and the user turn before the latest
			// assistant reply (where the previous request ended).
			want := i == len(msgs)-1 || i == len(msgs)-3
			if got := bytes.Contains(m, []byte(cacheMarker)); got != want {
				t.Errorf("round %d: message %d of %d marked %t, want %t: %s", rounds, i, len(msgs), got, want, m)
			}
		}
	}

	// Without tools and a system prompt, only the conversation is marked.
	if _, err := p.Complete(context.Background(), userOnly(false), nil); err != nil {
		t.Fatal(err)
	}
	if got := string(f.last(t).Sent); got != `{"max_tokens":4096,"messages":[{"content":[{"text":"x",`+cacheMarker+`,"type":"text"}],"role":"user"}],"model":"claude-test"}` {
		t.Errorf("minimal request = %s", got)
	}
}

// TestCachePrefixStable: each request's tools, system and earlier messages
// are the bytes the previous request sent (but for where the markers sit),
// whether the requests come from one provider or from a new one built
// from messages that went through the store's JSON (a resume in another
// process).
func TestCachePrefixStable(t *testing.T) {
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run(kind, func(t *testing.T) {
			reply := anthropicMessageJSON
			if kind == "openai" {
				reply = completionJSON
			}
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, reply)
			})
			var prev []byte
			for rounds := 0; rounds <= 4; rounds++ {
				// A new provider each time, and the messages
				// decoded from their stored JSON: nothing is
				// carried over in memory.
				req := cachingRequest(rounds)
				stored, err := json.Marshal(req.Messages)
				if err != nil {
					t.Fatal(err)
				}
				req.Messages = nil
				if err := json.Unmarshal(stored, &req.Messages); err != nil {
					t.Fatal(err)
				}
				var p Provider = newTestAnthropic(t, f.URL, testKey)
				if kind == "openai" {
					req.Model = "gpt-test"
					p = newTestOpenAI(t, f.URL, testKey)
				}
				if _, err := p.Complete(context.Background(), req, nil); err != nil {
					t.Fatal(err)
				}
				body := f.last(t).Raw // markers left out
				if prev != nil {
					checkPrefix(t, kind, prev, body)
				}
				prev = body
			}
		})
	}
}

// checkPrefix fails unless next starts with everything prev sent: the same
// tools and system bytes, and prev's messages as next's first messages.
func checkPrefix(t *testing.T, kind string, prev, next []byte) {
	t.Helper()
	pt, ps, pm := wireParts(t, prev)
	nt, ns, nm := wireParts(t, next)
	if !bytes.Equal(pt, nt) || !bytes.Equal(ps, ns) {
		t.Fatalf("tools or system differ:\n%s %s\n%s %s", pt, ps, nt, ns)
	}
	if len(nm) <= len(pm) {
		t.Fatalf("the conversation did not grow: %d then %d messages", len(pm), len(nm))
	}
	for i := range pm {
		if !bytes.Equal(pm[i], nm[i]) {
			t.Fatalf("%s: message %d differs:\n%s\n%s", kind, i, pm[i], nm[i])
		}
	}
}

// redirect sends every request to the fake server, whatever its URL says,
// so that a provider configured for OpenAI's own API can be tested.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

// TestOpenAIPromptCacheKey: OpenAI's own API is sent the run's key as
// prompt_cache_key; another OpenAI-compatible server, which may reject a
// field it does not know, is not.
func TestOpenAIPromptCacheKey(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completionJSON)
	})
	to, _ := url.Parse(f.URL)
	official, err := NewOpenAI(OpenAIConfig{APIKey: testKey, Model: "gpt-test", HTTPClient: &http.Client{Transport: redirect{to}}})
	if err != nil {
		t.Fatal(err)
	}
	req := userOnly(false)
	req.CacheKey = "run_01TEST"
	if _, err := official.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.last(t).Body["prompt_cache_key"]; got != "run_01TEST" {
		t.Errorf("OpenAI's API: prompt_cache_key = %v, want run_01TEST", got)
	}
	other := newTestOpenAI(t, f.URL, testKey)
	if _, err := other.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok := f.last(t).Body["prompt_cache_key"]; ok {
		t.Errorf("another server was sent prompt_cache_key %v", got)
	}
}

// TestOpenAICachedTokens: cached prompt tokens are read from
// prompt_tokens_details, whole or streamed, and stay part of the input.
func TestOpenAICachedTokens(t *testing.T) {
	whole := strings.Replace(completionJSON, `"usage": {"prompt_tokens": 120,`, `"usage": {"prompt_tokens_details": {"cached_tokens": 96}, "prompt_tokens": 120,`, 1)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, whole)
	})
	reply, err := newTestOpenAI(t, f.URL, testKey).Complete(context.Background(), userOnly(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (state.Usage{InputTokens: 120, CachedInputTokens: 96, OutputTokens: 30, TotalTokens: 150, ProviderRequests: 1}); reply.Usage != want {
		t.Errorf("usage = %+v, want %+v", reply.Usage, want)
	}

	s := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		sseWriter(w, []string{
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`,
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":2,"total_tokens":52,"prompt_tokens_details":{"cached_tokens":32}}}`,
			`[DONE]`,
		}, 1)
	})
	reply, err = newTestOpenAI(t, s.URL, testKey).Complete(context.Background(), userOnly(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (state.Usage{InputTokens: 50, CachedInputTokens: 32, OutputTokens: 2, TotalTokens: 52, ProviderRequests: 1}); reply.Usage != want {
		t.Errorf("streamed usage = %+v, want %+v", reply.Usage, want)
	}
}

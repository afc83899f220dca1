package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nexa-run/nexa/internal/state"
)

// cachingServer is a fake Messages API that caches prompts as Anthropic
// describes it: a prefix is written to the cache where a request puts a
// cache_control marker, and a later request reads it only if its own
// content up to one of its markers is the same bytes. Content is counted
// in blocks (the tools, the system prompt, each message) and a token is
// four bytes. It answers each request with one tool call, or a final
// answer once the conversation has `rounds` replies, and reports the
// cache_read, cache_creation and plain input tokens it computed.
type cachingServer struct {
	*httptest.Server
	rounds int
	mu     sync.Mutex
	cache  map[[32]byte]bool
}

func newCachingServer(tb testing.TB, rounds int) *cachingServer {
	s := &cachingServer{rounds: rounds, cache: map[[32]byte]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

func (s *cachingServer) serve(w http.ResponseWriter, r *http.Request) {
	sent, _ := io.ReadAll(r.Body)
	var b struct {
		Tools    json.RawMessage   `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(sent, &b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	blocks := append([]json.RawMessage{b.Tools, b.System}, b.Messages...)
	marked := make([]bool, len(blocks))
	size := make([]int, len(blocks)) // bytes up to and including block i
	h := sha256.New()
	sums := make([][32]byte, len(blocks))
	for i, blk := range blocks {
		marked[i] = bytes.Contains(blk, []byte(cacheMarker))
		plain := withoutCacheMarkers(blk)
		h.Write(plain)
		copy(sums[i][:], h.Sum(nil))
		size[i] = len(plain)
		if i > 0 {
			size[i] += size[i-1]
		}
	}
	last := -1
	for i := range blocks {
		if marked[i] {
			last = i
		}
	}
	s.mu.Lock()
	hit := -1
	for i := last; i >= 0; i-- {
		if s.cache[sums[i]] {
			hit = i
			break
		}
	}
	for i := range blocks {
		if marked[i] {
			s.cache[sums[i]] = true
		}
	}
	s.mu.Unlock()
	tokens := func(i int) int {
		if i < 0 {
			return 0
		}
		return size[i] / 4
	}
	read, written := tokens(hit), tokens(last)-tokens(hit)
	plain := tokens(len(blocks)-1) - tokens(last)
	replies := len(b.Messages) / 2
	content := fmt.Sprintf(`[{"type":"tool_use","id":"toolu_%02d","name":"lookup","input":{"word":"w%d"}}]`, replies+1, replies+1)
	stop := "tool_use"
	if replies >= s.rounds {
		content, stop = `[{"type":"text","text":"Done."}]`, "end_turn"
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"msg","type":"message","role":"assistant","model":"claude-test","content":%s,"stop_reason":%q,"stop_sequence":null,`+
		`"usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"output_tokens":20}}`, content, stop, plain, read, written)
}

// benchPrompt is an agent's system prompt of about a thousand tokens.
var benchPrompt = strings.Repeat("You look words up and write careful notes about each of them. ", 64)

// cachedRun drives a run of `rounds` tool rounds (rounds+1 requests)
// against srv as the runtime does: each request is built from the
// messages alone, and at `resumeAt` the conversation goes through JSON and
// a new provider, as a resume in another process does. It returns each
// request's usage.
func cachedRun(tb testing.TB, srv *cachingServer, rounds, resumeAt int) []state.Usage {
	tb.Helper()
	tools := []ToolSpec{
		{Name: "lookup", Description: "Look a word up in the dictionary and return its meanings", Parameters: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string","description":"the word"}},"required":["word"]}`)},
		{Name: "save_note", Description: "Save a note", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
	}
	msgs := []state.Message{{Role: state.RoleSystem, Content: benchPrompt}, {Role: state.RoleUser, Content: "Write notes on twenty words."}}
	p, err := NewAnthropic(AnthropicConfig{BaseURL: srv.URL, APIKey: "k", Model: "claude-test"})
	if err != nil {
		tb.Fatal(err)
	}
	var usage []state.Usage
	for turn := 0; ; turn++ {
		if turn == resumeAt {
			raw, _ := json.Marshal(msgs)
			msgs = nil
			if err := json.Unmarshal(raw, &msgs); err != nil {
				tb.Fatal(err)
			}
			if p, err = NewAnthropic(AnthropicConfig{BaseURL: srv.URL, APIKey: "k", Model: "claude-test"}); err != nil {
				tb.Fatal(err)
			}
		}
		reply, err := p.Complete(context.Background(), Request{Messages: msgs, Tools: tools, ToolChoice: "auto", CacheKey: "run_bench"}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		usage = append(usage, reply.Usage)
		msgs = append(msgs, reply.Message)
		if len(reply.Message.ToolCalls) == 0 {
			return usage
		}
		for _, c := range reply.Message.ToolCalls {
			msgs = append(msgs, state.Message{Role: state.RoleTool, ToolCallID: c.ID, Name: c.Name,
				Content: strings.Repeat("A meaning of the word, with an example of its use. ", 20)})
		}
	}
}

// TestCachedTwentyTurns: in a 20-turn run resumed halfway in a new
// provider, every request after the first reads the cache, and reads at
// least everything the request before it sent.
func TestCachedTwentyTurns(t *testing.T) {
	srv := newCachingServer(t, 19)
	usage := cachedRun(t, srv, 19, 10)
	if len(usage) != 20 {
		t.Fatalf("%d requests, want 20", len(usage))
	}
	if usage[0].CachedInputTokens != 0 || usage[0].CacheCreationInputTokens == 0 {
		t.Errorf("request 1: %+v, want a cache write and no read", usage[0])
	}
	for i := 1; i < len(usage); i++ {
		if prev := usage[i-1].InputTokens; usage[i].CachedInputTokens < prev {
			t.Errorf("request %d read %d cached tokens, want at least the %d tokens request %d sent", i+1, usage[i].CachedInputTokens, prev, i)
		}
	}
}

// BenchmarkAnthropicCaching measures what prompt caching saves over a
// 20-turn run resumed in a new provider at turn 10 (docs/benchmarks.md,
// "Prompt caching"): the share of input tokens read from the cache and
// the input's cost at Claude Sonnet 4.5's prices, with the cache and as
// if every prompt token were billed as plain input, as it was before
// requests carried cache_control.
func BenchmarkAnthropicCaching(b *testing.B) {
	var in, cached, written, hits int
	for i := 0; i < b.N; i++ {
		srv := newCachingServer(b, 19)
		usage := cachedRun(b, srv, 19, 10)
		if len(usage) != 20 {
			b.Fatalf("%d requests", len(usage))
		}
		in, cached, written, hits = 0, 0, 0, 0
		for j, u := range usage {
			in += u.InputTokens
			cached += u.CachedInputTokens
			written += u.CacheCreationInputTokens
			if j > 0 && u.CachedInputTokens > 0 {
				hits++
			}
		}
	}
	plain := in - cached - written
	b.ReportMetric(float64(hits), "hits/19")
	b.ReportMetric(float64(in), "input-tokens")
	b.ReportMetric(100*float64(cached)/float64(in), "%cached")
	b.ReportMetric((3*float64(plain)+0.3*float64(cached)+3.75*float64(written))/1e6, "usd-input")
	b.ReportMetric(3*float64(in)/1e6, "usd-input-uncached")
}

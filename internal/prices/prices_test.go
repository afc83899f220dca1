package prices

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
)

var (
	anthropicAPI = state.ProviderIdentity{Kind: "anthropic", BaseURL: provider.DefaultAnthropicBaseURL, Model: "claude-sonnet-4-5"}
	openaiAPI    = state.ProviderIdentity{Kind: "openai", BaseURL: provider.DefaultOpenAIBaseURL, Model: "gpt-4.1"}
)

// TestBuiltinTable: the embedded table parses, says when it was written,
// and prices each kind of token of a reply at its own rate.
func TestBuiltinTable(t *testing.T) {
	tb := Builtin()
	if tb.Written() == "" {
		t.Fatal("the built-in table has no date")
	}
	// 1,000 plain input at $3, 10,000 cached at $0.30, 2,000 written
	// at $3.75, 500 output at $15 (per million).
	u := state.Usage{InputTokens: 13_000, CachedInputTokens: 10_000, CacheCreationInputTokens: 2_000, OutputTokens: 500}
	got, ok := tb.Cost(anthropicAPI, u)
	if want := 0.003 + 0.003 + 0.0075 + 0.0075; !ok || got != want {
		t.Errorf("anthropic cost = %v, %t; want %v", got, ok, want)
	}
	got, ok = tb.Cost(openaiAPI, state.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, OutputTokens: 100_000})
	if want := 1.2 + 0.2 + 0.8; !ok || got != want {
		t.Errorf("openai cost = %v, %t; want %v", got, ok, want)
	}
}

// TestNeverAGuess: no price for a model the table does not name, for a
// built-in model behind another endpoint, for tokens of a kind the price
// does not cover, or for a prompt beyond max_input_tokens.
func TestNeverAGuess(t *testing.T) {
	tb := Builtin()
	cases := map[string]struct {
		id state.ProviderIdentity
		u  state.Usage
	}{
		"unknown model":       {state.ProviderIdentity{Kind: "openai", BaseURL: provider.DefaultOpenAIBaseURL, Model: "gpt-imaginary"}, state.Usage{InputTokens: 1}},
		"another endpoint":    {state.ProviderIdentity{Kind: "openai", BaseURL: "http://localhost:11434/v1", Model: "gpt-4.1"}, state.Usage{InputTokens: 1}},
		"script":              {state.ProviderIdentity{Kind: "script", Model: "scripted"}, state.Usage{InputTokens: 1}},
		"cache write, openai": {openaiAPI, state.Usage{InputTokens: 10, CacheCreationInputTokens: 5}},
		"long prompt":         {anthropicAPI, state.Usage{InputTokens: 200_001}},
		"parts over whole":    {anthropicAPI, state.Usage{InputTokens: 5, CachedInputTokens: 10}},
	}
	for name, c := range cases {
		if got, ok := tb.Cost(c.id, c.u); ok {
			t.Errorf("%s: cost %v, want unknown", name, got)
		}
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prices.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFileOverrides: a prices file replaces a built-in price, names a
// model for any endpoint (the script provider too), and keeps the rest of
// the built-in table.
func TestFileOverrides(t *testing.T) {
	tb, err := Load(writeFile(t, `
[models."anthropic/claude-sonnet-4-5"]
input = 2
output = 10

[models."script/scripted"]
input = 1
output = 1
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := tb.Cost(anthropicAPI, state.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}); !ok || got != 12 {
		t.Errorf("overridden cost = %v, %t; want 12", got, ok)
	}
	if _, ok := tb.Cost(anthropicAPI, state.Usage{InputTokens: 10, CachedInputTokens: 5}); ok {
		t.Error("the file's entry has no cached_input price, yet cached tokens were priced")
	}
	script := state.ProviderIdentity{Kind: "script", Model: "scripted", Digest: "sha256:x"}
	if got, ok := tb.Cost(script, state.Usage{InputTokens: 500_000, OutputTokens: 500_000}); !ok || got != 1 {
		t.Errorf("script cost = %v, %t; want 1", got, ok)
	}
	if _, ok := tb.Cost(openaiAPI, state.Usage{InputTokens: 1}); !ok {
		t.Error("a built-in price was lost by loading a file")
	}
}

// TestBrokenFiles: each problem of a prices file is reported with its
// line.
func TestBrokenFiles(t *testing.T) {
	cases := map[string]struct{ text, want string }{
		"syntax":        {"[models.\"openai/x\"]\ninput = = 1\n", ":2: not valid TOML"},
		"unknown field": {"[models.\"openai/x\"]\ninput = 1\noutput = 2\ncahced_input = 1\n", `:4: unknown key "cahced_input"`},
		"negative":      {"[models.\"openai/x\"]\ninput = -1\noutput = 2\n", ":2: input of openai/x must be between 0"},
		"not a number":  {"written = \"x\"\n\n[models.\"openai/x\"]\ninput = 1\noutput = \"2\"\n", ":5: output of openai/x must be a number"},
		"no output":     {"\n[models.\"openai/x\"]\ninput = 1\n", ":2: openai/x needs at least input and output"},
		"bad provider":  {"[models.\"gemini/x\"]\ninput = 1\noutput = 1\n", `:1: model "gemini/x" must be named PROVIDER/MODEL`},
		"top-level key": {"currency = \"EUR\"\n", `:1: unknown key "currency"`},
	}
	for name, c := range cases {
		path := writeFile(t, c.text)
		_, err := Load(path)
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), path+c.want) {
			t.Errorf("%s: error = %v, want %s%s", name, err, path, c.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// fixed is a provider that answers every request with one usage.
type fixed struct {
	id    state.ProviderIdentity
	usage state.Usage
}

func (f fixed) Complete(context.Context, provider.Request, func(provider.Event)) (provider.Reply, error) {
	return provider.Reply{Usage: f.usage}, nil
}
func (f fixed) Identity() state.ProviderIdentity { return f.id }

// TestWrap: a wrapped provider's replies carry their cost when it is
// known, and it says whether its model has a price.
func TestWrap(t *testing.T) {
	tb := Builtin()
	p := Wrap(fixed{anthropicAPI, state.Usage{InputTokens: 100_000, ProviderRequests: 1}}, tb)
	r, err := p.Complete(context.Background(), provider.Request{}, nil)
	if err != nil || !r.Usage.CostKnown || r.Usage.CostUSD != 0.3 {
		t.Fatalf("reply usage = %+v, %v; want cost 0.3", r.Usage, err)
	}
	if !provider.PriceKnown(p) {
		t.Error("a priced model reported no price")
	}
	local := Wrap(fixed{state.ProviderIdentity{Kind: "openai", BaseURL: "http://localhost:8080/v1", Model: "gpt-4.1"}, state.Usage{InputTokens: 1, ProviderRequests: 1}}, tb)
	r, _ = local.Complete(context.Background(), provider.Request{}, nil)
	if r.Usage.CostKnown || provider.PriceKnown(local) {
		t.Errorf("a local server's model was priced: %+v", r.Usage)
	}
}

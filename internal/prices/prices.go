// Package prices turns the tokens a run used into US dollars: a table of
// per-million-token prices for the common OpenAI and Anthropic models,
// embedded in nexa (builtin.toml, with the date it was written), which a
// user's prices file overrides or extends (--prices FILE, NEXA_PRICES; the
// same TOML format, docs/providers.md "Cost and prices").
//
// A cost is never a guess: a request whose model has no price, or that
// used tokens of a kind its price does not cover (cached input without a
// cached_input price, more prompt tokens than max_input_tokens), has no
// cost, and neither has the run (its usage.cost_usd is null).
//
// The built-in prices apply only to the providers' own APIs: a model of
// the same name behind another base URL (a proxy, a local server) may cost
// anything, so it has no price unless a prices file names it. Entries of a
// prices file apply whatever the base URL.
package prices

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/nexa-run/nexa/internal/provider"
	"github.com/nexa-run/nexa/internal/state"
)

//go:embed builtin.toml
var builtinTOML string

// maxPrice bounds a price per million tokens: a larger one is a typing
// mistake (a price per token written per million, say), not a model.
const maxPrice = 100_000

// Price is what one model costs, in US dollars per million tokens. A nil
// price is unknown: tokens of that kind make a request's cost unknown.
type Price struct {
	Input       *float64
	CachedInput *float64
	CacheWrite  *float64
	Output      *float64
	// MaxInputTokens, when above 0, is the most prompt tokens a request
	// may have for these prices to hold (longer prompts are billed at
	// another tariff).
	MaxInputTokens int
}

// Cost is what a request that used u costs at p, and whether p covers
// every token of it. Input tokens are split as the providers bill them:
// those read from the cache, those written to it, and the rest.
func (p Price) Cost(u state.Usage) (float64, bool) {
	if p.Input == nil || p.Output == nil {
		return 0, false
	}
	if p.MaxInputTokens > 0 && u.InputTokens > p.MaxInputTokens {
		return 0, false
	}
	plain := u.InputTokens - u.CachedInputTokens - u.CacheCreationInputTokens
	if plain < 0 || u.OutputTokens < 0 {
		return 0, false // a reply whose parts exceed its whole is not priced
	}
	part := func(tokens int, price *float64) (float64, bool) {
		if tokens == 0 {
			return 0, true
		}
		if price == nil {
			return 0, false
		}
		return float64(tokens) * *price, true
	}
	total := 0.0
	for _, c := range []struct {
		tokens int
		price  *float64
	}{{plain, p.Input}, {u.CachedInputTokens, p.CachedInput}, {u.CacheCreationInputTokens, p.CacheWrite}, {u.OutputTokens, p.Output}} {
		v, ok := part(c.tokens, c.price)
		if !ok {
			return 0, false
		}
		total += v
	}
	return state.RoundCost(total / 1e6), true
}

// Table is a set of prices by provider kind and model.
type Table struct {
	// File is the prices file read over the built-in table ("" if none).
	File string
	user map[string]Price
}

// builtin is the embedded table, parsed the first time a built-in price
// is looked up rather than at every start: most runs (a scripted model, a
// local server) never need it, and parsing it costs a few tenths of a
// millisecond.
var builtin = sync.OnceValue(func() *document {
	doc, err := parse("builtin.toml", builtinTOML)
	if err != nil {
		panic("prices: the embedded table is broken: " + err.Error())
	}
	return doc
})

// Written is the date the built-in prices were written.
func (t *Table) Written() string { return builtin().written }

// officialBaseURL is the base URL of each provider's own API: the only
// one the built-in prices apply to.
var officialBaseURL = map[string]string{
	"openai":    provider.DefaultOpenAIBaseURL,
	"anthropic": provider.DefaultAnthropicBaseURL,
}

// Builtin is the embedded table alone.
func Builtin() *Table { return &Table{} }

// Load is the built-in table with the prices file at path over it (none
// when path is ""). A file that cannot be read or breaks the format is an
// error naming its line.
func Load(path string) (*Table, error) {
	t := Builtin()
	if path == "" {
		return t, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices file: %w", err)
	}
	doc, err := parse(path, string(data))
	if err != nil {
		return nil, err
	}
	t.File, t.user = path, doc.models
	return t, nil
}

// key names a model in a table: "kind/model".
func key(id state.ProviderIdentity) string { return id.Kind + "/" + id.Model }

// Lookup finds the price of a provider's model: a prices file's entry
// for any endpoint, else a built-in one for the provider's own API.
func (t *Table) Lookup(id state.ProviderIdentity) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	if p, ok := t.user[key(id)]; ok {
		return p, true
	}
	if off, ok := officialBaseURL[id.Kind]; ok && strings.TrimRight(id.BaseURL, "/") == off {
		p, ok := builtin().models[key(id)]
		return p, ok
	}
	return Price{}, false
}

// Cost is what a request of provider id that used u costs, and whether it
// is known.
func (t *Table) Cost(id state.ProviderIdentity, u state.Usage) (float64, bool) {
	p, ok := t.Lookup(id)
	if !ok {
		return 0, false
	}
	return p.Cost(u)
}

// Wrap makes p price its replies by t: each reply's Usage.CostUSD is set
// when its cost is known (CostKnown), and left unknown otherwise.
func Wrap(p provider.Provider, t *Table) provider.Provider {
	return &priced{Provider: p, table: t}
}

// priced is a provider whose replies carry their cost.
type priced struct {
	provider.Provider
	table *Table
}

// Complete asks the wrapped provider and prices the reply.
func (p *priced) Complete(ctx context.Context, req provider.Request, progress func(provider.Event)) (provider.Reply, error) {
	r, err := p.Provider.Complete(ctx, req, progress)
	if err != nil {
		return r, err
	}
	r.Usage.CostUSD, r.Usage.CostKnown = p.table.Cost(p.Identity(), r.Usage)
	return r, nil
}

// PriceKnown reports whether the provider's model has a price.
func (p *priced) PriceKnown() bool {
	_, ok := p.table.Lookup(p.Identity())
	return ok
}

// FileError is a problem of a prices file, with its line (0 when the
// line is not known).
type FileError struct {
	File string
	Line int
	Msg  string
}

// Error renders "FILE:LINE: message", as compilers do, so an editor can
// jump to it.
func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// document is a parsed prices file.
type document struct {
	written string
	models  map[string]Price
}

// kinds are the provider kinds a model key may name.
var kinds = []string{"anthropic", "openai", "script"}

// parse reads a prices file strictly: unknown keys, prices that are not
// non-negative numbers, and entries without input and output prices are
// errors, each naming its line.
func parse(name, text string) (*document, error) {
	var raw map[string]any
	if _, err := toml.Decode(text, &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &FileError{File: name, Line: pe.Position.Line, Msg: "not valid TOML: " + pe.Message}
		}
		return nil, &FileError{File: name, Msg: "not valid TOML: " + err.Error()}
	}
	lines := strings.Split(text, "\n")
	fail := func(line int, format string, args ...any) error {
		return &FileError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	doc := &document{models: map[string]Price{}}
	for _, k := range sortedKeys(raw) {
		switch k {
		case "written":
			s, ok := raw[k].(string)
			if !ok {
				return nil, fail(keyLine(lines, k), "written must be a date in quotes, e.g. \"2026-12-05\"")
			}
			doc.written = s
		case "models":
		default:
			return nil, fail(keyLine(lines, k), "unknown key %q: a prices file has written and [models.\"PROVIDER/MODEL\"] tables", k)
		}
	}
	models, ok := raw["models"].(map[string]any)
	if !ok && raw["models"] != nil {
		return nil, fail(keyLine(lines, "models"), "models must be tables: [models.\"PROVIDER/MODEL\"]")
	}
	for _, m := range sortedKeys(models) {
		header := headerLine(lines, m)
		kind, model, _ := strings.Cut(m, "/")
		if !slices.Contains(kinds, kind) || model == "" {
			return nil, fail(header, "model %q must be named PROVIDER/MODEL with PROVIDER one of %s (e.g. \"anthropic/claude-sonnet-4-5\")", m, strings.Join(kinds, ", "))
		}
		fields, ok := models[m].(map[string]any)
		if !ok {
			return nil, fail(header, "models.%q must be a table of prices", m)
		}
		var p Price
		for _, f := range sortedKeys(fields) {
			line := fieldLine(lines, header, f)
			v := fields[f]
			if f == "max_input_tokens" {
				n, ok := v.(int64)
				if !ok || n < 0 || n > provider.MaxReplyTokens {
					return nil, fail(line, "%s of %s must be a whole number of tokens from 0 to %d", f, m, provider.MaxReplyTokens)
				}
				p.MaxInputTokens = int(n)
				continue
			}
			dst := map[string]**float64{"input": &p.Input, "cached_input": &p.CachedInput, "cache_write": &p.CacheWrite, "output": &p.Output}[f]
			if dst == nil {
				return nil, fail(line, "unknown key %q in %s: use input, cached_input, cache_write, output and max_input_tokens", f, m)
			}
			var x float64
			switch n := v.(type) {
			case int64:
				x = float64(n)
			case float64:
				x = n
			default:
				return nil, fail(line, "%s of %s must be a number of US dollars per million tokens, not %v", f, m, v)
			}
			if math.IsNaN(x) || x < 0 || x > maxPrice {
				return nil, fail(line, "%s of %s must be between 0 and %d US dollars per million tokens, not %v", f, m, maxPrice, v)
			}
			*dst = &x
		}
		if p.Input == nil || p.Output == nil {
			return nil, fail(header, "%s needs at least input and output prices", m)
		}
		doc.models[m] = p
	}
	return doc, nil
}

// headerLine is the line of the [models."NAME"] table (1-based), or 0.
func headerLine(lines []string, name string) int {
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") && strings.Contains(l, "models") && strings.Contains(l, name) {
			return i + 1
		}
	}
	return 0
}

// fieldLine is the line of key f in the table that starts at line header
// (the top level when header is 0), or the header's line.
func fieldLine(lines []string, header int, f string) int {
	for i := header; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "[") {
			break // the next table
		}
		if rest, ok := strings.CutPrefix(l, f); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") {
			return i + 1
		}
	}
	return header
}

// keyLine is the line of a top-level key (or of a table named after
// it), or 0.
func keyLine(lines []string, k string) int {
	if n := fieldLine(lines, 0, k); n > 0 {
		return n
	}
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "["+k) {
			return i + 1
		}
	}
	return 0
}

// sortedKeys are m's keys in order, so the first problem reported is the
// same every time.
func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Package schemacheck validates JSON values against JSON Schemas (drafts 4,
// 6, 7, 2019-09 and 2020-12) and explains every problem it finds at its
// place in the value, in words a model or a user can act on: tool
// arguments, an agent's final answer, the json_validate builtin.
//
// The keyword semantics, the check of a schema against its draft's
// meta-schema and the error tree come from
// github.com/santhosh-tekuri/jsonschema/v6, which reports every failure at
// its instance location. This package words that tree (explain.go), makes
// sure nothing outside a schema is ever loaded for it, and refuses a schema
// that refers back to itself without stepping into the value (cycle.go).
package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Problem is one reason a value does not match its schema.
type Problem struct {
	// At is the JSON Pointer of the offending part of the value ("/" for the
	// value itself), with real array indices.
	At string
	// Msg says what is wrong there.
	Msg string
}

// String renders the problem as "at /items/2/name: got number, want string".
func (p Problem) String() string { return "at " + p.At + ": " + p.Msg }

// Explain joins problems into one line, at most max of them followed by
// "and N more", the form models and users see.
func Explain(ps []Problem, max int) string {
	return strings.Join(Strings(ps, max), "; ")
}

// Strings renders each problem with Problem.String, at most max of them
// followed by "and N more".
func Strings(ps []Problem, max int) []string {
	out := []string{}
	for i, p := range ps {
		if i == max {
			out = append(out, fmt.Sprintf("and %d more", len(ps)-max))
			break
		}
		out = append(out, p.String())
	}
	return out
}

// Schema is a checked, compiled schema, safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// ErrExternalRef is wrapped by Compile's error when a schema refers to a
// schema outside itself: nexa never reads files or fetches URLs for a
// schema, which may come from an untrusted MCP server.
var ErrExternalRef = errors.New("external schema references are not loaded")

// rootURL names the schema being compiled inside the library; a relative
// reference in it resolves beside it (rootDir). It is not a location
// anything can be loaded from.
const (
	rootDir = "nexa:///"
	rootURL = rootDir + "schema.json"
)

// Compile checks raw against its draft's meta-schema and prepares it for
// Validate. An empty raw means {"type":"object"}. The error lists every
// misshapen keyword with its place in the schema.
//
// Compiled schemas are kept (up to cacheSize of them, each at most
// cacheMaxBytes long) and shared: a Schema is immutable and safe for
// concurrent use, and every run of `nexa serve` compiles the same tool
// schemas when it starts.
func Compile(raw []byte) (*Schema, error) { return cached(raw) }

// CompileGenerated is Compile for a schema nexa wrote itself (the one the
// compiler generates from a tool's signature or a protocol's fields, or a
// built-in tool's declaration), so that callers say where a schema came
// from. The library checks every schema against its meta-schema as part of
// compiling it, so both functions do the same work and share one cache.
func CompileGenerated(raw []byte) (*Schema, error) { return cached(raw) }

const (
	cacheSize     = 256
	cacheMaxBytes = 64 << 10
)

var cache = struct {
	mu sync.Mutex
	m  map[string]*Schema
}{m: map[string]*Schema{}}

// cached is Compile through the cache; a rejected schema is not kept.
func cached(raw []byte) (*Schema, error) {
	if len(raw) > cacheMaxBytes {
		return compile(raw)
	}
	key := string(raw)
	cache.mu.Lock()
	s, ok := cache.m[key]
	cache.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := compile(raw)
	if err != nil {
		return nil, err
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if len(cache.m) >= cacheSize {
		clear(cache.m) // simplest bound: start again
	}
	cache.m[key] = s
	return s, nil
}

func compile(raw []byte) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte(`{"type":"object"}`)
	}
	doc, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoads{})
	if err := c.AddResource(rootURL, doc); err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %w", err)
	}
	s, err := c.Compile(rootURL)
	if err != nil {
		return nil, compileError(err, doc)
	}
	if at := refCycle(s); at != "" {
		return nil, fmt.Errorf("not a valid JSON Schema: at %s: the schema refers back to itself here without stepping into the value", at)
	}
	return &Schema{s: s}, nil
}

// refuseLoads is the library's loader: it loads nothing, so a $ref or a
// $schema naming anything outside the schema fails to compile.
type refuseLoads struct{}

// Load implements jsonschema.URLLoader by refusing.
func (refuseLoads) Load(url string) (any, error) { return nil, ErrExternalRef }

// compileError words the library's reason for not compiling doc.
func compileError(err error, doc any) error {
	var (
		meta    *jsonschema.SchemaValidationError
		load    *jsonschema.LoadURLError
		pointer *jsonschema.JSONPointerNotFoundError
		anchor  *jsonschema.AnchorNotFoundError
	)
	switch {
	case errors.As(err, &meta):
		var verr *jsonschema.ValidationError
		if errors.As(meta.Err, &verr) {
			return fmt.Errorf("not a valid JSON Schema: %s", Explain(explain(verr, doc), 5))
		}
	case errors.As(err, &load):
		if d, ok := doc.(map[string]any); ok {
			if s, ok := d["$schema"].(string); ok && strings.TrimSuffix(s, "#") == load.URL {
				return fmt.Errorf("$schema %q is not supported (use draft 2020-12, 2019-09, 7, 6 or 4)", s)
			}
		}
		return fmt.Errorf("%w (%s)", ErrExternalRef, strings.TrimPrefix(load.URL, rootDir))
	case errors.As(err, &pointer):
		return fmt.Errorf("not a valid JSON Schema: $ref %q points at nothing in the schema", local(pointer.URL))
	case errors.As(err, &anchor):
		return fmt.Errorf("not a valid JSON Schema: $ref %q names an anchor the schema does not have", local(anchor.Reference))
	}
	return fmt.Errorf("not a valid JSON Schema: %w", err)
}

// local drops the library's name for the schema from a reference into it.
func local(url string) string {
	if rest, ok := strings.CutPrefix(url, rootURL); ok {
		return rest
	}
	return url
}

// Decode parses a JSON document the way Validate expects it: numbers keep
// their exact text (json.Number), one value and nothing after it.
func Decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// Validate returns every problem of v (a value decoded from JSON: maps,
// slices, strings, bools, nil, json.Number or Go numbers) against the
// schema, in a stable order; none when v is valid.
func (s *Schema) Validate(v any) []Problem {
	err := s.s.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []Problem{{At: "/", Msg: err.Error()}}
	}
	return explain(verr, v)
}

// Package schemacheck validates JSON values against JSON Schemas (draft
// 2020-12 and draft-07) and explains every problem it finds at its place in
// the value, in words a model or a user can act on: tool arguments, an
// agent's final answer, the json_validate builtin.
//
// The keyword semantics come from github.com/google/jsonschema-go, which does
// no work when the program starts (nexa's start-up budget is a few
// milliseconds). That library stops at the first error and names schema
// paths, not places in the value, so this package walks the value itself:
// object by property, array by item, allOf by branch, anyOf/oneOf by the
// alternative whose type fits. It checks type, enum, required and
// additionalProperties there (the problems a model makes most, worded
// plainly) and hands every other keyword of a schema node (minimum, pattern,
// not, if/then/else, ...) to the library, one node at a time. So independent
// problems are all reported, each at its real location (`/items/2/name`).
//
// A schema is itself checked, before use, against nexa's meta-schema
// (meta.json), with the same walk: every misshapen keyword is reported at its
// place in the schema.
package schemacheck

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	js "github.com/google/jsonschema-go/jsonschema"
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

// Schema is a checked, resolved schema, safe for concurrent use.
type Schema struct {
	root     *js.Schema
	resolved *js.Resolved
	draft7   bool

	mu      sync.Mutex
	rests   map[*js.Schema]*js.Resolved // node → its remaining keywords, resolved lazily
	wholes  map[*js.Schema]*js.Resolved // node → all its keywords, resolved lazily
	regexps map[string]*regexp.Regexp
}

// ErrExternalRef is wrapped by Compile's error when a schema refers to a
// schema outside itself: nexa never reads files or fetches URLs for a schema.
var ErrExternalRef = errors.New("external schema references are not loaded")

//go:embed meta.json
var metaJSON []byte

// meta is compiled the first time a schema is checked, never at start-up.
var meta struct {
	once   sync.Once
	schema *Schema
	err    error
}

func metaSchema() (*Schema, error) {
	meta.once.Do(func() { meta.schema, meta.err = compile(metaJSON, false) })
	return meta.schema, meta.err
}

// Compile checks raw against the meta-schema and prepares it for Validate.
// An empty raw means {"type":"object"}. The error lists every misshapen
// keyword with its place in the schema.
//
// Compiled schemas are kept (up to cacheSize of them, each at most
// cacheMaxBytes long) and shared: a Schema is immutable and safe for
// concurrent use, and every run of `nexa serve` compiles the same tool
// schemas when it starts.
func Compile(raw []byte) (*Schema, error) { return cached(raw, true) }

// CompileGenerated is Compile for a schema nexa wrote itself: the one the
// compiler generates from a tool's signature or a protocol's fields, or a
// built-in tool's declaration. It skips the meta-schema check, which only
// finds the mistakes of a hand-written schema: the first check of a
// process compiles the meta-schema (~9,000 allocations, 3–5 ms), more than
// a one-step run does besides, and the compiler's and stdlib's tests check
// every schema they produce with Compile. A schema from outside nexa (an
// MCP server's, a json_validate argument) goes through Compile.
func CompileGenerated(raw []byte) (*Schema, error) { return cached(raw, false) }

// cached is Compile, with or without the meta-schema check; an entry kept
// without the check is checked when Compile asks for it.
func cached(raw []byte, checkMeta bool) (*Schema, error) {
	if len(raw) > cacheMaxBytes {
		return compile(raw, checkMeta)
	}
	key := string(raw)
	cache.mu.Lock()
	c, ok := cache.m[key]
	cache.mu.Unlock()
	if ok && (c.metaChecked || !checkMeta) {
		return c.s, nil
	}
	s, err := compile(raw, checkMeta)
	if err != nil {
		return nil, err
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if len(cache.m) >= cacheSize {
		clear(cache.m) // simplest bound: start again
	}
	cache.m[key] = cachedSchema{s: s, metaChecked: checkMeta}
	return s, nil
}

const (
	cacheSize     = 256
	cacheMaxBytes = 64 << 10
)

// cachedSchema is a compiled schema and whether it passed the meta-schema.
type cachedSchema struct {
	s           *Schema
	metaChecked bool
}

var cache = struct {
	mu sync.Mutex
	m  map[string]cachedSchema
}{m: map[string]cachedSchema{}}

func compile(raw []byte, checkMeta bool) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte(`{"type":"object"}`)
	}
	doc, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if checkMeta {
		ms, err := metaSchema()
		if err != nil {
			return nil, fmt.Errorf("meta-schema: %w", err) // a bug in meta.json; tests catch it
		}
		if ps := ms.Validate(doc); len(ps) > 0 {
			return nil, fmt.Errorf("not a valid JSON Schema: %s", Explain(ps, 5))
		}
	}
	root := new(js.Schema)
	if err := json.Unmarshal(raw, root); err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %w", err)
	}
	if ps := badPatterns(root, ""); len(ps) > 0 {
		return nil, fmt.Errorf("not a valid JSON Schema: %s", Explain(ps, 5))
	}
	draft7, ok := rulesOf(root.Schema)
	if !ok {
		return nil, fmt.Errorf("$schema %q is not supported (use draft 2020-12 or draft-07)", root.Schema)
	}
	// The library knows two $schema values and refuses to validate
	// against any other: name the rules that apply in its words.
	root.Schema = draft2020
	if draft7 {
		root.Schema = draft07
	}
	if err := refCycle(root); err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %w", err)
	}
	rs, err := root.Resolve(&js.ResolveOptions{Loader: refuseExternal})
	if err != nil {
		if errors.Is(err, ErrExternalRef) {
			return nil, err
		}
		return nil, fmt.Errorf("not a valid JSON Schema: %s", tidy(err.Error()))
	}
	return &Schema{root: root, resolved: rs, draft7: draft7,
		rests: map[*js.Schema]*js.Resolved{}, wholes: map[*js.Schema]*js.Resolved{}, regexps: map[string]*regexp.Regexp{}}, nil
}

// The $schema values of the two rule sets the library applies.
const (
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
	draft07   = "http://json-schema.org/draft-07/schema#"
)

// rulesOf says which rules apply to a schema whose $schema is id: those of
// draft-07 (draft7 true) or of 2020-12. A draft the library does not know
// is read by the nearest one it does: 2019-09 as 2020-12, 06 and 04 as 07
// (draft-04's boolean exclusiveMinimum then fails the meta-check, at its
// place). ok is false for anything else.
func rulesOf(id string) (draft7, ok bool) {
	u := strings.TrimSuffix(id, "#")
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	switch u {
	case "", "json-schema.org/draft/2020-12/schema", "json-schema.org/draft/2019-09/schema":
		return false, true
	case "json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-04/schema":
		return true, true
	}
	return false, false
}

func refuseExternal(u *url.URL) (*js.Schema, error) {
	return nil, fmt.Errorf("%w (%s)", ErrExternalRef, u)
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
// slices, strings, bools, nil, float64 or json.Number) against the schema,
// in a stable order; none when v is valid.
func (s *Schema) Validate(v any) []Problem {
	v = normalize(v)
	libErr := s.resolved.Validate(v)
	if libErr == nil {
		return nil // the common case costs one pass of the library
	}
	w := walker{s: s}
	w.walk(s.root, v, "", 0)
	if len(w.out) == 0 {
		// The walk and the library disagree (a keyword combination the
		// walk does not take apart): report the library's own reason.
		w.add("", "%s", tidy(libErr.Error()))
	}
	return w.out
}

// normalize turns json.Number into int64 or float64, the number types the
// library classifies as "integer" or "number" (it would see a json.Number as
// a string).
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64() // out of range: ±Inf, still a number
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	// Values built in Go rather than decoded from JSON.
	r := reflect.ValueOf(v)
	switch {
	case r.CanInt():
		return r.Int()
	case r.CanUint():
		return float64(r.Uint())
	case r.CanFloat():
		return r.Float()
	}
	return v
}

// maxDepth bounds the walk on schemas that refer to themselves without
// consuming the value ({"$ref": "#"} at the root).
const maxDepth = 200

type walker struct {
	s   *Schema
	out []Problem
}

func (w *walker) add(at, format string, args ...any) {
	if at == "" {
		at = "/"
	}
	w.out = append(w.out, Problem{At: at, Msg: fmt.Sprintf(format, args...)})
}

// walk appends the problems of v at location at against schema node n.
func (w *walker) walk(n *js.Schema, v any, at string, depth int) {
	if n == nil {
		return
	}
	if depth > maxDepth {
		w.add(at, "schema nests deeper than %d levels here", maxDepth)
		return
	}
	if n.UnevaluatedProperties != nil || n.UnevaluatedItems != nil || n.DynamicRef != "" {
		// These keywords depend on what the other keywords evaluated: let
		// the library judge the node whole and report its first reason.
		w.rest(n, v, at, true)
		return
	}
	if n.Ref != "" {
		target := w.s.local(n.Ref)
		if target == nil {
			w.rest(n, v, at, true)
			return
		}
		w.walk(target, v, at, depth+1)
		if w.s.draft7 {
			return // draft-07 ignores the keywords beside $ref
		}
	}
	if t := types(n); len(t) > 0 && !typeFits(v, t) {
		// Nothing below a wrong type is worth reading.
		w.add(at, "got %s, want %s", typeOf(v), strings.Join(t, " or "))
		return
	}
	if n.Enum != nil && !slices.ContainsFunc(n.Enum, func(e any) bool { return js.Equal(normalize(e), v) }) {
		w.add(at, "value must be one of %s", quoteAll(n.Enum))
	}
	w.bounds(n, v, at)
	switch x := v.(type) {
	case map[string]any:
		w.object(n, x, at, depth)
	case []any:
		w.array(n, x, at, depth)
	}
	for _, b := range n.AllOf {
		w.walk(b, v, at, depth+1)
	}
	if n.AnyOf != nil {
		w.alternatives(n.AnyOf, "anyOf", v, at, depth)
	}
	if n.OneOf != nil {
		w.alternatives(n.OneOf, "oneOf", v, at, depth)
	}
	w.rest(n, v, at, false)
}

// bounds checks minimum, maximum and their exclusive forms, worded with
// the numbers as the user wrote them.
func (w *walker) bounds(n *js.Schema, v any, at string) {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return
	}
	num := func(b float64) string { return strconv.FormatFloat(b, 'g', -1, 64) }
	got := fmt.Sprint(v)
	if x, ok := v.(float64); ok {
		got = num(x)
	}
	if b := n.Minimum; b != nil && f < *b {
		w.add(at, "got %s, want at least %s", got, num(*b))
	}
	if b := n.ExclusiveMinimum; b != nil && f <= *b {
		w.add(at, "got %s, want more than %s", got, num(*b))
	}
	if b := n.Maximum; b != nil && f > *b {
		w.add(at, "got %s, want at most %s", got, num(*b))
	}
	if b := n.ExclusiveMaximum; b != nil && f >= *b {
		w.add(at, "got %s, want less than %s", got, num(*b))
	}
}

func (w *walker) object(n *js.Schema, m map[string]any, at string, depth int) {
	for _, r := range n.Required {
		if _, ok := m[r]; !ok {
			w.add(at, "missing property '%s'", r)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Problems of the object itself come first, then those of its
	// properties in key order.
	var extra []string
	var walks []func()
	for _, k := range keys {
		loc := at + "/" + escape(k)
		matched := false
		if p, ok := n.Properties[k]; ok {
			matched = true
			walks = append(walks, func() { w.walk(p, m[k], loc, depth+1) })
		}
		for _, re := range sortedKeys(n.PatternProperties) {
			if p := n.PatternProperties[re]; w.s.regexp(re).MatchString(k) {
				matched = true
				walks = append(walks, func() { w.walk(p, m[k], loc, depth+1) })
			}
		}
		switch {
		case matched || n.AdditionalProperties == nil:
		case isFalse(n.AdditionalProperties):
			extra = append(extra, k)
		default:
			walks = append(walks, func() { w.walk(n.AdditionalProperties, m[k], loc, depth+1) })
		}
	}
	if len(extra) == 1 {
		w.add(at, "additional property '%s' is not allowed", extra[0])
	} else if len(extra) > 1 {
		w.add(at, "additional properties %s are not allowed", quoteNames(extra))
	}
	for _, f := range walks {
		f()
	}
}

func (w *walker) array(n *js.Schema, a []any, at string, depth int) {
	prefix := n.PrefixItems
	rest := n.Items
	if w.s.draft7 && n.ItemsArray != nil {
		prefix, rest = n.ItemsArray, n.AdditionalItems
	}
	var extra []int
	for i, e := range a {
		loc := at + "/" + strconv.Itoa(i)
		switch {
		case i < len(prefix):
			w.walk(prefix[i], e, loc, depth+1)
		case rest == nil:
		case isFalse(rest):
			extra = append(extra, i)
		default:
			w.walk(rest, e, loc, depth+1)
		}
	}
	if len(extra) > 0 {
		w.add(at, "got %d items, at most %d allowed", len(a), len(prefix))
	}
}

// alternatives reports the problems of v against anyOf (kw "anyOf": at
// least one must match) or oneOf (exactly one). When none matches and only
// one alternative admits v's type, that alternative's problems are the
// useful ones (an optional object is anyOf [object, null]): they are
// reported at their own locations.
func (w *walker) alternatives(alts []*js.Schema, kw string, v any, at string, depth int) {
	var matched []int
	var fits []int
	var fitProblems []Problem
	for i, a := range alts {
		sub := walker{s: w.s}
		sub.walk(a, v, at, depth+1)
		if len(sub.out) == 0 {
			matched = append(matched, i)
			continue
		}
		if w.s.typeAdmits(a, v) {
			fits = append(fits, i)
			fitProblems = sub.out
		}
	}
	switch {
	case len(matched) == 1 || (len(matched) > 1 && kw == "anyOf"):
		return
	case len(matched) > 1:
		w.add(at, "matches %d of the oneOf alternatives (%s), want exactly one", len(matched), joinInts(matched))
	case len(fits) == 1:
		w.out = append(w.out, fitProblems...)
	case len(fits) == 0:
		var want []string
		for _, a := range alts {
			want = append(want, w.s.typeNames(a)...)
		}
		slices.Sort(want)
		want = slices.Compact(want)
		if len(want) > 0 {
			w.add(at, "got %s, want %s", typeOf(v), strings.Join(want, " or "))
		} else {
			w.add(at, "matches none of the %d %s alternatives", len(alts), kw)
		}
	default:
		w.add(at, "matches none of the %d %s alternatives (%s fit its type)", len(alts), kw, joinInts(fits))
	}
}

// rest checks v against the keywords of n that walk does not take apart
// (numbers, lengths, pattern, not, if/then/else, contains, ...) with the
// library, and reports its first reason at location at. With whole set, n is
// judged with all its keywords.
func (w *walker) rest(n *js.Schema, v any, at string, whole bool) {
	rs, err := w.s.restOf(n, whole)
	if err != nil {
		w.add(at, "%s", tidy(err.Error()))
		return
	}
	if rs == nil {
		return
	}
	if err := rs.Validate(v); err != nil {
		w.add(at, "%s", tidy(err.Error()))
	}
}

// restOf builds (once per node) a schema holding n's remaining keywords,
// resolved on its own. References inside it keep working because a copy of
// the root schema is placed under $defs and every local reference is
// redirected there.
func (s *Schema) restOf(n *js.Schema, whole bool) (*js.Resolved, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cache := s.rests
	if whole {
		cache = s.wholes
	}
	if rs, ok := cache[n]; ok {
		return rs, nil
	}
	c := *n
	if !whole {
		c.Type, c.Types, c.Enum, c.Required = "", nil, nil, nil
		c.Properties, c.PatternProperties, c.AdditionalProperties = nil, nil, nil
		c.PrefixItems, c.Items, c.ItemsArray, c.AdditionalItems = nil, nil, nil, nil
		c.AllOf, c.AnyOf, c.OneOf, c.Ref = nil, nil, nil, ""
		c.Minimum, c.Maximum, c.ExclusiveMinimum, c.ExclusiveMaximum = nil, nil, nil, nil
	}
	c.ID, c.Schema, c.Anchor, c.DynamicAnchor, c.Defs, c.Definitions = "", "", "", "", nil, nil
	c.Title, c.Description, c.Comment, c.Default, c.Examples = "", "", "", nil, nil
	c.Extra, c.PropertyOrder = nil, nil
	if reflect.ValueOf(c).IsZero() {
		cache[n] = nil
		return nil, nil
	}
	wrapper := c.CloneSchemas()
	wrapper.Schema = s.root.Schema
	if hasRef(wrapper) {
		rootCopy := s.root.CloneSchemas()
		rootCopy.ID, rootCopy.Schema = "", ""
		redirect(rootCopy)
		redirect(wrapper)
		wrapper.Defs = map[string]*js.Schema{rootDef: rootCopy}
	}
	rs, err := wrapper.Resolve(&js.ResolveOptions{Loader: refuseExternal})
	if err != nil {
		return nil, err
	}
	cache[n] = rs
	return rs, nil
}

const rootDef = "nexa-root"

// local finds the node a local reference ("#", "#/$defs/x",
// "#/definitions/x", "#/properties/x", ...) points to, or nil.
func (s *Schema) local(ref string) *js.Schema {
	if ref == "#" {
		return s.root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	n := s.root
	parts := strings.Split(ref[2:], "/")
	for i := 0; i < len(parts); i++ {
		kw := unescape(parts[i])
		var m map[string]*js.Schema
		switch kw {
		case "$defs":
			m = n.Defs
		case "definitions":
			m = n.Definitions
		case "properties":
			m = n.Properties
		case "items":
			if i+1 == len(parts) {
				return n.Items
			}
		case "additionalProperties":
			n = n.AdditionalProperties
			if n == nil {
				return nil
			}
			continue
		}
		if m == nil || i+1 >= len(parts) {
			return nil
		}
		i++
		n = m[unescape(parts[i])]
		if n == nil {
			return nil
		}
	}
	return n
}

func (s *Schema) regexp(src string) *regexp.Regexp {
	s.mu.Lock()
	defer s.mu.Unlock()
	re, ok := s.regexps[src]
	if !ok {
		re = regexp.MustCompile(src) // Resolve compiled it already
		s.regexps[src] = re
	}
	return re
}

// typeNames lists the types an alternative declares, following its $ref.
func (s *Schema) typeNames(n *js.Schema) []string {
	for i := 0; n != nil && i < maxDepth; i++ {
		if t := types(n); len(t) > 0 {
			return t
		}
		if n.Ref == "" {
			return nil
		}
		n = s.local(n.Ref)
	}
	return nil
}

// typeAdmits says whether the alternative n declares no type or one v has.
func (s *Schema) typeAdmits(n *js.Schema, v any) bool {
	t := s.typeNames(n)
	return len(t) == 0 || typeFits(v, t)
}

func types(n *js.Schema) []string {
	if n.Type != "" {
		return []string{n.Type}
	}
	return n.Types
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		if _, f := math.Modf(x); f == 0 {
			return "integer"
		}
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func typeFits(v any, want []string) bool {
	got := typeOf(v)
	return slices.Contains(want, got) || got == "integer" && slices.Contains(want, "number")
}

func isFalse(n *js.Schema) bool {
	if n == nil || n.Not == nil || !reflect.ValueOf(*n.Not).IsZero() {
		return false
	}
	c := *n
	c.Not = nil
	return reflect.ValueOf(c).IsZero()
}

// badPatterns reports each pattern and patternProperties key of the tree
// under n that is not a regular expression, at its place in the schema.
func badPatterns(n *js.Schema, at string) []Problem {
	var out []Problem
	if n.Pattern != "" {
		if _, err := regexp.Compile(n.Pattern); err != nil {
			out = append(out, Problem{At: at + "/pattern", Msg: "not a valid regular expression: " + reason(err)})
		}
	}
	for _, k := range sortedKeys(n.PatternProperties) {
		if _, err := regexp.Compile(k); err != nil {
			out = append(out, Problem{At: at + "/patternProperties/" + escape(k), Msg: "key is not a valid regular expression: " + reason(err)})
		}
	}
	eachChild(n, func(kw string, c *js.Schema) { out = append(out, badPatterns(c, at+"/"+kw)...) })
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// reason drops the "error parsing regexp: " the regexp package puts first.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

func sortedKeys(m map[string]*js.Schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// refCycle finds references that lead back to where they started without
// stepping into the value ({"$ref": "#"} at the root, or two definitions
// naming each other): validating against such a schema never ends (the
// library would recurse until the stack overflows), so it is refused.
// Edges are the keywords that apply to the same value: $ref, allOf, anyOf,
// oneOf, not, if, then, else, dependentSchemas.
func refCycle(root *js.Schema) error {
	paths := map[*js.Schema]string{}
	anchors := map[string]*js.Schema{}
	var collect func(n *js.Schema, at string)
	collect = func(n *js.Schema, at string) {
		if _, seen := paths[n]; seen {
			return
		}
		paths[n] = at
		if n.Anchor != "" {
			anchors[n.Anchor] = n
		}
		eachChild(n, func(kw string, c *js.Schema) { collect(c, at+"/"+kw) })
	}
	collect(root, "")
	tmp := &Schema{root: root}
	next := func(n *js.Schema) []*js.Schema {
		var out []*js.Schema
		if n.Ref != "" {
			t := tmp.local(n.Ref)
			if t == nil && strings.HasPrefix(n.Ref, "#") {
				t = anchors[n.Ref[1:]]
			}
			if t != nil {
				out = append(out, t)
			}
		}
		out = append(out, n.AllOf...)
		out = append(out, n.AnyOf...)
		out = append(out, n.OneOf...)
		for _, c := range []*js.Schema{n.Not, n.If, n.Then, n.Else} {
			if c != nil {
				out = append(out, c)
			}
		}
		for _, k := range sortedKeys(n.DependentSchemas) {
			out = append(out, n.DependentSchemas[k])
		}
		return out
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[*js.Schema]int{}
	var visit func(n *js.Schema) *js.Schema
	visit = func(n *js.Schema) *js.Schema {
		state[n] = open
		for _, m := range next(n) {
			switch state[m] {
			case open:
				return m
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		state[n] = done
		return nil
	}
	nodes := make([]*js.Schema, 0, len(paths))
	for n := range paths {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return paths[nodes[i]] < paths[nodes[j]] })
	for _, n := range nodes {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				at := paths[c]
				if at == "" {
					at = "/"
				}
				return fmt.Errorf("at %s: the schema refers back to itself here without stepping into the value, so validation would never end", at)
			}
		}
	}
	return nil
}

// eachChild calls f on each direct subschema of n with the JSON Pointer
// segments that lead to it.
func eachChild(n *js.Schema, f func(kw string, c *js.Schema)) {
	for _, c := range []struct {
		kw string
		n  *js.Schema
	}{{"items", n.Items}, {"additionalItems", n.AdditionalItems}, {"unevaluatedItems", n.UnevaluatedItems},
		{"contains", n.Contains}, {"additionalProperties", n.AdditionalProperties}, {"propertyNames", n.PropertyNames},
		{"unevaluatedProperties", n.UnevaluatedProperties}, {"not", n.Not}, {"if", n.If}, {"then", n.Then},
		{"else", n.Else}, {"contentSchema", n.ContentSchema}} {
		if c.n != nil {
			f(c.kw, c.n)
		}
	}
	for _, l := range []struct {
		kw string
		l  []*js.Schema
	}{{"prefixItems", n.PrefixItems}, {"items", n.ItemsArray}, {"allOf", n.AllOf}, {"anyOf", n.AnyOf}, {"oneOf", n.OneOf}} {
		for i, c := range l.l {
			f(l.kw+"/"+strconv.Itoa(i), c)
		}
	}
	for _, m := range []struct {
		kw string
		m  map[string]*js.Schema
	}{{"$defs", n.Defs}, {"definitions", n.Definitions}, {"properties", n.Properties},
		{"patternProperties", n.PatternProperties}, {"dependentSchemas", n.DependentSchemas}, {"dependencies", n.DependencySchemas}} {
		for _, k := range sortedKeys(m.m) {
			f(m.kw+"/"+escape(k), m.m[k])
		}
	}
}

// children calls f on each direct subschema of n.
func children(n *js.Schema, f func(*js.Schema)) {
	eachChild(n, func(_ string, c *js.Schema) { f(c) })
}

func hasRef(n *js.Schema) bool {
	found := n.Ref != "" || n.DynamicRef != ""
	children(n, func(c *js.Schema) { found = found || hasRef(c) })
	return found
}

// redirect points the local references of n's tree at the root copy.
func redirect(n *js.Schema) {
	if n.Ref == "#" || strings.HasPrefix(n.Ref, "#/") {
		n.Ref = "#/$defs/" + rootDef + n.Ref[1:]
	}
	children(n, redirect)
}

// tidying holds the patterns tidy uses, compiled on first use so that
// start-up pays nothing for them.
var tidying = sync.OnceValue(func() (t struct{ libPrefix, patternMsg, ratio, trailingZeros *regexp.Regexp }) {
	// the "validating <schema path>: " the library puts before each reason
	t.libPrefix = regexp.MustCompile(`validating [^:]*: `)
	// its reason for a string that does not match its pattern
	t.patternMsg = regexp.MustCompile(`^pattern: (.*) does not match regular expression (.*)$`)
	// the n/1 form it gives whole numbers
	t.ratio = regexp.MustCompile(`\b(\d+)/1\b`)
	// the "%f" form it gives bounds (1.000000)
	t.trailingZeros = regexp.MustCompile(`\b(\d+)\.0+\b`)
	return t
})

// tidy keeps the library's reason and drops its schema path bookkeeping.
func tidy(msg string) string {
	t := tidying()
	msg = t.libPrefix.ReplaceAllString(msg, "")
	msg = strings.TrimPrefix(msg, "jsonschema: ")
	msg = strings.TrimPrefix(msg, "jsonschema.Schema: ")
	msg = strings.TrimPrefix(msg, "<anonymous schema>: ")
	if m := t.patternMsg.FindStringSubmatch(msg); m != nil {
		msg = m[1] + " does not match pattern " + m[2]
	}
	msg = strings.ReplaceAll(msg, "not: validated against <anonymous schema>", "matches the schema under \"not\", which it must not")
	msg = t.ratio.ReplaceAllString(msg, "$1")
	return t.trailingZeros.ReplaceAllString(strings.TrimSpace(msg), "$1")
}

func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func unescape(k string) string {
	if u, err := url.PathUnescape(k); err == nil {
		k = u
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
}

func quoteAll(vs []any) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		out[i] = string(b)
	}
	return strings.Join(out, ", ")
}

func quoteNames(ns []string) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = "'" + n + "'"
	}
	return strings.Join(out, ", ")
}

func joinInts(is []int) string {
	out := make([]string, len(is))
	for i, n := range is {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, ", ")
}

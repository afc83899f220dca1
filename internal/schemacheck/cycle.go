package schemacheck

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// refCycle returns the place in the schema where keywords that apply to the
// same value ($ref, allOf, anyOf, oneOf, not, if/then/else, dependent
// schemas) lead back to where they started ({"$ref": "#"}, two definitions
// naming each other), or "". Such a schema means nothing: the library stops
// the loop when a value reaches it, failing the value, or passing it when
// the loop is under "not". Only what the root reaches is looked at.
func refCycle(root *jsonschema.Schema) string {
	var nodes []*jsonschema.Schema
	seen := map[*jsonschema.Schema]bool{}
	var collect func(s *jsonschema.Schema)
	collect = func(s *jsonschema.Schema) {
		if !seen[s] {
			seen[s] = true
			nodes = append(nodes, s)
			for _, c := range append(sameValue(s), inside(s)...) {
				collect(c)
			}
		}
	}
	collect(root)
	slices.SortFunc(nodes, func(a, b *jsonschema.Schema) int { return strings.Compare(place(a), place(b)) })

	const open, done = 1, 2
	state := map[*jsonschema.Schema]int{}
	var visit func(s *jsonschema.Schema) *jsonschema.Schema
	visit = func(s *jsonschema.Schema) *jsonschema.Schema {
		state[s] = open
		for _, next := range sameValue(s) {
			if state[next] == open {
				return next
			}
			if state[next] == 0 {
				if loop := visit(next); loop != nil {
					return loop
				}
			}
		}
		state[s] = done
		return nil
	}
	for _, s := range nodes {
		if state[s] == 0 {
			if loop := visit(s); loop != nil {
				return place(loop)
			}
		}
	}
	return ""
}

// place is the JSON Pointer of a compiled node in the schema nexa was
// given ("/" for its root), or the library's name of a node elsewhere.
func place(s *jsonschema.Schema) string {
	frag, ok := strings.CutPrefix(s.Location, rootURL+"#")
	if !ok {
		return s.Location
	}
	if p, err := url.PathUnescape(frag); err == nil {
		frag = p
	}
	if frag == "" {
		return "/"
	}
	return frag
}

// sameValue lists the subschemas of s that apply to the value s applies to.
func sameValue(s *jsonschema.Schema) []*jsonschema.Schema {
	out := nonNil(s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else)
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = slices.Concat(out, s.AllOf, s.AnyOf, s.OneOf)
	for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		out = append(out, s.DependentSchemas[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		if d, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return out
}

// inside lists the other subschemas of s: those of parts of the value, of
// its property names, of its decoded content.
func inside(s *jsonschema.Schema) []*jsonschema.Schema {
	out := nonNil(s.PropertyNames, s.Items2020, s.Contains, s.UnevaluatedProperties, s.UnevaluatedItems, s.ContentSchema)
	out = slices.Concat(out, slices.Collect(maps.Values(s.Properties)), slices.Collect(maps.Values(s.PatternProperties)), s.PrefixItems)
	for _, x := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch c := x.(type) {
		case *jsonschema.Schema:
			out = append(out, c)
		case []*jsonschema.Schema:
			out = append(out, c...)
		}
	}
	return out
}

func nonNil(ss ...*jsonschema.Schema) []*jsonschema.Schema {
	return slices.DeleteFunc(ss, func(s *jsonschema.Schema) bool { return s == nil })
}

package provider

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// JSONInstruction asks a model for a bare JSON object. It is sent as a
// system message wherever the protocol has no stronger way to ask (OpenAI's
// json_object mode, which also requires the word JSON in some message; an
// Anthropic request without a schema), and the runtime checks the answer as
// it does for any provider.
const JSONInstruction = "Respond with a single JSON object and nothing else: no text before or after it and no Markdown code fence."

// jsonInstruction is JSONInstruction, followed, when the answer implements
// a protocol, by the protocol's schema: without it a model cannot know the
// fields.
func jsonInstruction(out *OutputSchema) string {
	if out == nil {
		return JSONInstruction
	}
	schema := []byte(out.Schema)
	var buf bytes.Buffer
	if json.Compact(&buf, schema) == nil {
		schema = buf.Bytes()
	}
	return JSONInstruction + " The object must implement protocol " + out.Name +
		", whose JSON Schema is:\n" + string(schema)
}

// schemaName makes a protocol name acceptable as a response_format name,
// which OpenAI limits to 64 letters, digits, underscores and dashes.
func schemaName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "answer"
	}
	return s
}

// strictKeywords are the schema keywords OpenAI's strict mode accepts (the
// conservative subset; a schema using any other keyword is sent with
// strict false rather than refused).
var strictKeywords = map[string]bool{
	"type": true, "description": true, "title": true, "enum": true, "const": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "anyOf": true, "$defs": true, "definitions": true, "$ref": true,
}

// strictSchema reports whether schema satisfies the rules of OpenAI's
// strict structured outputs: the root is an object schema; every object
// lists all its properties in required and sets additionalProperties to
// false; every array has items; only strictKeywords appear; and every
// schema says what it is (type, anyOf, enum, const or $ref) — an "any"
// schema ({}) is not allowed. Protocols compiled from .nx files satisfy
// them unless they use dict or any.
func strictSchema(schema json.RawMessage) bool {
	var root map[string]any
	if json.Unmarshal(schema, &root) != nil || root == nil || root["type"] != "object" {
		return false
	}
	return strictNode(root)
}

// strictNode checks one schema and everything below it.
func strictNode(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return false
	}
	for k := range m {
		if !strictKeywords[k] {
			return false
		}
	}
	_, hasAnyOf := m["anyOf"]
	_, hasEnum := m["enum"]
	_, hasConst := m["const"]
	_, hasRef := m["$ref"]
	types, ok := schemaTypes(m["type"])
	if !ok || (len(types) == 0 && !hasAnyOf && !hasEnum && !hasConst && !hasRef) {
		return false
	}
	if slices.Contains(types, "object") {
		if m["additionalProperties"] != false {
			return false
		}
		props, _ := m["properties"].(map[string]any)
		required, _ := m["required"].([]any)
		if len(required) != len(props) {
			return false
		}
		for _, r := range required {
			name, ok := r.(string)
			if _, listed := props[name]; !ok || !listed {
				return false
			}
		}
		for _, p := range props {
			if !strictNode(p) {
				return false
			}
		}
	} else if _, ok := m["properties"]; ok {
		return false
	}
	if slices.Contains(types, "array") {
		if items, ok := m["items"]; !ok || !strictNode(items) {
			return false
		}
	}
	if alts, ok := m["anyOf"]; ok {
		list, ok := alts.([]any)
		if !ok || len(list) == 0 {
			return false
		}
		for _, a := range list {
			if !strictNode(a) {
				return false
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := m[k]; ok {
			dm, ok := defs.(map[string]any)
			if !ok {
				return false
			}
			for _, d := range dm {
				if !strictNode(d) {
					return false
				}
			}
		}
	}
	return true
}

// schemaTypes reads a "type" keyword: a name or a list of names; absent is
// an empty list. ok is false for anything else.
func schemaTypes(v any) (types []string, ok bool) {
	switch t := v.(type) {
	case nil:
		return nil, true
	case string:
		return []string{t}, true
	case []any:
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			types = append(types, s)
		}
		return types, true
	}
	return nil, false
}

package ir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Param is one parameter of a tool, as declared. The compiler fills it
// from the tool's signature and generates Tool.Parameters from the list
// (ParametersSchema); executors read names and defaults here instead of
// decoding the schema again.
type Param struct {
	// Name is the parameter's name, the key of its argument.
	Name string
	// Type is the value's type. It is nil for tools whose schema is
	// declared as JSON Schema rather than generated (built-in and MCP
	// tools): their Tool.Parameters is the declaration itself.
	Type *Type
	// Description is what the model reads about the parameter; it
	// replaces a description of Type.
	Description string
	// Required is true when the model must send the argument: the type
	// does not allow null and there is no default.
	Required bool
	// Default is the JSON of the declared default (compact; canonical when
	// the compiler wrote it), nil when there is none.
	Default json.RawMessage
}

// TypeKind says what a Type is.
type TypeKind string

// The kinds of types: the JSON types, any value, a union of
// alternatives, and the two forms of an object (a map with values of one
// type, a record with fixed fields).
const (
	KindAny     TypeKind = "any"
	KindString  TypeKind = "string"
	KindInteger TypeKind = "integer"
	KindNumber  TypeKind = "number"
	KindBoolean TypeKind = "boolean"
	KindNull    TypeKind = "null"
	KindArray   TypeKind = "array"
	KindMap     TypeKind = "map"
	KindRecord  TypeKind = "record"
	KindUnion   TypeKind = "union"
)

// Type is the type of a parameter, list element, map value or record
// field, structured so that executors and tools can read it; Schema gives
// its JSON Schema. The encoding is part of the program hash: it must stay
// byte for byte what it is (see Object).
type Type struct {
	Kind TypeKind
	// Nullable allows null besides the kind's values (`"type": [K,
	// "null"]`); only kinds with a JSON type (all but any and union) use
	// it: a nullable union lists null among Alts.
	Nullable bool
	// Items is the element type of an array; nil: elements of any type.
	Items *Type
	// Values is the value type of a map; nil: values of any type.
	Values *Type
	// Fields are the fields of a record, all required, no others allowed.
	Fields []Field
	// Alts are the alternatives of a union (anyOf).
	Alts []*Type
	// Description is the constraint of a semantic type (`type Email = str
	// @ "…"`), part of the schema.
	Description string
}

// Field is one field of a record type.
type Field struct {
	Name string
	Type *Type
}

// JSONType is the JSON Schema "type" of a non-nullable kind ("object" for
// maps and records), or "" for any, union and nullable types, which have
// no single JSON type.
func (t *Type) JSONType() string {
	if t == nil || t.Nullable {
		return ""
	}
	return t.Kind.jsonType()
}

// jsonType is the JSON Schema "type" of values of kind k ("object" for
// maps and records), or "" for any and union.
func (k TypeKind) jsonType() string {
	switch k {
	case KindAny, KindUnion:
		return ""
	case KindMap, KindRecord:
		return "object"
	}
	return string(k)
}

// Schema is the JSON Schema of the type as an ordered Object: "type"
// first (or "anyOf"), then what the kind needs, then "description".
func (t *Type) Schema() *Object {
	o := NewObject()
	if t == nil {
		return o
	}
	switch t.Kind {
	case KindAny:
	case KindUnion:
		alts := make([]any, len(t.Alts))
		for i, a := range t.Alts {
			alts[i] = a.Schema()
		}
		o.Set("anyOf", alts)
	default:
		jt := t.Kind.jsonType()
		if t.Nullable {
			o.Set("type", []string{jt, "null"})
		} else {
			o.Set("type", jt)
		}
		switch t.Kind {
		case KindArray:
			if t.Items != nil {
				o.Set("items", t.Items.Schema())
			}
		case KindMap:
			if t.Values != nil {
				o.Set("additionalProperties", t.Values.Schema())
			}
		case KindRecord:
			props := NewObject()
			required := make([]string, len(t.Fields))
			for i, f := range t.Fields {
				props.Set(f.Name, f.Type.Schema())
				required[i] = f.Name
			}
			o.Set("properties", props).Set("required", required).Set("additionalProperties", false)
		}
	}
	if t.Description != "" {
		o.Set("description", t.Description)
	}
	return o
}

// ParametersSchema generates the JSON Schema of a tool's arguments object
// from its parameters: each parameter's type with its description and
// default, the required ones listed, no other arguments allowed. It is the
// one generator of Tool.Parameters for declared tools, and its bytes are
// part of the program hash.
func ParametersSchema(params []Param) json.RawMessage {
	props := NewObject()
	required := []string{}
	for _, p := range params {
		s := p.Type.Schema().Set("description", p.Description)
		if p.Default != nil {
			s.Set("default", p.Default)
		}
		props.Set(p.Name, s)
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return CanonicalJSON(NewObject().Set("type", "object").Set("properties", props).
		Set("required", required).Set("additionalProperties", false))
}

// ParamsFromSchema lists the parameters of a tool declared by a JSON
// Schema of its arguments (built-in and MCP tools), in the order of its
// properties, with their description, default and whether they are
// required; their Type is nil. It is read once, when the tool enters the
// IR, so that executors never decode schemas.
func ParamsFromSchema(schema json.RawMessage) ([]Param, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, fmt.Errorf("decode parameters schema: %w", err)
	}
	if len(top.Properties) == 0 || bytes.Equal(bytes.TrimSpace(top.Properties), []byte("null")) {
		return nil, nil
	}
	required := map[string]bool{}
	for _, r := range top.Required {
		required[r] = true
	}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("decode parameters schema properties: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("parameters schema properties is not an object")
	}
	var params []Param
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("decode parameters schema properties: %w", err)
		}
		name, _ := tok.(string)
		var prop struct {
			Description string          `json:"description"`
			Default     json.RawMessage `json:"default"`
		}
		if err := dec.Decode(&prop); err != nil {
			return nil, fmt.Errorf("decode parameter %q schema: %w", name, err)
		}
		p := Param{Name: name, Description: prop.Description, Required: required[name]}
		if prop.Default != nil {
			var b bytes.Buffer
			if err := json.Compact(&b, prop.Default); err != nil {
				return nil, fmt.Errorf("decode default of parameter %q: %w", name, err)
			}
			p.Default = b.Bytes()
		}
		params = append(params, p)
	}
	return params, nil
}

// FillDefaults gives every parameter that args lacks the value it takes
// when left out: its default (as a json.RawMessage), or null for an
// optional parameter without one, so that every parameter of a tool body
// is bound. Required parameters are left alone (validation reports them).
// The runtime calls it once per call, before the arguments are saved, so
// executors find every argument in place.
func (t *Tool) FillDefaults(args map[string]any) {
	for _, p := range t.Params {
		if _, given := args[p.Name]; given {
			continue
		}
		switch {
		case p.Default != nil:
			args[p.Name] = p.Default
		case !p.Required:
			args[p.Name] = nil
		}
	}
}

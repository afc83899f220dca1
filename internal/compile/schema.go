package compile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
)

// The primitive types, shared by every use: a resolved type may be shared
// (these, protocol types), so clone one (cloneType) before changing it.
var (
	typeString  = &ir.Type{Kind: ir.KindString}
	typeInteger = &ir.Type{Kind: ir.KindInteger}
	typeNumber  = &ir.Type{Kind: ir.KindNumber}
	typeBoolean = &ir.Type{Kind: ir.KindBoolean}
	typeNull    = &ir.Type{Kind: ir.KindNull}
	typeAny     = &ir.Type{Kind: ir.KindAny}
)

// cloneType returns a copy of t that can be changed without changing t.
func cloneType(t *ir.Type) *ir.Type {
	c := *t
	return &c
}

// typeCtx names what is being typed ("parameter q of tool search"), for
// messages; it is only joined into text when a message needs it.
type typeCtx [4]string

func (t typeCtx) String() string { return t[0] + t[1] + t[2] + t[3] }

// typeInfo is a resolved type and whether null is allowed besides it.
type typeInfo struct {
	typ      *ir.Type
	optional bool
}

// builtinTypes are the type names of docs/reference/language.md#parameters-and-schemas and their 2.x
// aliases: the type of each scalar type, or nil for the generic ones
// (list, dict, Option, Result), whose types resolveTerm builds from their
// arguments. Resolution, the "takes no type arguments" check and the
// suggestions for an unknown name all read this one table.
var builtinTypes = map[string]*ir.Type{
	"string": typeString, "str": typeString,
	"int": typeInteger, "integer": typeInteger,
	"float": typeNumber, "number": typeNumber,
	"bool": typeBoolean, "boolean": typeBoolean,
	"any": typeAny, "unit": typeNull,
	"list": nil, "dict": nil, "Option": nil, "Optional": nil, "Result": nil,
}

// typeNames lists every type name a program may use, for suggestions.
func (c *compiler) typeNames() []string {
	names := slices.Collect(maps.Keys(builtinTypes))
	names = slices.AppendSeq(names, maps.Keys(c.protocols))
	names = slices.AppendSeq(names, maps.Keys(c.aliases))
	slices.Sort(names)
	return names
}

// resolveType maps a type expression to an IR type, reporting unknown
// names. ctx names what is being typed, for messages.
func (c *compiler) resolveType(t *lang.TypeExpr, ctx typeCtx) typeInfo {
	if t == nil || len(t.Alts) == 0 {
		return typeInfo{typ: typeString}
	}
	if len(t.Alts) == 1 {
		return c.resolveTerm(t.Alts[0], ctx)
	}
	alts := make([]typeInfo, 0, len(t.Alts))
	optional := false
	for _, term := range t.Alts {
		ti := c.resolveTerm(term, ctx)
		if ti.optional {
			optional = true
		}
		alts = append(alts, ti)
	}
	if len(alts) == 1 {
		return alts[0]
	}
	types := make([]*ir.Type, 0, len(alts))
	for _, a := range alts {
		types = append(types, a.typ)
	}
	return typeInfo{typ: &ir.Type{Kind: ir.KindUnion, Alts: types}, optional: optional}
}

func (c *compiler) resolveTerm(t *lang.TypeTerm, ctx typeCtx) typeInfo {
	name := t.Name
	args := t.TypeArgs()
	pos := t.Pos
	if t.Quoted != nil {
		// a quoted type name counts as that type: "int", "list[str]"
		inner, ok := c.parseQuotedType(t.Quoted)
		if !ok {
			return typeInfo{typ: typeString}
		}
		ti := c.resolveType(inner, ctx)
		if t.Optional {
			ti.optional = true
		}
		return ti
	}
	var ti typeInfo
	scalar := builtinTypes[name]
	switch {
	case scalar != nil:
		ti.typ = scalar
		if len(args) > 0 {
			c.errorAt(pos, lang.CodeUnknownType, "only list, dict, Option and Result take type arguments",
				"type `%s` takes no type arguments", name)
		}
	case name == "list":
		ti.typ = &ir.Type{Kind: ir.KindArray}
		if len(args) > 1 {
			c.errorAt(pos, lang.CodeUnknownType, "write list[T]", "list takes one type argument, found %d", len(args))
		}
		if len(args) >= 1 {
			item := c.resolveType(args[0], ctx)
			ti.typ.Items = nullable(item)
		}
	case name == "dict":
		ti.typ = &ir.Type{Kind: ir.KindMap}
		switch len(args) {
		case 0:
		case 2:
			k := c.resolveType(args[0], ctx)
			if k.typ.JSONType() != "string" {
				c.errorAt(args[0].Pos, lang.CodeUnknownType, "JSON object keys are strings: write dict[str, V]",
					"dictionary keys must be strings, found %s", args[0].String())
			}
			v := c.resolveType(args[1], ctx)
			ti.typ.Values = nullable(v)
		case 1:
			v := c.resolveType(args[0], ctx)
			ti.typ.Values = nullable(v)
		default:
			c.errorAt(pos, lang.CodeUnknownType, "write dict or dict[K, V]", "dict takes two type arguments, found %d", len(args))
		}
	case name == "Result":
		// Result[T, E] (2.x): the value is either a T or an E
		if len(args) != 2 {
			c.errorAt(pos, lang.CodeUnknownType, "write Result[T, E]", "Result takes two type arguments, found %d", len(args))
			ti.typ = typeString
			break
		}
		ok := c.resolveType(args[0], ctx)
		bad := c.resolveType(args[1], ctx)
		ti.typ = &ir.Type{Kind: ir.KindUnion, Alts: []*ir.Type{nullable(ok), nullable(bad)}}
	case name == "Option" || name == "Optional":
		if len(args) != 1 {
			c.errorAt(pos, lang.CodeUnknownType, "write Option[T]", "%s takes one type argument, found %d", name, len(args))
			ti.typ = typeString
		} else {
			ti = c.resolveType(args[0], ctx)
		}
		ti.optional = true
	default:
		if p, ok := c.protocols[name]; ok {
			ti.typ = c.protocolType(p, pos)
		} else if a, ok := c.aliases[name]; ok {
			ti = c.aliasType(a, pos, ctx)
		} else {
			hint := "types are string, int, float, bool, list[T], dict[K, V], T?, A | B, or a protocol name"
			if best := c.closest(name, c.typeNames()); best != "" {
				hint = fmt.Sprintf("did you mean `%s`?", best)
			}
			c.errorAt(pos, lang.CodeUnknownType, hint, "unknown type `%s` in %s", name, ctx)
			ti.typ = typeString
		}
		if len(args) > 0 {
			c.errorAt(pos, lang.CodeUnknownType, "only list, dict, Option and Result take type arguments",
				"type `%s` takes no type arguments", name)
		}
	}
	if t.Optional {
		ti.optional = true
	}
	return ti
}

// nullable returns the type, allowing null too when it is optional.
func nullable(ti typeInfo) *ir.Type {
	if !ti.optional {
		return ti.typ
	}
	return nullableOf(ti.typ)
}

// nullableOf is t with null allowed: a kind with a JSON type lists "null"
// beside it, a plain union gains a null alternative, any already allows
// null, and anything else (a described union or any, a type already
// nullable) becomes a union of itself and null.
func nullableOf(t *ir.Type) *ir.Type {
	switch {
	case t.Kind != ir.KindAny && t.Kind != ir.KindUnion && !t.Nullable:
		out := cloneType(t)
		out.Nullable = true
		return out
	case t.Kind == ir.KindUnion && t.Description == "":
		alts := append([]*ir.Type{}, t.Alts...)
		return &ir.Type{Kind: ir.KindUnion, Alts: append(alts, &ir.Type{Kind: ir.KindNull})}
	case t.Kind == ir.KindAny && t.Description == "":
		return t // any: null included
	}
	return &ir.Type{Kind: ir.KindUnion, Alts: []*ir.Type{t, {Kind: ir.KindNull}}}
}

// parseQuotedType reads the type inside a quoted type name.
func (c *compiler) parseQuotedType(s *lang.StringLit) (*lang.TypeExpr, bool) {
	te, diags := lang.ParseType(s.Pos, s.Value())
	if len(diags) > 0 {
		c.errorAt(s.Pos, lang.CodeUnknownType, "write a type such as \"string\", \"int\" or \"list[str]\"",
			"%q is not a type", s.Value())
		return nil, false
	}
	return te, true
}

// protocolType returns the record type of a protocol, computing it once;
// a protocol that contains itself is an error.
func (c *compiler) protocolType(p *protoDecl, at lang.Position) *ir.Type {
	if p.typ != nil {
		return p.typ
	}
	if p.resolving {
		c.errorAt(at, lang.CodeUnknownType, "use a list or an optional field for recursive data, or flatten it",
			"protocol %s contains itself", p.decl.DeclName())
		return &ir.Type{Kind: ir.KindMap}
	}
	p.resolving = true
	fields := []ir.Field{}
	for _, f := range p.decl.Fields {
		name := f.Key.Name()
		if slices.ContainsFunc(fields, func(f ir.Field) bool { return f.Name == name }) {
			c.errorAt(f.Pos, lang.CodeDuplicate, "remove one of them", "field `%s` appears twice in protocol %s", name, p.decl.DeclName())
			continue
		}
		ti := c.resolveType(f.Type, typeCtx{"field ", name, " of protocol ", p.decl.DeclName()})
		fields = append(fields, ir.Field{Name: name, Type: nullable(ti)})
	}
	p.typ = &ir.Type{Kind: ir.KindRecord, Fields: fields}
	p.resolving = false
	return p.typ
}

// aliasType resolves a `type Name = T @ "constraint"` declaration; the
// constraint becomes the type's description.
func (c *compiler) aliasType(a *aliasDecl, at lang.Position, ctx typeCtx) typeInfo {
	for _, r := range c.aliasStack {
		if r == a {
			c.errorAt(at, lang.CodeUnknownType, "a type alias cannot refer to itself", "type %s refers to itself", a.decl.Name.Name)
			return typeInfo{typ: typeString}
		}
	}
	c.aliasStack = append(c.aliasStack, a)
	defer func() { c.aliasStack = c.aliasStack[:len(c.aliasStack)-1] }()
	ti := c.resolveType(a.decl.Type, ctx)
	if a.decl.Constraint != nil {
		ti.typ = cloneType(ti.typ)
		ti.typ.Description = a.decl.Constraint.Value()
	}
	return ti
}

// defaultJSON converts a default value to JSON, checking it against the
// parameter's type.
func (c *compiler) defaultJSON(v *lang.Value, ti typeInfo, param string) (any, bool) {
	val, ok := c.valueJSON(v)
	if !ok {
		return nil, false
	}
	wantS := ti.typ.JSONType()
	okType := true
	switch wantS {
	case "string":
		_, okType = val.(string)
	case "integer":
		switch n := val.(type) {
		case int64:
		case float64:
			okType = n == float64(int64(n))
		default:
			okType = false
		}
	case "number":
		switch val.(type) {
		case int64, float64:
		default:
			okType = false
		}
	case "boolean":
		_, okType = val.(bool)
	case "array":
		_, okType = val.([]any)
	case "object":
		_, okType = val.(map[string]any)
	}
	if !okType {
		c.errorAt(v.Pos, lang.CodeBadDefault, fmt.Sprintf("give a %s value or remove the default", wantS),
			"default of parameter `%s` is %s, but its type is %s", param, jsonKind(val), wantS)
		return nil, false
	}
	return val, true
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return "a value"
}

// valueJSON converts a property value to a JSON value: strings, int64 or
// float64, bools, lists, objects; a bare name becomes its text.
func (c *compiler) valueJSON(v *lang.Value) (any, bool) {
	switch {
	case v == nil:
		return nil, true
	case v.Number != nil:
		return numberValue(v.Number.Text, v.Number.Neg), true
	case v.Str != nil:
		return v.Str.Value(), true
	case v.Bool != nil:
		return *v.Bool == "true", true
	case v.Ref != nil:
		return v.Ref.String(), true
	case v.List != nil:
		out := make([]any, 0, len(v.List.Items))
		for _, it := range v.List.Items {
			x, ok := c.valueJSON(it.Value)
			if !ok {
				return nil, false
			}
			if it.Label != "" {
				x = map[string]any{it.Label: x}
			}
			out = append(out, x)
		}
		return out, true
	case v.Object != nil:
		out := make(map[string]any, len(v.Object.Entries))
		for _, e := range v.Object.Entries {
			x, ok := c.valueJSON(e.Value)
			if !ok {
				return nil, false
			}
			out[e.Key.Name()] = x
		}
		return out, true
	}
	return nil, true
}

// describeValue names the form of a value for messages.
func describeValue(v *lang.Value) string {
	switch {
	case v == nil:
		return "nothing"
	case v.Number != nil:
		return "the number " + numberText(v.Number)
	case v.Str != nil:
		s := v.Str.Value()
		if r := []rune(s); len(r) > 40 {
			s = string(r[:37]) + "…"
		}
		return fmt.Sprintf("the string %q", s)
	case v.Bool != nil:
		return *v.Bool
	case v.Ref != nil:
		return "the name `" + v.Ref.String() + "`"
	case v.List != nil:
		return "a list"
	case v.Object != nil:
		return "an object"
	}
	return "a value"
}

func numberText(n *lang.NumberLit) string {
	if n.Neg {
		return "-" + n.Text
	}
	return n.Text
}

func joinNames(names []string) string {
	if len(names) > 6 {
		return strings.Join(names[:6], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
	}
	return strings.Join(names, ", ")
}

package schemacheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// explain turns the library's error tree for value v into problems, one per
// failed keyword at its instance location, sorted by location (an object's
// own problems before those of its members, array items by index).
func explain(e *jsonschema.ValidationError, v any) []Problem {
	repairLocations(e, nil, v)
	c := collector{v: v}
	c.walk(e)
	slices.SortStableFunc(c.out, func(a, b finding) int {
		if d := compareLocations(a.loc, b.loc); d != 0 {
			return d
		}
		return strings.Compare(a.schema+"\x00"+a.tie, b.schema+"\x00"+b.tie)
	})
	ps := make([]Problem, len(c.out))
	for i, f := range c.out {
		ps[i] = Problem{At: pointer(f.loc), Msg: f.msg}
	}
	return ps
}

// finding is a problem with what orders it: its instance location, the
// schema node that failed and, for the keywords the library checks in map
// order (dependencies, dependentRequired), the property involved.
type finding struct {
	loc              []string
	schema, tie, msg string
}

type collector struct {
	v   any
	out []finding
}

func (c *collector) add(e *jsonschema.ValidationError, format string, args ...any) {
	c.out = append(c.out, finding{loc: e.InstanceLocation, schema: e.SchemaURL, msg: fmt.Sprintf(format, args...)})
}

// walk words the leaves of the tree and looks into the nodes that only
// group other failures. Keywords rarely seen in tool schemas keep the
// library's words.
func (c *collector) walk(e *jsonschema.ValidationError) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf, *kind.ContentSchema:
		for _, cause := range e.Causes {
			c.walk(cause)
		}
	case *kind.AnyOf:
		c.alternatives(e, "anyOf")
	case *kind.OneOf:
		if len(k.Subschemas) == 2 {
			c.add(e, "matches oneOf alternatives %d and %d, want exactly one", k.Subschemas[0], k.Subschemas[1])
		} else {
			c.alternatives(e, "oneOf")
		}
	case *kind.Type:
		got := k.Got
		if v, ok := valueAt(c.v, e.InstanceLocation); ok {
			got = jsonType(v)
		}
		c.add(e, "got %s, want %s", got, joinTypes(k.Want))
	case *kind.Enum:
		c.add(e, "value must be one of %s", jsonList(k.Want...))
	case *kind.Const:
		c.add(e, "value must be %s", jsonList(k.Want))
	case *kind.Required:
		for _, p := range k.Missing {
			c.add(e, "missing property '%s'", p)
		}
	case *kind.Dependency:
		c.dependency(e, k.Prop, k.Missing)
	case *kind.DependentRequired:
		c.dependency(e, k.Prop, k.Missing)
	case *kind.AdditionalProperties:
		if names := slices.Sorted(slices.Values(k.Properties)); len(names) == 1 {
			c.add(e, "additional property '%s' is not allowed", names[0])
		} else {
			c.add(e, "additional properties '%s' are not allowed", strings.Join(names, "', '"))
		}
	case *kind.PropertyNames:
		c.propertyName(e, k.Property)
	case *kind.FalseSchema:
		c.add(e, "no value is allowed here")
	case *kind.Not:
		c.add(e, `matches the schema under "not", which it must not`)
	case *kind.Minimum:
		c.add(e, "got %s, want at least %s", rat(k.Got), rat(k.Want))
	case *kind.ExclusiveMinimum:
		c.add(e, "got %s, want more than %s", rat(k.Got), rat(k.Want))
	case *kind.Maximum:
		c.add(e, "got %s, want at most %s", rat(k.Got), rat(k.Want))
	case *kind.ExclusiveMaximum:
		c.add(e, "got %s, want less than %s", rat(k.Got), rat(k.Want))
	case *kind.MultipleOf:
		c.add(e, "got %s, want a multiple of %s", rat(k.Got), rat(k.Want))
	case *kind.MinLength:
		c.add(e, "got %s, want at least %d", count(k.Got, "character"), k.Want)
	case *kind.MaxLength:
		c.add(e, "got %s, want at most %d", count(k.Got, "character"), k.Want)
	case *kind.Pattern:
		c.add(e, "%s does not match pattern %s", strconv.Quote(k.Got), strconv.Quote(k.Want))
	case *kind.Format:
		name, reason := k.Want, k.Err.Error()
		if name == "regex" {
			name = "regular expression"
		}
		if se := (*syntax.Error)(nil); errors.As(k.Err, &se) {
			reason = string(se.Code) + ": `" + se.Expr + "`"
		}
		c.add(e, "not a valid %s: %s", name, reason)
	case *kind.MinItems:
		c.add(e, "got %s, want at least %d", count(k.Got, "item"), k.Want)
	case *kind.MaxItems:
		c.add(e, "got %s, want at most %d", count(k.Got, "item"), k.Want)
	case *kind.AdditionalItems:
		v, _ := valueAt(c.v, e.InstanceLocation)
		a, _ := v.([]any)
		n := len(a)
		c.add(e, "got %s, at most %d allowed", count(n, "item"), n-k.Count)
	case *kind.RefCycle:
		c.add(e, "the schema refers back to itself here without stepping into the value")
	default:
		c.add(e, "%s", e.ErrorKind.LocalizedString(english))
	}
}

var english = message.NewPrinter(language.English)

// alternatives explains why no alternative of anyOf or oneOf matched (the
// library lists every failed alternative, in order). When only one
// alternative admits the value's type, its problems are the useful ones (an
// optional object is anyOf [object, null]), each at its own location.
func (c *collector) alternatives(e *jsonschema.ValidationError, kw string) {
	var fits []string
	var want []string
	for i, alt := range e.Causes {
		if t := c.typeMismatch(alt, e.InstanceLocation); t != nil {
			want = append(want, t...)
		} else {
			fits = append(fits, strconv.Itoa(i))
		}
	}
	switch len(fits) {
	case 0:
		v, _ := valueAt(c.v, e.InstanceLocation)
		c.add(e, "got %s, want %s", jsonType(v), joinTypes(want))
	case 1:
		i, _ := strconv.Atoi(fits[0])
		c.walk(e.Causes[i])
	default:
		c.add(e, "matches none of the %d %s alternatives (%s fit its type)", len(e.Causes), kw, strings.Join(fits, ", "))
	}
}

// typeMismatch returns the types alternative e wants when the value's type
// alone made it fail at location loc (its type, or an enum or const with no
// value of that type), or nil when the value's type fits.
func (c *collector) typeMismatch(e *jsonschema.ValidationError, loc []string) []string {
	for len(e.Causes) == 1 && wraps(e.ErrorKind) {
		e = e.Causes[0]
	}
	if !slices.Equal(e.InstanceLocation, loc) {
		return nil
	}
	var allowed []any
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return k.Want
	case *kind.Enum:
		allowed = k.Want
	case *kind.Const:
		allowed = []any{k.Want}
	default:
		return nil
	}
	v, _ := valueAt(c.v, loc)
	got := numberFamily(jsonType(v))
	var types []string
	for _, a := range allowed {
		if t := jsonType(a); numberFamily(t) != got {
			types = append(types, t)
		} else {
			return nil
		}
	}
	return types
}

// wraps says whether a failure of kind k only stands for its causes.
func wraps(k jsonschema.ErrorKind) bool {
	switch k.(type) {
	case *kind.Reference, *kind.Group, *kind.AllOf:
		return true
	}
	return false
}

func numberFamily(t string) string {
	if t == "integer" {
		return "number"
	}
	return t
}

// dependency reports each property that must be present because prop is.
func (c *collector) dependency(e *jsonschema.ValidationError, prop string, missing []string) {
	for _, m := range missing {
		c.add(e, "missing property '%s', required when '%s' is present", m, prop)
		c.out[len(c.out)-1].tie = prop
	}
}

// propertyName reports, at the member itself, why the key is not allowed;
// the library judges the key as a value of its own.
func (c *collector) propertyName(e *jsonschema.ValidationError, name string) {
	inner := collector{v: name}
	for _, cause := range e.Causes {
		inner.walk(cause)
	}
	for _, f := range inner.out {
		msg := "key: " + f.msg
		if strings.HasPrefix(f.msg, "not ") {
			msg = "key is " + f.msg
		}
		c.out = append(c.out, finding{loc: append(slices.Clip(e.InstanceLocation), name), schema: e.SchemaURL, msg: msg})
	}
}

// repairLocations works around the library (v6.0.3) keeping, for a
// propertyNames failure, a location slice that the validation of a later
// sibling overwrites (its upstream issue 258): the length is right, the
// tokens may not be. The location is rebuilt from that of the enclosing
// failure, which is right, and from the value: the one object at that
// depth below it with the offending key, else the enclosing location.
func repairLocations(e *jsonschema.ValidationError, parent []string, v any) {
	if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		below := len(e.InstanceLocation) - len(parent)
		e.InstanceLocation = slices.Clone(parent)
		if at, ok := valueAt(v, parent); ok && below > 0 {
			if found := objectsWithKey(at, parent, below, k.Property); len(found) == 1 {
				e.InstanceLocation = found[0]
			}
		}
		return // its causes judge the key, not a part of v
	}
	for _, c := range e.Causes {
		repairLocations(c, e.InstanceLocation, v)
	}
}

// objectsWithKey lists the locations of the objects depth levels below v
// (at location loc) that have the given key.
func objectsWithKey(v any, loc []string, depth int, key string) [][]string {
	m, isObject := v.(map[string]any)
	if depth == 0 {
		if _, ok := m[key]; ok {
			return [][]string{slices.Clone(loc)}
		}
		return nil
	}
	var out [][]string
	if isObject {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, objectsWithKey(m[k], append(slices.Clip(loc), k), depth-1, key)...)
		}
	}
	a, _ := v.([]any)
	for i, e := range a {
		out = append(out, objectsWithKey(e, append(slices.Clip(loc), strconv.Itoa(i)), depth-1, key)...)
	}
	return out
}

// jsonType names the JSON type of v, "integer" for a whole number (the
// library calls every number "number").
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	if r, ok := new(big.Rat).SetString(fmt.Sprint(v)); ok {
		if r.IsInt() {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// valueAt returns the part of v at the instance location loc.
func valueAt(v any, loc []string) (any, bool) {
	for _, tok := range loc {
		ok := false
		switch x := v.(type) {
		case map[string]any:
			v, ok = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if ok = err == nil && i >= 0 && i < len(x); ok {
				v = x[i]
			}
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}

// compareLocations orders instance locations token by token, array
// indices as numbers, a location before those inside it.
func compareLocations(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil && x != y {
			return x - y
		}
		if d := strings.Compare(a[i], b[i]); d != 0 {
			return d
		}
	}
	return len(a) - len(b)
}

// pointer renders an instance location as a JSON Pointer, "/" for the
// whole value.
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteString("/" + tokenEscaper.Replace(tok))
	}
	return b.String()
}

var tokenEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// rat renders a number as the user would write it.
func rat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// count says "1 item", "2 items", "0 characters".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func joinTypes(ts []string) string {
	return strings.Join(slices.Compact(slices.Sorted(slices.Values(ts))), " or ")
}

func jsonList(vs ...any) string {
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

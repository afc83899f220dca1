package secrets

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Kind is the type of a Value as written in the file.
type Kind int

// The kinds of values a .nxs file can hold.
const (
	// String is a quoted string or a bare word (`BASE_URL = https://x`,
	// accepted for 2.x files).
	String Kind = iota
	// Number is an integer or decimal literal, kept as written.
	Number
	// Bool is true or false.
	Bool
	// Null is null or none: treated as absent by Lookup and Env.
	Null
	// Map is a `{ "k": v, … }` object.
	Map
	// List is a `[ v, … ]` list (2.x accepted Python list literals).
	List
)

// Value is one secrets value. Its text is reachable only through explicit
// accessors (String, Map, Get, List): formatting a Value with fmt prints
// "[REDACTED]", so a stray Printf or %v in an error cannot leak it.
type Value struct {
	kind  Kind
	text  string
	items map[string]Value
	list  []Value
}

// Kind reports the value's type.
func (v Value) Kind() Kind { return v.kind }

// String is the value as text, which is what environment variables,
// provider clients and Python tools need: a string as is, a number as
// written (`0.7`, `1e3`), a bool as "true"/"false", null as "", a map or a
// list as JSON (keys sorted).
func (v Value) String() string {
	switch v.kind {
	case String, Number, Bool:
		return v.text
	case Null:
		return ""
	default:
		b, err := json.Marshal(v.jsonValue())
		if err != nil {
			return ""
		}
		return string(b)
	}
}

// Map returns a map value's entries rendered with String; nil when the
// value is not a map.
func (v Value) Map() map[string]string {
	if v.kind != Map {
		return nil
	}
	m := make(map[string]string, len(v.items))
	for k, it := range v.items {
		m[k] = it.String()
	}
	return m
}

// Get returns the entry key of a map value.
func (v Value) Get(key string) (Value, bool) {
	if v.kind != Map {
		return Value{}, false
	}
	it, ok := v.items[key]
	return it, ok
}

// Keys returns a map value's keys, sorted; nil for other kinds.
func (v Value) Keys() []string {
	if v.kind != Map {
		return nil
	}
	keys := make([]string, 0, len(v.items))
	for k := range v.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// List returns a list value's elements; nil for other kinds.
func (v Value) List() []Value {
	if v.kind != List {
		return nil
	}
	return append([]Value(nil), v.list...)
}

// Format makes every fmt verb print "[REDACTED]": values are secrets.
func (v Value) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// GoString keeps %#v redacted too.
func (v Value) GoString() string { return redacted }

func (v Value) jsonValue() any {
	switch v.kind {
	case String, Bool:
		if v.kind == Bool {
			return v.text == "true"
		}
		return v.text
	case Number:
		return json.Number(v.text)
	case Map:
		m := make(map[string]any, len(v.items))
		for k, it := range v.items {
			m[k] = it.jsonValue()
		}
		return m
	case List:
		l := make([]any, len(v.list))
		for i, it := range v.list {
			l[i] = it.jsonValue()
		}
		return l
	default:
		return nil
	}
}

// strings appends every string held by v (map entries and list elements
// included) to out.
func (v Value) strings(out []string) []string {
	switch v.kind {
	case String:
		return append(out, v.text)
	case Map:
		for _, it := range v.items {
			out = it.strings(out)
		}
	case List:
		for _, it := range v.list {
			out = it.strings(out)
		}
	}
	return out
}

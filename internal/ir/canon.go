package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CanonicalJSON is the one JSON encoding of the IR (schemas sent to
// models, the canonical IR the program hash covers): encoding/json's
// compact output with HTML escaping off, so that <, > and & stay readable
// in schemas and prompts. Everything else is encoding/json's: struct fields
// in declaration order, map keys sorted, invalid UTF-8 as U+FFFD, U+2028 and
// U+2029 escaped, numbers as strconv formats them. An Object keeps its keys in
// insertion order.
//
// The IR holds only strings, whole numbers, finite floats, bools, lists,
// maps and Objects, which always encode; an error here is a bug in the
// compiler, reported as such rather than hidden.
func CanonicalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("ir: cannot encode %T as JSON: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// MarshalJSON encodes the keys in insertion order, with one encoder for
// the object (schemas are encoded on every compile).
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	encode := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // the newline Encode ends with
		return nil
	}
	b.WriteByte('{')
	for i, m := range o.m {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encode(m.k); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := encode(m.v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

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
	if o, ok := v.(*Object); ok && o != nil {
		// the bytes encoding/json would give, without copying and
		// validating them once more (schemas are encoded on every compile)
		b, err := o.MarshalJSON()
		if err != nil {
			panic(fmt.Sprintf("ir: cannot encode %T as JSON: %v", v, err))
		}
		return b
	}
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
	// room for the usual member (and what nests in it) up front: −2.8 MB
	// and −16 k allocations per 3,000-tool compile against growing from
	// empty (64 bytes a member: −1.2 MB; 128: −2.1 MB)
	b.Grow(96 * len(o.m))
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := o.encode(&b, enc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encode writes o to b. Nested Objects and lists are written here too: handed
// to encoding/json, each nested Object would be encoded by its own
// MarshalJSON and then validated again at every level above it, which made
// deep schemas cost a multiple of their size. The bytes are the same.
func (o *Object) encode(b *bytes.Buffer, enc *json.Encoder) error {
	b.WriteByte('{')
	for i, m := range o.m {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encodeKey(b, enc, m.k); err != nil {
			return err
		}
		b.WriteByte(':')
		if err := encodeValue(b, enc, m.v); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// encodeKey writes key k of an Object as encoding/json would. Keys are
// nearly always plain ASCII ("type", "description", parameter names),
// which encoding/json writes as they are between quotes (HTML escaping is
// off): those are written directly, sparing an Encode call per key; any
// other key goes through encoding/json.
func encodeKey(b *bytes.Buffer, enc *json.Encoder, k string) error {
	if !plainASCII(k) {
		return encodeValue(b, enc, k)
	}
	b.WriteByte('"')
	b.WriteString(k)
	b.WriteByte('"')
	return nil
}

// plainASCII reports whether encoding/json (HTML escaping off) writes s
// unchanged between quotes: printable ASCII other than '"' and '\\'.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// encodeValue writes one value of an Object as encoding/json would.
func encodeValue(b *bytes.Buffer, enc *json.Encoder, v any) error {
	switch v := v.(type) {
	case *Object:
		if v != nil {
			return v.encode(b, enc)
		}
	case []any:
		if v != nil {
			b.WriteByte('[')
			for i, x := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := encodeValue(b, enc, x); err != nil {
					return err
				}
			}
			b.WriteByte(']')
			return nil
		}
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // the newline Encode ends with
	return nil
}

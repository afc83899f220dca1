package native

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// typeName names a value's type in error messages, in the words of the
// language rather than Go's.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case int64, float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("unsupported value (%T)", v)
}

// normalize turns a Go value from a literal or a decoded argument into the
// value model (string, int64, float64, bool, nil, []any, map[string]any).
// Hand-built IR may hold other numeric types; they are accepted so that a
// test or a future lowering cannot crash the interpreter.
func normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("number %v is not finite", x)
		}
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return float64(x), nil
		}
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return float64(x), nil
		}
		return int64(x), nil
	case float32:
		return normalize(float64(x))
	case json.Number:
		return numberFromJSON(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value of Go type %T", v)
}

// numberFromJSON reads a JSON number the way the compiler reads a number
// token: an int64 when it is written as a whole number that fits, else a
// float64.
func numberFromJSON(n json.Number) (any, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("number %s is out of range", s)
	}
	return f, nil
}

// decodeJSON decodes one JSON value into the value model.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return normalize(v)
}

// formatText is the text form of a value (results, print, `+` on text,
// interpolation): a string as is, nil as "", a whole float without a
// fraction, anything else JSON-encoded (without HTML escaping, so that
// "<" and "&" stay as written).
func formatText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case nil:
		return "", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("number %v is not finite", x)
		}
		if x == 0 {
			return "0", nil // also -0
		}
		if x == math.Trunc(x) && math.Abs(x) < 1e21 {
			return strconv.FormatFloat(x, 'f', -1, 64), nil
		}
	case bool:
		return strconv.FormatBool(x), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("cannot encode %s as JSON: %v", typeName(v), err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// truthy is the truth value of a condition: false, nil, 0, "", an empty
// list and an empty object are false; everything else is true.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// isNumber reports whether v is an int64 or a float64.
func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

// compareNumbers orders two numbers exactly, also across int64 and
// float64 (an int64 beyond 2^53 is not rounded).
func compareNumbers(a, b any) int {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmpOrdered(x, y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmpOrdered(x, y)
		}
	}
	return bigFloat(a).Cmp(bigFloat(b))
}

func cmpOrdered[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func bigFloat(v any) *big.Float {
	switch x := v.(type) {
	case int64:
		return new(big.Float).SetInt64(x)
	case float64:
		return big.NewFloat(x)
	}
	return new(big.Float)
}

// deepEqual is `==`: JSON-value equality, numbers compared by value (1 ==
// 1.0), lists element by element, objects by key set and values. Values of
// different types are unequal, never an error.
func deepEqual(a, b any) bool {
	if isNumber(a) && isNumber(b) {
		return compareNumbers(a, b) == 0
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !deepEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !deepEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

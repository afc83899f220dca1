package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"strconv"
	"strings"

	"github.com/nexa-run/nexa/internal/schemacheck"
)

// decodeDoc parses one JSON document (numbers kept exact) and explains a
// syntax error by line and column.
func decodeDoc(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the text is empty")
		}
		return nil, syntaxError(text, err, dec.InputOffset())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := lineCol(text, dec.InputOffset())
		return nil, fmt.Errorf("unexpected text after the JSON value at line %d, column %d", line, col)
	}
	return v, nil
}

func syntaxError(text string, err error, fallback int64) error {
	off := fallback
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the offending byte; point at it.
		off = max(se.Offset-1, 0)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		off = int64(len(text))
	}
	line, col := lineCol(text, off)
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the JSON text ends too early"
	}
	return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, msg)
}

// lineCol converts a byte offset to 1-based line and column (in
// characters).
func lineCol(text string, off int64) (int, int) {
	if off > int64(len(text)) {
		off = int64(len(text))
	}
	before := text[:off]
	line := strings.Count(before, "\n") + 1
	lastNL := strings.LastIndexByte(before, '\n')
	return line, len([]rune(before[lastNL+1:])) + 1
}

func jsonParse(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Text string `json:"text"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if _, err := decodeDoc(a.Text); err != nil {
		return fail("%v", err), nil
	}
	// Indent the original text, which keeps key order and number
	// spelling as written.
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(strings.TrimSpace(a.Text)), "", "  "); err != nil {
		return fail("invalid JSON: %v", err), nil
	}
	return ok(buf.String()), nil
}

// pathSeg is one step of a json_get path.
type pathSeg struct {
	text    string // key, or the digits of an index
	index   int
	numeric bool // usable as an array index
	quoted  bool // ["key"]: never an index
}

// parseJSONPath reads a.b[0].c, a.b.0.c, ["a.b"] and a leading $.
func parseJSONPath(p string) ([]pathSeg, error) {
	s := strings.TrimSpace(p)
	s = strings.TrimPrefix(s, "$")
	var segs []pathSeg
	bad := func(why string) error { return fmt.Errorf("invalid path %q: %s", p, why) }
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
			if s == "" || s[0] == '.' {
				return nil, bad("empty key")
			}
		case '[':
			body := strings.TrimLeft(s[1:], " ")
			if body != "" && (body[0] == '"' || body[0] == '\'') {
				// A quoted key may contain ] and dots.
				q := body[0]
				closeQ := strings.IndexByte(body[1:], q)
				if closeQ < 0 {
					return nil, bad("unterminated quote")
				}
				key := body[1 : 1+closeQ]
				rest := strings.TrimLeft(body[2+closeQ:], " ")
				if !strings.HasPrefix(rest, "]") {
					return nil, bad("missing ] after quoted key")
				}
				segs = append(segs, pathSeg{text: key, quoted: true})
				s = rest[1:]
				continue
			}
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, bad("missing ]")
			}
			inner := strings.TrimSpace(s[1:end])
			n, err := strconv.Atoi(inner)
			if err != nil {
				return nil, bad(fmt.Sprintf("[%s] is not an index; quote keys as [\"key\"]", inner))
			}
			segs = append(segs, pathSeg{text: inner, index: n, numeric: true})
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			key := s[:end]
			seg := pathSeg{text: key}
			if n, err := strconv.Atoi(key); err == nil {
				seg.index, seg.numeric = n, true
			}
			segs = append(segs, seg)
			s = s[end:]
		}
	}
	return segs, nil
}

func jsonGet(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Text string `json:"text"`
		Path string `json:"path"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	v, err := decodeDoc(a.Text)
	if err != nil {
		return fail("%v", err), nil
	}
	segs, err := parseJSONPath(a.Path)
	if err != nil {
		return fail("%v", err), nil
	}
	where := "$"
	for _, seg := range segs {
		switch cur := v.(type) {
		case map[string]any:
			next, found := cur[seg.text]
			if !found {
				return fail("path %q: key %q not found at %s", a.Path, seg.text, where), nil
			}
			v = next
			where += "." + seg.text
		case []any:
			if !seg.numeric || seg.quoted {
				return fail("path %q: %s is an array; use an index such as [0], not %q", a.Path, where, seg.text), nil
			}
			i := seg.index
			if i < 0 {
				i += len(cur)
			}
			if i < 0 || i >= len(cur) {
				return fail("path %q: index %d is out of range at %s (array of %d)", a.Path, seg.index, where, len(cur)), nil
			}
			v = cur[i]
			where += "[" + strconv.Itoa(seg.index) + "]"
		default:
			return fail("path %q: %s is a %s, not an object or array", a.Path, where, jsonKind(v)), nil
		}
	}
	s, err := encodeJSON(v, "  ")
	if err != nil {
		return fail("cannot encode the value: %v", err), nil
	}
	return ok(s), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func jsonStringify(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Value  json.RawMessage `json:"value"`
		Indent *int            `json:"indent"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if len(a.Value) == 0 {
		a.Value = json.RawMessage("null")
	}
	indent := 2
	if a.Indent != nil {
		indent = *a.Indent
	}
	if indent < 0 || indent > 8 {
		return fail("indent must be between 0 and 8"), nil
	}
	v, err := decodeDoc(string(a.Value))
	if err != nil {
		return fail("%v", err), nil
	}
	s, err := encodeJSON(v, strings.Repeat(" ", indent))
	if err != nil {
		return fail("cannot encode the value: %v", err), nil
	}
	return ok(s), nil
}

// maxValidateErrors is how many problems json_validate lists before
// summarising the rest as "and N more".
const maxValidateErrors = 50

func jsonValidate(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Text   string `json:"text"`
		Schema string `json:"schema"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	inst, err := decodeDoc(a.Text)
	if err != nil {
		return okJSON(map[string]any{"valid": false, "errors": []string{err.Error()}}), nil
	}
	if strings.TrimSpace(a.Schema) == "" {
		return okJSON(map[string]any{"valid": true, "errors": []string{}}), nil
	}
	// The schema is checked against the meta-schema first, and it may not
	// refer outside itself: a schema cannot make the tool read local files
	// or fetch URLs.
	sch, err := schemacheck.Compile([]byte(a.Schema))
	if err != nil {
		return fail("schema: %v", err), nil
	}
	ps := sch.Validate(inst)
	return okJSON(map[string]any{"valid": len(ps) == 0, "errors": schemacheck.Strings(ps, maxValidateErrors)}), nil
}

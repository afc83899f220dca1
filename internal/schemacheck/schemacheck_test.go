package schemacheck

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// problems compiles schema, decodes value and returns what a model would
// read (capped at 5, as the runtime does).
func problems(t *testing.T, schema, value string) string {
	t.Helper()
	s, err := Compile([]byte(schema))
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	v, err := Decode([]byte(value))
	if err != nil {
		t.Fatalf("value %s: %v", value, err)
	}
	return Explain(s.Validate(v), 5)
}

const order = `{
  "type": "object",
  "properties": {
    "customer": {"type": "string", "minLength": 2},
    "priority": {"enum": ["low", "high"]},
    "items": {"type": "array", "minItems": 1, "items": {
      "type": "object",
      "properties": {"name": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
      "required": ["name", "qty"],
      "additionalProperties": false
    }}
  },
  "required": ["customer", "items"],
  "additionalProperties": false
}`

func TestMessages(t *testing.T) {
	cases := []struct{ name, schema, value, want string }{
		{"valid", order, `{"customer": "ann", "items": [{"name": "tea", "qty": 2}]}`, ``},
		{"missing required", order, `{"items": [{"name": "tea", "qty": 2}]}`,
			`at /: missing property 'customer'`},
		{"wrong type at a nested array index", order, `{"customer": "ann", "items": [{"name": "tea", "qty": 1}, {"name": "jam", "qty": 1}, {"name": 7, "qty": 1}]}`,
			`at /items/2/name: got integer, want string`},
		{"enum", order, `{"customer": "ann", "priority": "urgent", "items": [{"name": "tea", "qty": 1}]}`,
			`at /priority: value must be one of "low", "high"`},
		{"additional property", order, `{"customer": "ann", "colour": "red", "items": [{"name": "tea", "qty": 1, "note": "x"}]}`,
			`at /: additional property 'colour' is not allowed; at /items/0: additional property 'note' is not allowed`},
		{"several errors at once", order, `{"customer": "a", "priority": 3, "items": [{"qty": 0}, {"name": "jam", "qty": 1.5}]}`,
			`at /customer: got 1 character, want at least 2; ` +
				`at /items/0: missing property 'name'; at /items/0/qty: got 0, want at least 1; ` +
				`at /items/1/qty: got number, want integer; at /priority: value must be one of "low", "high"`},
		{"more than five", order, `{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7}`,
			`at /: missing property 'customer'; at /: missing property 'items'; ` +
				`at /: additional properties 'a', 'b', 'c', 'd', 'e', 'f', 'g' are not allowed`},
		{"wrong type stops there", order, `[1, 2]`, `at /: got array, want object`},
		{"empty array", order, `{"customer": "ann", "items": []}`, `at /items: got 0 items, want at least 1`},
		{"key with a slash", `{"properties": {"a/b": {"type": "boolean"}}}`, `{"a/b": "yes"}`,
			`at /a~1b: got string, want boolean`},
		{"bounds", `{"type": "object", "properties": {"a": {"exclusiveMinimum": 0}, "b": {"maximum": 2.5}, "c": {"exclusiveMaximum": 1}}}`,
			`{"a": 0, "b": 3, "c": 1}`,
			`at /a: got 0, want more than 0; at /b: got 3, want at most 2.5; at /c: got 1, want less than 1`},
		{"pattern and multipleOf", `{"type": "object", "properties": {"id": {"pattern": "^[a-z]+$"}, "n": {"multipleOf": 2}}}`,
			`{"id": "A1", "n": 3}`,
			`at /id: "A1" does not match pattern "^[a-z]+$"; at /n: got 3, want a multiple of 2`},
		{"optional object through $ref", `{"$defs": {"Item": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}},
			"type": "object", "properties": {"item": {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]}}}`,
			`{"item": {"n": 5}}`, `at /item/n: got integer, want string`},
		{"anyOf with no fitting type", `{"anyOf": [{"type": "string"}, {"type": "null"}]}`, `4`,
			`at /: got integer, want null or string`},
		{"anyOf, several fit", `{"anyOf": [{"type": "string", "minLength": 3}, {"type": "string", "pattern": "^x"}]}`, `"ab"`,
			`at /: matches none of the 2 anyOf alternatives (0, 1 fit its type)`},
		{"oneOf matching twice", `{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`, `3`,
			`at /: matches oneOf alternatives 0 and 1, want exactly one`},
		{"recursive schema", `{"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
			"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}`,
			`{"name": "r", "children": [{"name": "a"}, {"name": "b", "children": [{"name": false}]}]}`,
			`at /children/1/children/0/name: got boolean, want string`},
		{"not, with a reference inside", `{"$defs": {"s": {"type": "string"}}, "properties": {"a": {"not": {"$ref": "#/$defs/s"}}}}`,
			`{"a": "x"}`, `at /a: matches the schema under "not", which it must not`},
		{"draft-07 tuple items", `{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": false}`,
			`["a", "b"]`, `at /: got 2 items, at most 1 allowed`},
		{"draft-07 definitions, a reference under not", `{"$schema": "http://json-schema.org/draft-07/schema#",
			"definitions": {"even": {"multipleOf": 2}, "neg": {"maximum": -1}},
			"properties": {"a": {"$ref": "#/definitions/even"}, "b": {"type": "integer", "not": {"$ref": "#/definitions/neg"}}}}`,
			`{"a": 3, "b": -4}`, `at /a: got 3, want a multiple of 2; at /b: matches the schema under "not", which it must not`},
		{"a schema as Pydantic writes it", `{"$defs": {"Line": {"properties": {"sku": {"title": "Sku", "type": "string"},
			"qty": {"default": 1, "title": "Qty", "type": "integer"}}, "required": ["sku"], "title": "Line", "type": "object"}},
			"properties": {"lines": {"items": {"$ref": "#/$defs/Line"}, "title": "Lines", "type": "array"},
			"note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Note"}},
			"required": ["lines"], "title": "order_args", "type": "object"}`,
			`{"lines": [{"sku": "a"}, {"qty": "2"}], "note": 5}`,
			`at /lines/1: missing property 'sku'; at /lines/1/qty: got string, want integer; at /note: got integer, want null or string`},
		{"draft-07 without the #", `{"$schema": "http://json-schema.org/draft-07/schema", "items": [{"type": "string"}]}`,
			`[1]`, `at /0: got integer, want string`},
		{"draft 2019-09 read as 2020-12", `{"$schema": "https://json-schema.org/draft/2019-09/schema", "required": ["a"]}`,
			`{}`, `at /: missing property 'a'`},
		{"draft-04 read as draft-07", `{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"n": {"maximum": 3}}}`,
			`{"n": 4}`, `at /n: got 4, want at most 3`},
		{"format, checked under draft-07 only", `{"$schema": "http://json-schema.org/draft-07/schema#",
			"properties": {"email": {"format": "email"}, "at": {"format": "date-time"}}}`, `{"email": "ann", "at": "2024-02-30T10:00:00Z"}`,
			`at /at: not a valid date-time: invalid date element: parsing time "2024-02-30": day out of range; at /email: not a valid email: missing @`},
		{"format, an annotation under 2020-12", `{"properties": {"email": {"format": "email"}}}`, `{"email": "ann"}`, ``},
		{"prefixItems", `{"prefixItems": [{"type": "string"}, {"type": "integer"}]}`, `["a", "b", 3]`,
			`at /1: got string, want integer`},
		{"draft-06 contains", `{"$schema": "http://json-schema.org/draft-06/schema#", "contains": {"type": "integer"}}`, `["a"]`,
			`at /: no items match contains schema`},
		{"dependentRequired, propertyNames, const, uniqueItems", `{"dependentRequired": {"a": ["b"], "c": ["d"]},
			"propertyNames": {"maxLength": 2}, "properties": {"v": {"const": 2}, "u": {"uniqueItems": true}}}`,
			`{"a": 1, "c": 2, "long": 3, "v": 3, "u": [1, 2, 1]}`,
			`at /: missing property 'b', required when 'a' is present; at /: missing property 'd', required when 'c' is present; ` +
				`at /long: key: got 4 characters, want at most 2; at /u: items at 0 and 2 are equal; at /v: value must be 2`},
		{"enum of another type is not an alternative", `{"anyOf": [{"enum": [1, 2]}, {"type": "string", "minLength": 3}]}`, `"ab"`,
			`at /: got 2 characters, want at least 3`},
		{"boolean false property", `{"properties": {"a": false}}`, `{"a": 1}`, `at /a: no value is allowed here`},
		{"draft-04 boolean bound", `{"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 1, "exclusiveMinimum": true}`, `1`,
			`at /: got 1, want more than 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := problems(t, c.schema, c.value); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestCap(t *testing.T) {
	s, err := Compile([]byte(`{"type": "array", "items": {"type": "string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := Decode([]byte(`[1, 2, 3, 4, 5, 6, 7, 8]`))
	got := Explain(s.Validate(v), 5)
	want := "at /0: got integer, want string; at /1: got integer, want string; at /2: got integer, want string; " +
		"at /3: got integer, want string; at /4: got integer, want string; and 3 more"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if l := Strings(s.Validate(v), 50); len(l) != 8 || l[7] != "at /7: got integer, want string" {
		t.Errorf("Strings = %q", l)
	}
}

func TestInvalidSchemas(t *testing.T) {
	cases := []struct{ name, schema, want string }{
		{"not JSON", `{"type":`, `not valid JSON: unexpected EOF`},
		{"several misshapen keywords", `{"type": "object", "properties": {"p": {"type": "strin"}, "q": {"minLength": -1}, "r": {"required": "x"}}}`,
			`not a valid JSON Schema: at /properties/p/type: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"; ` +
				`at /properties/q/minLength: got -1, want at least 0; at /properties/r/required: got string, want array`},
		{"type list", `{"type": ["string", "text"]}`, `not a valid JSON Schema: at /type/1: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"`},
		{"schema of the wrong type", `[1]`, `not a valid JSON Schema: at /: got array, want boolean or object`},
		{"empty allOf", `{"allOf": []}`, `not a valid JSON Schema: at /allOf: got 0 items, want at least 1`},
		{"bad regular expression", `{"properties": {"a": {"pattern": "("}}, "patternProperties": {"[": {}}}`,
			"not a valid JSON Schema: at /patternProperties/[: key is not a valid regular expression: missing closing ]: `[`; " +
				"at /properties/a/pattern: not a valid regular expression: missing closing ): `(`"},
		{"external file", `{"$ref": "file:///etc/passwd"}`, `external schema references are not loaded (file:///etc/passwd)`},
		{"external URL", `{"properties": {"a": {"$ref": "https://example.com/s.json"}}}`, `external schema references are not loaded (https://example.com/s.json)`},
		{"missing definition", `{"$ref": "#/$defs/nowhere"}`, `not a valid JSON Schema:`},
		{"refers to itself", `{"$ref": "#"}`, `not a valid JSON Schema: at /: the schema refers back to itself here without stepping into the value`},
		{"definitions naming each other", `{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`,
			`not a valid JSON Schema: at /$defs/a: the schema refers back to itself here`},
		{"through an anchor, under not", `{"$defs": {"a": {"$anchor": "top", "not": {"$ref": "#top"}}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`,
			`not a valid JSON Schema: at /$defs/a: the schema refers back to itself here`},
		{"unknown draft", `{"$schema": "http://json-schema.org/draft-03/schema#"}`, `$schema "http://json-schema.org/draft-03/schema#" is not supported (use draft 2020-12, 2019-09, 7, 6 or 4)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile([]byte(c.schema))
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
			if strings.Contains(c.name, "external") && !errors.Is(err, ErrExternalRef) {
				t.Errorf("%v does not wrap ErrExternalRef", err)
			}
		})
	}
}

// A schema from an MCP server is untrusted: no reference in it, nor its
// $schema, makes nexa read a file or make a request, even when the file
// exists and the server answers.
func TestNothingIsLoaded(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Header().Set("Content-Type", "application/schema+json")
		fmt.Fprint(w, `{"type": "string"}`)
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fileURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(file)}).String()
	for _, schema := range []string{
		`{"$ref": "` + srv.URL + `/s.json"}`,
		`{"properties": {"a": {"$ref": "` + srv.URL + `/s.json#/x"}}}`,
		`{"$id": "` + srv.URL + `/root.json", "items": {"$ref": "s.json"}}`,
		`{"$schema": "` + srv.URL + `/meta.json"}`,
		`{"$ref": "` + fileURL + `"}`,
		`{"$ref": "s.json"}`,
	} {
		_, err := Compile([]byte(schema))
		if err == nil {
			t.Errorf("%s: accepted", schema)
			continue
		}
		if !errors.Is(err, ErrExternalRef) && !strings.Contains(err.Error(), "is not supported") {
			t.Errorf("%s: %v does not say it loads nothing", schema, err)
		}
	}
	if requests != 0 {
		t.Errorf("the server got %d requests", requests)
	}
}

// The same schema text compiles once per process; a rejected one is
// rejected every time.
func TestCompileShares(t *testing.T) {
	a, err1 := Compile([]byte(order))
	b, err2 := Compile([]byte(order))
	if err1 != nil || err2 != nil || a != b {
		t.Fatalf("compiled twice: %p %p (%v, %v)", a, b, err1, err2)
	}
	for range 2 {
		if _, err := Compile([]byte(`{"type": "strin"}`)); err == nil {
			t.Fatal("invalid schema accepted")
		}
	}
}

// CompileGenerated checks a schema as Compile does (the library checks
// every schema against its meta-schema while compiling it), and the two
// share their compiled schemas.
func TestCompileGeneratedChecksAndShares(t *testing.T) {
	const misshapen = `{"properties": {"q": {"type": "text"}}}`
	_, err := CompileGenerated([]byte(misshapen))
	if want := `not a valid JSON Schema: at /properties/q/type: value must be one of`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("CompileGenerated: got %v, want %s", err, want)
	}
	a, err1 := CompileGenerated([]byte(order))
	b, err2 := Compile([]byte(order))
	if err1 != nil || err2 != nil || a != b {
		t.Fatalf("not shared: %p %p (%v, %v)", a, b, err1, err2)
	}
}

func TestEmptySchemaMeansObject(t *testing.T) {
	if got := problems(t, ``, `"x"`); got != "at /: got string, want object" {
		t.Errorf("got %s", got)
	}
}

// Go values (not decoded JSON) are classified like their JSON forms.
func TestGoNumbers(t *testing.T) {
	s, err := Compile([]byte(`{"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ps := s.Validate(map[string]any{"a": 3, "b": float32(1.5)}); fmt.Sprint(ps) != "[at /b: got number, want string]" {
		t.Errorf("got %v", ps)
	}
}

// A key that propertyNames refuses is reported at its own object, however
// many siblings are checked after it.
func TestKeyProblemsStayAtTheirObject(t *testing.T) {
	s, err := Compile([]byte(`{"additionalProperties": {"type": "array", "items": {"propertyNames": {"maxLength": 1}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := Decode([]byte(`{"a": [{}, {"xx": 1}, {}, {}], "b": [], "c": [{}], "d": [], "e": [{}, {}], "f": [], "g": []}`))
	for range 20 {
		if got, want := Explain(s.Validate(v), 5), "at /a/1/xx: key: got 2 characters, want at most 1"; got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
}

// The library checks some keywords in map order; the problems still come
// out in the same order every time.
func TestStableOrder(t *testing.T) {
	s, err := Compile([]byte(`{"dependentRequired": {"a": ["x"], "b": ["x"], "c": ["x"], "d": ["x"]},
		"patternProperties": {"^k": {"type": "string"}, "k$": {"minLength": 3}, "^.k": {"maxLength": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := Decode([]byte(`{"a": 1, "b": 1, "c": 1, "d": 1, "kk": "kk"}`))
	first := Explain(s.Validate(v), 50)
	for range 50 {
		if got := Explain(s.Validate(v), 50); got != first {
			t.Fatalf("order changed:\n%s\n%s", first, got)
		}
	}
}

// One Schema serves concurrent tool calls (run with -race).
func TestConcurrentValidate(t *testing.T) {
	s, err := Compile([]byte(order))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := Decode([]byte(`{"customer": "a", "items": [{"qty": 0}]}`))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if len(s.Validate(v)) != 3 {
				t.Error("wrong problem count")
			}
		}()
	}
	wg.Wait()
}

// The cost a run pays per tool schema when it starts (the first time the
// process sees it), and per call.
func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		if _, err := compile([]byte(order)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateValid(b *testing.B) {
	s, _ := Compile([]byte(order))
	v, _ := Decode([]byte(`{"customer": "ann", "items": [{"name": "tea", "qty": 2}, {"name": "jam", "qty": 1}]}`))
	for b.Loop() {
		if len(s.Validate(v)) != 0 {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkValidateInvalid(b *testing.B) {
	s, _ := Compile([]byte(order))
	v, _ := Decode([]byte(`{"customer": "a", "priority": 3, "items": [{"qty": 0}, {"name": "jam", "qty": 1.5}]}`))
	for b.Loop() {
		if len(s.Validate(v)) != 5 {
			b.Fatal("wrong count")
		}
	}
}

// No schema and value, however odd, may panic or hang: json_validate takes
// both from a model.
func FuzzCompileValidate(f *testing.F) {
	f.Add(order, `{"customer": "a", "items": [{"qty": 0}]}`)
	f.Add(`{"$defs": {"n": {"properties": {"c": {"items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"}`, `{"c": [{"c": [1]}]}`)
	f.Add(`{"anyOf": [{"type": "string"}, {"not": {"minimum": 3}}], "oneOf": [true, false]}`, `4`)
	f.Add(`{"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"const": 1}}`, `"a"`)
	f.Add(`{"unevaluatedProperties": false, "properties": {"a": {}}}`, `{"b": 1}`)
	f.Add(`{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{}], "additionalItems": {"type": "null"}}`, `[1, 2]`)
	f.Add(`{"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": {"type": "string"}}`, `{"xa": "s", "b": 1}`)
	f.Add(`{"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"a": {"required": ["c"]}}, "propertyNames": {"maxLength": 1}}`, `{"a": 1, "bb": 2}`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		s, err := Compile([]byte(schema))
		if err != nil {
			return
		}
		v, err := Decode([]byte(value))
		if err != nil {
			return
		}
		for _, p := range s.Validate(v) {
			if p.At == "" || p.Msg == "" {
				t.Fatalf("empty problem %+v", p)
			}
		}
	})
}

package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
)

// The reason a model reads for refused arguments names every problem (up
// to maxProblems) at its place in the arguments.
func TestValidateArgsExplainsEveryProblem(t *testing.T) {
	tools := map[string]*ir.Tool{"order": {Name: "order", Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {"lines": {"type": "array", "items": {"type": "object",
			"properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
			"required": ["sku"], "additionalProperties": false}}},
		"required": ["lines"]}`)}}
	s, err := newSchemaSet(tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(raw string) any {
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.UseNumber() // as the runner decodes arguments
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct{ args, want string }{
		{`{"lines": [{"sku": "a", "qty": 2}]}`, ``},
		{`{"lines": [{"sku": "a"}, {"sku": "b", "qty": "2"}]}`, `at /lines/1/qty: got string, want integer`},
		{`{"lines": [{"qty": 0, "gift": true}, {"sku": 4}]}`,
			`at /lines/0: missing property 'sku'; at /lines/0: additional property 'gift' is not allowed; ` +
				`at /lines/0/qty: got 0, want at least 1; at /lines/1/sku: got integer, want string`},
		{`{"lines": [{}, {}, {}, {}, {}, {}, {}]}`,
			`at /lines/0: missing property 'sku'; at /lines/1: missing property 'sku'; at /lines/2: missing property 'sku'; ` +
				`at /lines/3: missing property 'sku'; at /lines/4: missing property 'sku'; and 2 more`},
	}
	for _, c := range cases {
		got := ""
		if err := s.validateArgs("order", decode(c.args)); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.args, got, c.want)
		}
	}
}

// A tool whose schema is not a JSON Schema (an MCP server's inputSchema)
// stops the run before any call, saying where. The schemas nexa generates
// (a native or Python tool's, a built-in's, a protocol's) are not checked
// against the meta-schema at run time, the compiler's tests check them,
// but one the schema library cannot read still stops the run.
func TestInvalidToolSchemaIsRejected(t *testing.T) {
	const misshapen = `{"type": "object", "properties": {"q": {"type": "text"}, "n": {"maximum": "ten"}}}`
	tools := map[string]*ir.Tool{"search": {Name: "search", Parameters: json.RawMessage(misshapen),
		Body: ir.Body{Kind: ir.BodyMCP}}}
	_, err := newSchemaSet(tools, nil)
	want := `schema of tool search: not a valid JSON Schema: at /properties/n/maximum: got string, want number; at /properties/q/type: value must be one of`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	tools["search"].Body.Kind = ir.BodyNative
	if _, err := newSchemaSet(tools, nil); err == nil || !strings.Contains(err.Error(), "schema of tool search: not a valid JSON Schema") {
		t.Fatalf("generated tool schema: got %v", err)
	}
	if _, err := newSchemaSet(nil, json.RawMessage(`{"required": [1]}`)); err == nil ||
		!strings.Contains(err.Error(), "output schema: not a valid JSON Schema") {
		t.Fatalf("output schema: got %v", err)
	}
}

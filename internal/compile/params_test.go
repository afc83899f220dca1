package compile

import (
	"encoding/json"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/stdlib"
)

// TestToolParams: a tool's parameters are in the IR as declared (name,
// type, description, default, required), and its schema is the one
// generated from them.
func TestToolParams(t *testing.T) {
	p := mustBuild(t, `
protocol Point { x: int }
type Email = str @ "an address"

@tool("Params")
fn params_tool(
    // What to find
    query: string,
    limit: int = 3,
    tags: list[str]?,
    to: Email,
    at: Point?
): string {
    return query
}

tool legacy { description: "Legacy", parameters: { "word": "string", "n": "int?" } }
agent A uses params_tool, legacy { prompt: "p" }
`)
	type row struct {
		name, desc, def, jsonType string
		kind                      ir.TypeKind
		nullable, required        bool
	}
	for tool, want := range map[string][]row{
		"params_tool": {
			{"query", "What to find", "", "string", ir.KindString, false, true},
			{"limit", "Parameter limit", "3", "integer", ir.KindInteger, false, false},
			{"tags", "Parameter tags", "", "", ir.KindArray, true, false},
			{"to", "Parameter to (an address)", "", "string", ir.KindString, false, true},
			{"at", "Parameter at", "", "", ir.KindRecord, true, false},
		},
		"legacy": {
			{"word", "Parameter word", "", "string", ir.KindString, false, true},
			{"n", "Parameter n", "", "", ir.KindInteger, true, false},
		},
	} {
		tl := p.Tool(tool)
		if len(tl.Params) != len(want) {
			t.Fatalf("%s: %d params, want %d: %+v", tool, len(tl.Params), len(want), tl.Params)
		}
		for i, w := range want {
			g := tl.Params[i]
			got := row{g.Name, g.Description, string(g.Default), g.Type.JSONType(), g.Type.Kind, g.Type.Nullable, g.Required}
			if got != w {
				t.Errorf("%s param %d = %+v, want %+v", tool, i, got, w)
			}
		}
		if got := string(ir.ParametersSchema(tl.Params)); got != string(tl.Parameters) {
			t.Errorf("%s: schema not generated from Params:\n%s\n%s", tool, got, tl.Parameters)
		}
	}
	if items := p.Tool("params_tool").Params[2].Type.Items; items == nil || items.Kind != ir.KindString {
		t.Errorf("tags items = %+v, want string", items)
	}
	if f := p.Tool("params_tool").Params[4].Type.Fields; len(f) != 1 || f[0].Name != "x" || f[0].Type.Kind != ir.KindInteger {
		t.Errorf("at fields = %+v", f)
	}
}

// TestBuiltinParams: every built-in tool carries the parameters of its
// declared schema, so executors and the runtime never read the schema.
func TestBuiltinParams(t *testing.T) {
	for _, d := range stdlib.All() {
		tl := builtinTool(d)
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		if len(tl.Params) != len(schema.Properties) {
			t.Errorf("%s: %d params for %d properties", d.Name, len(tl.Params), len(schema.Properties))
		}
		required := 0
		for _, p := range tl.Params {
			if _, ok := schema.Properties[p.Name]; !ok {
				t.Errorf("%s: param %s is not in the schema", d.Name, p.Name)
			}
			if p.Required {
				required++
			}
		}
		if required != len(schema.Required) {
			t.Errorf("%s: %d required params, schema requires %v", d.Name, required, schema.Required)
		}
	}
}

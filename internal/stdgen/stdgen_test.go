package stdgen

import (
	"strings"
	"testing"
)

// One tool written with every convention of std.nx: a wrapped description,
// `T?`, keywords in any order, a newline default, a list and a map.
const oneTool = `
@tool("""Do a thing
      in two lines.""", risk_level: "low", timeout: 10, idempotent: true, category: "std.demo")
fn demo_run(
    // What to do {"maxLength": 9, "minLength": 1}
    what: string,
    // How often {"maximum": 5, "minimum": 1}
    times: int?,
    // Between parts
    sep: string = "
",
    parts: list[string]?, // Parts to use
    env: dict[string, string]?, // Variables
    mode: string = "a", // Mode {"enum": ["a", "b"]}
) {}
`

func TestGenerateOneTool(t *testing.T) {
	out, err := Generate([]byte(oneTool))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		`var namespaceOrder = [...]string{"std.demo"}`,
		`name: "demo_run", namespace: "std.demo", risk: "low", timeout: 10, idempotent: true,`,
		// the lines of a description are joined with one space
		`description: "Do a thing in two lines.",`,
		// keywords in their fixed order whatever the order in the comment
		"\"what\": {\n      \"type\": \"string\",\n      \"minLength\": 1,\n      \"maxLength\": 9,\n      \"description\": \"What to do\"\n    }",
		// T? may be left out but is never null
		"\"times\": {\n      \"type\": \"integer\",\n      \"minimum\": 1,\n      \"maximum\": 5,\n      \"description\": \"How often\"\n    }",
		`"default": "\n",`,
		"\"parts\": {\n      \"type\": \"array\",\n      \"items\": {\n        \"type\": \"string\"\n      },",
		"\"env\": {\n      \"type\": \"object\",\n      \"additionalProperties\": {\n        \"type\": \"string\"\n      },",
		"\"enum\": [\n        \"a\",\n        \"b\"\n      ],\n      \"default\": \"a\",",
		"\"required\": [\n    \"what\"\n  ],\n  \"additionalProperties\": false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("generated code lacks\n%s\n--- got:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"null"`) {
		t.Errorf("a built-in parameter allows null:\n%s", got)
	}
}

// Every break of the conventions stops generation with a message that
// names the tool (and parameter) and says what to write.
func TestGenerateRefuses(t *testing.T) {
	tool := func(settings, params, body string) string {
		return `@tool("Demo", risk_level: "low", timeout: 10` + settings + `)
fn demo(
    ` + params + `
) ` + body + "\n"
	}
	const cat = `, category: "std.demo"`
	for _, c := range []struct {
		name, src, want string
	}{
		{"compile error", tool(cat, "x: strin, // X", "{}"), "does not compile cleanly"},
		{"compile warning", tool(cat+`, approval_timeout: 5`, "x: string, // X", "{}"), "does not compile cleanly"},
		{"no tools", "", "declares no tools"},
		{"agent", tool(cat, "x: string, // X", "{}") + `agent A uses demo { prompt: "p" }`, "agent A: std.nx declares built-in tools only"},
		{"body", tool(cat, "x: string, // X", `{ return x; }`), "tool demo: the body must be empty"},
		{"python body", tool(cat, "x: string, // X", `{ python! """return x""" }`), "the body must be empty"},
		{"legacy block", `tool demo { description: "Demo", parameters: { "x": "string" }, category: "std.demo" }`, "the body must be empty"},
		{"no category", tool("", "x: string, // X", "{}"), `category must name its namespace, such as category: "std.fs" (found "")`},
		{"bare std", tool(`, category: "std."`, "x: string, // X", "{}"), "category must name its namespace"},
		{"approval", tool(cat+`, requires_approval: true`, "x: string, // X", "{}"), "approval follows from risk_level"},
		{"returns", `@tool("Demo", category: "std.demo") fn demo(x: string /* X */): int {}`, "every built-in tool returns text"},
		{"no comment", tool(cat, "x: string", "{}"), "parameter x: needs a comment"},
		{"union", tool(cat, "x: string | int, // X", "{}"), "parameter x: unions are not supported"},
		{"unknown keyword", tool(cat, `x: string, // X {"format": "uri"}`, "{}"), `parameter x: the comment ends with "{\"format\": \"uri\"}", which is not a JSON object of schema keywords`},
		{"broken keywords", tool(cat, `x: string, // X {"minLength": }`, "{}"), "which is not a JSON object of schema keywords"},
		{"keywords alone", tool(cat, `x: string, // {"minLength": 1}`, "{}"), "schema keywords but no description"},
		{"duplicate keyword", tool(cat, `x: string, // X {"minLength": 1, "minLength": 2}`, "{}"), "not a JSON object of schema keywords"},
		{"minimum on string", tool(cat, `x: string, // X {"minimum": 1}`, "{}"), "minimum applies to a number parameter"},
		{"minLength on int", tool(cat, `x: int, // X {"minLength": 1}`, "{}"), "minLength applies to a string parameter"},
		{"negative minLength", tool(cat, `x: string, // X {"minLength": -1}`, "{}"), "minLength applies to a string parameter and takes a whole number"},
		{"bad pattern", tool(cat, `x: string, // X {"pattern": "("}`, "{}"), `pattern "(":`},
		{"empty enum", tool(cat, `x: string, // X {"enum": []}`, "{}"), "enum takes a non-empty list"},
		{"namespace apart", tool(cat, "x: string, // X", "{}") +
			strings.Replace(tool(`, category: "std.other"`, "x: string, // X", "{}"), "fn demo", "fn other", 1) +
			strings.Replace(tool(cat, "x: string, // X", "{}"), "fn demo", "fn again", 1),
			"tool again: the tools of std.demo must be written together"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Generate([]byte(c.src))
			if err == nil {
				t.Fatalf("accepted; generated:\n%s", out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}

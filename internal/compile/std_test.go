package compile

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
	"github.com/nexa-run/nexa/internal/stdlib"
)

// stdNames are the tool names of a namespace, sorted as Agent.Tools is.
func stdNames(t *testing.T, ns string) []string {
	t.Helper()
	tools, ok := stdlib.Tools(ns)
	if !ok || len(tools) == 0 {
		t.Fatalf("stdlib has no namespace %s", ns)
	}
	var names []string
	for _, d := range tools {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	return names
}

// TestUsesStdNamespace: `uses std.fs` exposes every tool of the namespace,
// and each becomes a builtin tool of the program with the declaration of
// stdlib.
func TestUsesStdNamespace(t *testing.T) {
	p := mustBuild(t, `@tool("t") fn t1(): string { return "a" }
agent A uses t1, std.fs { prompt: "p" }`)
	a := p.Agent("A")
	want := append(stdNames(t, "std.fs"), "t1")
	sort.Strings(want)
	if strings.Join(a.Tools, ",") != strings.Join(want, ",") {
		t.Errorf("tools = %v, want %v", a.Tools, want)
	}
	if len(a.Uses) != 2 || a.Uses[1] != (ir.Use{Kind: ir.UseStd, Name: "std.fs"}) {
		t.Errorf("uses = %v", a.Uses)
	}
	fsTools, _ := stdlib.Tools("std.fs")
	if len(p.Tools) != 1+len(fsTools) || p.Tools[0].Name != "t1" {
		t.Fatalf("program tools: the program's own first, then the built-ins: %d", len(p.Tools))
	}
	for i, d := range fsTools {
		got := p.Tools[1+i]
		if got.Name != d.Name || got.Body.Kind != ir.BodyBuiltin || got.Category != "std.fs" || got.Returns != "string" ||
			got.Risk != d.Risk || got.Timeout != d.Timeout || got.Idempotent != d.Idempotent || got.Description != d.Description {
			t.Errorf("tool %d = %+v, want the declaration of %s", 1+i, got, d.Name)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, d.Parameters); err != nil || !bytes.Equal(got.Parameters, want.Bytes()) {
			t.Errorf("%s parameters = %s, want stdlib's schema", d.Name, got.Parameters)
		}
		if got.File != "" || got.Line != 0 || got.RequiresApproval || got.Sandbox {
			t.Errorf("%s: a built-in has no source and no settings of its own: %+v", d.Name, got)
		}
	}
	if w := p.Tool("file_write"); w == nil || w.Risk != "high" || !w.NeedsApproval() {
		t.Errorf("file_write must be high risk and need approval: %+v", w)
	}
	if r := p.Tool("file_read"); r == nil || r.Risk != "low" || r.NeedsApproval() {
		t.Errorf("file_read must be low risk without approval: %+v", r)
	}
	checkSchemas(t, p)
}

// TestBuiltinsOnceAndOnlyUsed: a built-in appears once however many agents
// use it, only used namespaces are added, in stdlib's order.
func TestBuiltinsOnceAndOnlyUsed(t *testing.T) {
	p := mustBuild(t, `agent A uses std.time, std.fs { prompt: "p" }
agent B uses std.fs, std.fs.file_read, file_read { prompt: "p" }
agent C uses std.time.time_now { prompt: "p" }`)
	var names []string
	for _, tl := range p.Tools {
		names = append(names, tl.Name)
	}
	var want []string
	for _, d := range stdlib.All() {
		if d.Namespace == "std.fs" || d.Namespace == "std.time" {
			want = append(want, d.Name)
		}
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("program tools = %v, want %v", names, want)
	}
	if strings.Join(p.Agent("B").Tools, ",") != strings.Join(stdNames(t, "std.fs"), ",") {
		t.Errorf("B tools = %v", p.Agent("B").Tools)
	}
	if strings.Join(p.Agent("C").Tools, ",") != "time_now" {
		t.Errorf("C tools = %v", p.Agent("C").Tools)
	}
}

// TestImplicitExposureHasNoBuiltins: an agent without uses sees the @tool
// functions only, even when another agent brings in built-ins.
func TestImplicitExposureHasNoBuiltins(t *testing.T) {
	p, diags := build(t, "main.nx", map[string]string{"main.nx": `@tool("t") fn t1(): string { return "a" }
agent A uses std.fs { prompt: "p" }
agent B { prompt: "p" }`})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if b := p.Agent("B"); !b.ImplicitTools || strings.Join(b.Tools, ",") != "t1" {
		t.Errorf("B tools = %v (implicit %v), want only t1", b.Tools, b.ImplicitTools)
	}
	// a program whose agents all lack uses gets no built-ins at all
	p = mustBuild(t, `@tool("t") fn t1(): string { return "a" }
agent B { prompt: "p" }`)
	if len(p.Tools) != 1 {
		t.Errorf("tools = %d, want only t1", len(p.Tools))
	}
}

// TestSingleBuiltinUses: `std.NS.TOOL` and a plain built-in name expose one
// tool; a tool of the program wins over a plain built-in name.
func TestSingleBuiltinUses(t *testing.T) {
	p := mustBuild(t, `agent A uses std.fs.file_read, http_get { prompt: "p" }`)
	a := p.Agent("A")
	if strings.Join(a.Tools, ",") != "file_read,http_get" {
		t.Errorf("tools = %v", a.Tools)
	}
	if want := []ir.Use{{Kind: ir.UseStd, Name: "std.fs.file_read"}, {Kind: ir.UseTool, Name: "http_get"}}; len(a.Uses) != 2 || a.Uses[0] != want[0] || a.Uses[1] != want[1] {
		t.Errorf("uses = %v, want %v", a.Uses, want)
	}
	if len(p.Tools) != 2 || p.Tools[0].Name != "file_read" || p.Tools[1].Category != "std.http" {
		t.Errorf("program tools = %+v", p.Tools)
	}

	p = mustBuild(t, `@tool("mine") fn http_get(url: string): string { return url }
agent A uses http_get { prompt: "p" }`)
	if len(p.Tools) != 1 || p.Tools[0].Body.Kind != ir.BodyNative {
		t.Errorf("the program's http_get must be used: %+v", p.Tools)
	}
}

// TestBuiltinUsesErrors: unknown tools of a known namespace are errors with
// a suggestion; unknown namespaces stay warnings; typos of plain built-in
// names are suggested.
func TestBuiltinUsesErrors(t *testing.T) {
	cases := []struct {
		src, code, msg, hint string
		isError              bool
	}{
		{`agent A uses std.fs.file_raed { prompt: "p" }`, lang.CodeUnknownTool, "agent A uses unknown built-in tool `std.fs.file_raed`", "did you mean `std.fs.file_read`?", true},
		{`agent A uses std.fs.zzzzzzzz { prompt: "p" }`, lang.CodeUnknownTool, "unknown built-in tool `std.fs.zzzzzzzz`", "the tools of std.fs are file_read, file_list", true},
		{`agent A uses file_raed { prompt: "p" }`, lang.CodeUnknownTool, "agent A uses unknown tool `file_raed`", "did you mean `file_read`?", true},
		{`agent A uses std.fss { prompt: "p" }`, lang.CodeUnknownTool, "unknown built-in namespace `std.fss` in agent A; it gives no tools", "did you mean `std.fs`?", false},
		{`agent A uses std.zzzzzzzz { prompt: "p" }`, lang.CodeUnknownTool, "unknown built-in namespace `std.zzzzzzzz`", "built-in namespaces: std.fs, std.shell, std.http", false},
		{`agent A uses std.std.fs { prompt: "p" }`, lang.CodeUnknownTool, "unknown built-in namespace `std.std.fs`", "", false},
		{`agent A uses std.ask_human.ask { prompt: "p" }`, lang.CodeUnknownTool, "unknown built-in namespace `std.ask_human.ask`", "", false},
	}
	for _, c := range cases {
		_, diags := build(t, "main.nx", map[string]string{"main.nx": c.src})
		d := findDiag(t, diags, c.code)
		if !strings.Contains(d.Message, c.msg) || !strings.Contains(d.Hint, c.hint) || d.IsError() != c.isError {
			t.Errorf("%s:\n got %s (hint %q, error %v)\nwant %q (hint %q, error %v)", c.src, d.Message, d.Hint, d.IsError(), c.msg, c.hint, c.isError)
		}
	}
	// an unknown namespace gives no tools and no program tools
	p, _ := build(t, "main.nx", map[string]string{"main.nx": `agent A uses std.fss { prompt: "p" }`})
	if p == nil || len(p.Tools) != 0 || len(p.Agent("A").Tools) != 0 {
		t.Errorf("std.fss must give no tools")
	}
}

// TestBuiltinClash: a tool of the program named like a built-in an agent
// exposes is an error at the tool, naming the namespace and pointing at the
// uses entry.
func TestBuiltinClash(t *testing.T) {
	for _, src := range []string{
		"@tool(\"mine\") fn file_write(path: string): string { return path }\nagent A uses std.fs { prompt: \"p\" }",
		"tool file_write { description: \"mine\" }\nagent A uses std.fs.file_write { prompt: \"p\" }",
		"@tool(\"mine\") fn file_write(path: string): string { return path }\nagent A uses file_write { prompt: \"p\" }\nagent B uses std.fs { prompt: \"p\" }",
	} {
		prog, diags := build(t, "main.nx", map[string]string{"main.nx": src})
		if prog != nil {
			t.Fatalf("%s: compiled despite the clash", src)
		}
		d := findDiag(t, diags, lang.CodeDuplicate)
		if d.Line != 1 || !strings.Contains(d.Message, "tool `file_write` has the name of the built-in tool file_write of std.fs") ||
			len(d.Related) != 1 || d.Related[0].Line < 2 || !strings.Contains(d.Related[0].Message, "std.fs") {
			t.Errorf("%s: clash reported as %+v", src, d)
		}
	}
	// no clash when the namespace is not used, or only other tools of it
	mustBuild(t, "@tool(\"mine\") fn file_write(path: string): string { return path }\nagent A uses file_write, std.fs.file_read { prompt: \"p\" }")
}

// TestHashCoversBuiltins: the canonical IR holds the built-in tools, so the
// hash changes when the exposed built-ins change, even where the rest of the
// IR does not.
func TestHashCoversBuiltins(t *testing.T) {
	a := mustBuild(t, `agent A uses std.time { prompt: "p" }`)
	b := mustBuild(t, `agent A uses std.time.time_now { prompt: "p" }`)
	irA := CanonicalIR(a)
	irB := CanonicalIR(b)
	if !bytes.Contains(irA, []byte(`"name":"time_diff"`)) || !bytes.Contains(irA, []byte(`"kind":"builtin"`)) ||
		!bytes.Contains(irA, []byte(`"category":"std.time"`)) {
		t.Errorf("the canonical IR must hold the built-in tools: %s", irA)
	}
	if bytes.Contains(irB, []byte(`"name":"time_diff"`)) || a.Hash == b.Hash {
		t.Errorf("exposing other built-ins must change the IR and the hash")
	}
	again := mustBuild(t, `agent A uses std.time { prompt: "p" }`)
	if again.Hash != a.Hash {
		t.Errorf("the hash of the same program must not change")
	}
}

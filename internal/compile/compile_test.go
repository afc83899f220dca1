package compile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
	"github.com/nexa-run/nexa/internal/schemacheck"
)

// build compiles in-memory files; main is the main file's name.
func build(t *testing.T, main string, files map[string]string, nexaPath ...string) (*ir.Program, Diagnostics) {
	t.Helper()
	opts := Options{ReadFile: MapFiles(files)}
	if len(nexaPath) > 0 {
		opts.NexaPath = nexaPath[0]
	}
	return Compile(main, opts)
}

// mustBuild compiles a single file and fails the test on any error.
func mustBuild(t *testing.T, src string) *ir.Program {
	t.Helper()
	prog, diags := build(t, "main.nx", map[string]string{"main.nx": src})
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%v", diags.Err())
	}
	checkSchemas(t, prog)
	return prog
}

// errorsOf compiles a single file and returns its errors, failing when
// there are none.
func errorsOf(t *testing.T, src string) Diagnostics {
	t.Helper()
	prog, diags := build(t, "main.nx", map[string]string{"main.nx": src})
	if !diags.HasErrors() {
		t.Fatalf("expected errors, got none (warnings: %v)", diags.Warnings())
	}
	if prog != nil {
		t.Fatalf("a program with errors must not be returned")
	}
	return diags.Errors()
}

// findDiag returns the first diagnostic with the code, failing if absent.
func findDiag(t *testing.T, ds Diagnostics, code string) Diagnostic {
	t.Helper()
	for _, d := range ds {
		if d.Code == code {
			return d
		}
	}
	t.Fatalf("no %q diagnostic in:\n%s", code, dump(ds))
	return Diagnostic{}
}

func dump(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String() + " [" + d.Code + "] hint=" + d.Hint + "\n")
	}
	return b.String()
}

// checkSchemas compiles every generated schema with a JSON Schema
// validator, so that what the model receives is a valid schema.
func checkSchemas(t *testing.T, p *ir.Program) {
	t.Helper()
	check := func(name string, raw json.RawMessage) {
		if _, err := schemacheck.Compile(raw); err != nil {
			t.Fatalf("%s: schema does not compile: %v\n%s", name, err, raw)
		}
	}
	for _, tl := range p.Tools {
		check("tool-"+tl.Name, tl.Parameters)
	}
	for _, pr := range p.Protocols {
		check("protocol-"+pr.Name, pr.Schema)
	}
}

const reviewNX = `@tool("Record reviewed text", requires_approval: true, risk_level: "high")
fn record_review(content: string): string {
    python! """return content"""
}

agent Reviewer uses record_review {
    prompt: "Prepare the review and request approval before recording it."
}
`

func TestReviewExample(t *testing.T) {
	p := mustBuild(t, reviewNX)
	if len(p.Tools) != 1 || len(p.Agents) != 1 {
		t.Fatalf("got %d tools, %d agents", len(p.Tools), len(p.Agents))
	}
	tl := p.Tool("record_review")
	if tl.Description != "Record reviewed text" || !tl.RequiresApproval || tl.Risk != "high" || !tl.NeedsApproval() {
		t.Errorf("tool settings wrong: %+v", tl)
	}
	if tl.Timeout != 60 || tl.Sandbox || tl.Idempotent || tl.Returns != "string" {
		t.Errorf("tool defaults wrong: %+v", tl)
	}
	want := `{"type":"object","properties":{"content":{"type":"string","description":"Parameter content"}},"required":["content"],"additionalProperties":false}`
	if string(tl.Parameters) != want {
		t.Errorf("schema\n got %s\nwant %s", tl.Parameters, want)
	}
	if tl.Body.Kind != ir.BodyPython || tl.Body.Python != "return content" {
		t.Errorf("body = %+v", tl.Body)
	}
	a := p.Agent("Reviewer")
	if a.SystemPrompt() != "Prepare the review and request approval before recording it." {
		t.Errorf("prompt = %q", a.SystemPrompt())
	}
	if strings.Join(a.Tools, ",") != "record_review" || a.ImplicitTools {
		t.Errorf("tools = %v implicit=%v", a.Tools, a.ImplicitTools)
	}
	if a.Retry != -1 || a.ToolCallStrategy != "auto" {
		t.Errorf("agent defaults: retry=%d strategy=%q", a.Retry, a.ToolCallStrategy)
	}
	if !strings.HasPrefix(p.Hash, "sha256:") || len(p.Hash) != 7+64 {
		t.Errorf("hash = %q", p.Hash)
	}
	if len(p.Files) != 1 || p.Files[0] != "main.nx" {
		t.Errorf("files = %v", p.Files)
	}
}

func TestParameterSchemas(t *testing.T) {
	p := mustBuild(t, `
protocol Point { x: int, y: "float" }
@tool("All the types")
fn f(
    a: string, b: str, c: int, d: float, e: number, g: bool, h: boolean,
    i: list[string], j: dict, k: dict[str, int], l: string?, m: Option[int],
    n: Point, o: int | string, p: string = "x", q: int = 3, r: float = 1.5,
    s: bool = true, t: list[int]?, u: float = -2, v: "int"
): dict { return "ok" }
agent A uses f { prompt: "p" }
`)
	var sch struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(p.Tool("f").Parameters, &sch); err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	cases := map[string]string{
		"a": `{"description":"Parameter a","type":"string"}`,
		"b": `{"description":"Parameter b","type":"string"}`,
		"c": `{"description":"Parameter c","type":"integer"}`,
		"d": `{"description":"Parameter d","type":"number"}`,
		"e": `{"description":"Parameter e","type":"number"}`,
		"g": `{"description":"Parameter g","type":"boolean"}`,
		"h": `{"description":"Parameter h","type":"boolean"}`,
		"i": `{"description":"Parameter i","items":{"type":"string"},"type":"array"}`,
		"j": `{"description":"Parameter j","type":"object"}`,
		"k": `{"additionalProperties":{"type":"integer"},"description":"Parameter k","type":"object"}`,
		"l": `{"description":"Parameter l","type":["string","null"]}`,
		"m": `{"description":"Parameter m","type":["integer","null"]}`,
		"n": `{"additionalProperties":false,"description":"Parameter n","properties":{"x":{"type":"integer"},"y":{"type":"number"}},"required":["x","y"],"type":"object"}`,
		"o": `{"anyOf":[{"type":"integer"},{"type":"string"}],"description":"Parameter o"}`,
		"p": `{"default":"x","description":"Parameter p","type":"string"}`,
		"q": `{"default":3,"description":"Parameter q","type":"integer"}`,
		"r": `{"default":1.5,"description":"Parameter r","type":"number"}`,
		"s": `{"default":true,"description":"Parameter s","type":"boolean"}`,
		"t": `{"description":"Parameter t","items":{"type":"integer"},"type":["array","null"]}`,
		"u": `{"default":-2,"description":"Parameter u","type":"number"}`,
		"v": `{"description":"Parameter v","type":"integer"}`,
	}
	for name, want := range cases {
		if got := js(sch.Properties[name]); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	if got := strings.Join(sch.Required, ","); got != "a,b,c,d,e,g,h,i,j,k,n,o,v" {
		t.Errorf("required = %s", got)
	}
	if p.Tool("f").Returns != "dict" {
		t.Errorf("returns = %q", p.Tool("f").Returns)
	}
	// property order follows the declaration
	raw := string(p.Tool("f").Parameters)
	if strings.Index(raw, `"a":`) > strings.Index(raw, `"v":`) {
		t.Errorf("properties not in declaration order: %s", raw)
	}
}

func TestParameterDocComments(t *testing.T) {
	p := mustBuild(t, `@tool("Search")
fn search(
    // The text to look for
    query: string,
    limit: int = 5, // At most this many results
) { python! """return query""" }
agent A uses search { prompt: "p" }
`)
	raw := string(p.Tool("search").Parameters)
	for _, want := range []string{`"description":"The text to look for"`, `"description":"At most this many results"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("missing %s in %s", want, raw)
		}
	}
}

func TestToolSettings(t *testing.T) {
	p := mustBuild(t, `@tool("S", risk_level: critical, requires_approval: "false", sandbox: true, timeout: "30", idempotent: true, category: "io")
fn s(): string { return "x" }
agent A uses s { prompt: "p" }`)
	tl := p.Tool("s")
	if tl.Risk != "critical" || tl.RequiresApproval || !tl.Sandbox || tl.Timeout != 30 || !tl.Idempotent || tl.Category != "io" {
		t.Errorf("settings: %+v", tl)
	}
	if !tl.NeedsApproval() {
		t.Errorf("critical risk must need approval")
	}
}

// parallel: false marks a tool whose calls run alone, in @tool and in a
// legacy tool block; a tool that does not say so may run beside others,
// and a value that is not a boolean is refused.
func TestParallelSetting(t *testing.T) {
	p := mustBuild(t, `@tool("Alone", parallel: false)
fn alone(): string { return "x" }
@tool("Beside", parallel: true)
fn beside(): string { return "x" }
@tool("Plain")
fn plain(): string { return "x" }
tool legacy { description: "d", parameters: {}, parallel: "false" }
agent A uses alone, beside, plain, legacy { prompt: "p" }`)
	for name, want := range map[string]bool{"alone": true, "beside": false, "plain": false, "legacy": true} {
		if got := p.Tool(name).Exclusive; got != want {
			t.Errorf("tool %s: Exclusive %v, want %v", name, got, want)
		}
	}
	d := findDiag(t, errorsOf(t, `@tool("d", parallel: "sometimes") fn f() { return "" }`), lang.CodeBadSetting)
	if !strings.Contains(d.Message, "parallel of tool f must be true or false") {
		t.Errorf("a non-boolean parallel: %s", d.Message)
	}
}

// Setting parallel: false changes the program hash (a resume under a
// program that changed it is refused), and leaving it out keeps the hash
// programs had before the setting existed.
func TestParallelSettingIsHashed(t *testing.T) {
	src := `@tool("d"%s)
fn f(): string { return "x" }
agent A uses f { prompt: "p" }`
	plain := mustBuild(t, fmt.Sprintf(src, ""))
	on := mustBuild(t, fmt.Sprintf(src, ", parallel: true"))
	off := mustBuild(t, fmt.Sprintf(src, ", parallel: false"))
	if plain.Hash == off.Hash {
		t.Errorf("parallel: false left the hash unchanged")
	}
	if on.Hash == off.Hash {
		t.Errorf("parallel: true and parallel: false hash alike")
	}
}

func TestToolSettingErrors(t *testing.T) {
	cases := []struct{ src, code, msg, hint string }{
		{`@tool("d", requires_approval: "maybe") fn f() { return "" }`, lang.CodeBadSetting, "requires_approval of tool f must be true or false", ""},
		{`@tool("d", risk_level: "hihg") fn f() { return "" }`, lang.CodeBadSetting, "risk_level of tool f must be low, medium, high or critical", `did you mean "high"?`},
		{`@tool("d", timeout: -5) fn f() { return "" }`, lang.CodeBadSetting, "timeout of tool f must be a positive whole number", ""},
		{`@tool("d", sandbox: 1) fn f() { return "" }`, lang.CodeBadSetting, "sandbox of tool f must be true or false", ""},
		{`@tool("") fn f() { return "" }`, lang.CodeMissingDesc, "tool f needs a non-empty description", ""},
		{`@tool() fn f() { return "" }`, lang.CodeMissingDesc, "tool f needs a non-empty description", ""},
		{`fn f() { return "" }`, lang.CodeMissingDesc, "fn f has no @tool", ""},
		{`@tool("d") fn f(x) { return "" }`, lang.CodeUntypedParam, "parameter `x` of tool f has no type", ""},
		{`@tool("d") fn f(x: strng) { return "" }`, lang.CodeUnknownType, "unknown type `strng`", "did you mean `string`?"},
		{`@tool("d") fn f(x: int = "three") { return "" }`, lang.CodeBadDefault, "default of parameter `x` is a string, but its type is integer", ""},
		{`@tool("d") fn f(x: int, x: str) { return "" }`, lang.CodeDuplicate, "duplicate parameter `x`", ""},
		{`@tool("d", timeout: 3, timeout: 4) fn f() { return "" }`, lang.CodeDuplicate, "setting `timeout` given twice", ""},
		{`@tool("d", category: 3) fn f() { return "" }`, lang.CodeBadSetting, "category of tool f must be a string, found the number 3", ""},
		{`@tool("d", approval_timeout: 0, requires_approval: true) fn f() { return "" }`, lang.CodeBadSetting, "approval_timeout of tool f must be a positive whole number of seconds, found the number 0", ""},
		{`@tool("d", approval_timeout: -30, requires_approval: true) fn f() { return "" }`, lang.CodeBadSetting, "approval_timeout of tool f must be a positive whole number of seconds", ""},
		{`@tool("d", approval_timeout: "1h", requires_approval: true) fn f() { return "" }`, lang.CodeBadSetting, "approval_timeout of tool f must be a positive whole number of seconds", ""},
		{`@tool("d", approval_timeout: 1.5, requires_approval: true) fn f() { return "" }`, lang.CodeBadSetting, "approval_timeout of tool f must be a positive whole number of seconds", ""},
		{`@tool("d", approval_timeout: true, requires_approval: true) fn f() { return "" }`, lang.CodeBadSetting, "approval_timeout of tool f must be a positive whole number of seconds", ""},
		{`tool t { description: "d", parameters: {}, requires_approval: "yes" }`, lang.CodeBadSetting, "requires_approval of tool t must be true or false", ""},
		{`tool t { description: "d", parameters: {}, returns: 3 }`, lang.CodeBadSetting, "returns of tool t must be a type name, found the number 3", ""},
		{`tool t { description: "d", parameters: {}, approval_timeout: "soon" }`, lang.CodeBadSetting, "approval_timeout of tool t must be a positive whole number of seconds", ""},
	}
	for _, c := range cases {
		errs := errorsOf(t, c.src)
		d := findDiag(t, errs, c.code)
		if !strings.Contains(d.Message, c.msg) {
			t.Errorf("%s\n message %q does not contain %q", c.src, d.Message, c.msg)
		}
		if c.hint != "" && d.Hint != c.hint {
			t.Errorf("%s\n hint %q, want %q", c.src, d.Hint, c.hint)
		}
		if d.Line != 1 || d.Column < 1 {
			t.Errorf("%s\n position %d:%d", c.src, d.Line, d.Column)
		}
	}
}

// A misspelt or unknown setting of a tool, in every form a tool is
// declared, is an error with the nearest known name suggested: a typo in
// requires_approval must never leave a tool runnable without approval.
func TestUnknownSettingIsError(t *testing.T) {
	cases := []struct{ src, msg, hint string }{
		{`@tool("d", requires_aproval: true) fn f() { return "" }`, "unknown setting `requires_aproval` of tool f", "did you mean `requires_approval`?"},
		{`@tool("d", risk: "high") fn f() { return "" }`, "unknown setting `risk` of tool f", "did you mean `risk_level`?"},
		{`@tool("d", requires_aproval = true) fn f() { return "" }`, "unknown setting `requires_aproval` of tool f", "did you mean `requires_approval`?"},
		{`@tool("d", aproval_timeout: 60) fn f() { return "" }`, "unknown setting `aproval_timeout` of tool f", "did you mean `approval_timeout`?"},
		{`@tool("d", permissions: "shell") fn f() { return "" }`, "unknown setting `permissions` of tool f", "known settings: description, risk_level, requires_approval, sandbox, timeout, approval_timeout, idempotent, parallel, category"},
		{`tool t { description: "d", parameters: {}, requires_aproval: true }`, "unknown property `requires_aproval` of tool t", "did you mean `requires_approval`?"},
		{`tool t { description: "d", parmeters: {} }`, "unknown property `parmeters` of tool t", "did you mean `parameters`?"},
		{`tool t { mcp: "stdio:srv", risk_levl: "high" }`, "unknown property `risk_levl` of tool t", "did you mean `risk_level`?"},
		{`tool t { description: "d", python: "t.py", sandbx: true }`, "unknown property `sandbx` of tool t", "did you mean `sandbox`?"},
	}
	for _, c := range cases {
		d := findDiag(t, errorsOf(t, c.src), lang.CodeUnknownSetting)
		if d.Message != c.msg || d.Hint != c.hint {
			t.Errorf("%s\n got %q (hint %q)\nwant %q (hint %q)", c.src, d.Message, d.Hint, c.msg, c.hint)
		}
		if d.Line != 1 || d.Column < 1 {
			t.Errorf("%s\n position %d:%d", c.src, d.Line, d.Column)
		}
	}
}

// approval_timeout takes whole seconds, bare or quoted, like timeout, in
// both tool forms; it reaches the IR and the canonical IR the hash covers,
// which leaves it out when unset so that older programs hash as before.
func TestApprovalTimeout(t *testing.T) {
	p := mustBuild(t, `@tool("D", requires_approval: true, approval_timeout: 900) fn deploy(): string { return "x" }
@tool("E", risk_level: high, approval_timeout: "60") fn erase(): string { return "x" }
@tool("F", requires_approval: true) fn fetch(): string { return "x" }
tool legacy { description: "L", parameters: {}, requires_approval: true, approval_timeout: 120 }
agent A uses deploy, erase, fetch, legacy { prompt: "p" }`)
	for name, want := range map[string]int{"deploy": 900, "erase": 60, "fetch": 0, "legacy": 120} {
		if got := p.Tool(name).ApprovalTimeout; got != want {
			t.Errorf("%s: ApprovalTimeout = %d, want %d", name, got, want)
		}
	}
	canon := string(CanonicalIR(p))
	if !strings.Contains(canon, `"name":"deploy"`) || strings.Count(canon, `"approval_timeout":`) != 3 ||
		!strings.Contains(canon, `"approval_timeout":900`) {
		t.Errorf("canonical IR does not carry approval_timeout:\n%s", canon)
	}
	// the canonical IR (and so the hash) changes with the value alone
	q := mustBuild(t, `@tool("D", requires_approval: true, approval_timeout: 901) fn deploy(): string { return "x" }
@tool("E", risk_level: high, approval_timeout: "60") fn erase(): string { return "x" }
@tool("F", requires_approval: true) fn fetch(): string { return "x" }
tool legacy { description: "L", parameters: {}, requires_approval: true, approval_timeout: 120 }
agent A uses deploy, erase, fetch, legacy { prompt: "p" }`)
	if string(CanonicalIR(q)) == canon || q.Hash == p.Hash {
		t.Errorf("approval_timeout 900 and 901 give the same canonical IR or hash")
	}
	if strings.Contains(string(CanonicalIR(mustBuild(t, `@tool("F") fn f(): string { return "x" }`))), "approval_timeout") {
		t.Errorf("a program without approval_timeout must encode without it")
	}
}

// approval_timeout on a tool that needs no approval by its own declaration
// is accepted with a warning saying when it applies.
func TestApprovalTimeoutWithoutApprovalWarns(t *testing.T) {
	for _, src := range []string{
		`@tool("d", approval_timeout: 60) fn f(): string { return "" }`,
		`tool f { description: "d", parameters: {}, approval_timeout: 60 }`,
	} {
		p, diags := build(t, "main.nx", map[string]string{"main.nx": src})
		if diags.HasErrors() || p == nil {
			t.Fatalf("%s: unexpected errors %v", src, diags.Errors())
		}
		w := findDiag(t, diags.Warnings(), lang.CodeNoEffect)
		if !strings.Contains(w.Message, "approval_timeout of tool f has an effect only when a call waits for approval") || w.Line != 1 {
			t.Errorf("%s: warning = %+v", src, w)
		}
		if p.Tool("f").ApprovalTimeout != 60 {
			t.Errorf("%s: ApprovalTimeout = %d", src, p.Tool("f").ApprovalTimeout)
		}
	}
}

func TestAgentProperties(t *testing.T) {
	p := mustBuild(t, `
@tool("t") fn t1(): string { return "a" }
@limit(max_tokens=2000) @timeout(seconds=120) @retry(max_attempts=3) @temperature(value=0.2)
agent Reviewer -> str uses t1 requires "input is text" ensures "output is short" {
    role: "careful reviewer",
    prompt: "Review it.",
    model: ["deepseek/deepseek-chat", fallback: "gpt-4o-mini"],
    max_tool_calls: 8,
    tool_call_strategy: required,
    timeout: 900,
    stream: false,
    output_format: "json",
    cache: true,
    context { source: upstream }
}`)
	a := p.Agent("Reviewer")
	if a.SystemPrompt() != "Role: careful reviewer. Review it." {
		t.Errorf("system prompt = %q", a.SystemPrompt())
	}
	if a.Model != "deepseek/deepseek-chat" || strings.Join(a.ModelFallbacks, ",") != "gpt-4o-mini" {
		t.Errorf("model = %q %v", a.Model, a.ModelFallbacks)
	}
	if a.MaxTokens != 2000 || a.Retry != 3 || a.Temperature == nil || *a.Temperature != 0.2 {
		t.Errorf("decorators not applied: %+v", a)
	}
	if a.Timeout != 900 {
		t.Errorf("property must win over @timeout: %d", a.Timeout)
	}
	if a.MaxToolCalls != 8 || a.ToolCallStrategy != "required" || a.Stream == nil || *a.Stream || a.OutputFormat != "json" {
		t.Errorf("properties: %+v", a)
	}
	if a.Properties["cache"] != true || a.Properties["max_tokens"] != int64(2000) || a.Properties["timeout"] != int64(900) {
		t.Errorf("Properties = %v", a.Properties)
	}
	if a.Returns != "str" || len(a.Requires) != 1 || a.Ensures[0] != "output is short" {
		t.Errorf("header: returns=%q requires=%v ensures=%v", a.Returns, a.Requires, a.Ensures)
	}
}

func TestAgentWarningsAndErrors(t *testing.T) {
	_, diags := build(t, "main.nx", map[string]string{"main.nx": `
@tool("t") fn t1(): string { return "a" }
@tool("t") fn t2(): string { return "b" }
agent A { prompt: "p", memory: "long" }`})
	if diags.HasErrors() {
		t.Fatalf("errors: %v", diags.Err())
	}
	w := findDiag(t, diags, lang.CodeImplicitTools)
	if !strings.Contains(w.Message, "agent A has no uses clause") || !strings.Contains(w.Message, "t1, t2") {
		t.Errorf("implicit warning = %q", w.Message)
	}
	w = findDiag(t, diags, lang.CodeNoEffect)
	if !strings.Contains(w.Message, "accepted, no effect in nexa agent") {
		t.Errorf("no-effect warning = %q", w.Message)
	}

	errs := errorsOf(t, `
@tool("t") fn record_review(): string { return "a" }
agent A uses record_reviw implements Missing { prompt: 3, tool_call_strategy: "sometimes", temperature: 7 }
@retyr(max_attempts=2) agent B uses record_review { prompt: "p" }`)
	d := findDiag(t, errs, lang.CodeUnknownTool)
	if d.Hint != "did you mean `record_review`?" || d.Line != 3 || d.Column != 14 {
		t.Errorf("unknown tool: %+v", d)
	}
	findDiag(t, errs, lang.CodeUnknownProtocol)
	findDiag(t, errs, lang.CodeBadSetting)
	d = findDiag(t, errs, lang.CodeBadDecorator)
	if d.Hint != "did you mean `@retry`?" {
		t.Errorf("decorator hint = %q", d.Hint)
	}
	if n := len(errs); n < 6 {
		t.Errorf("want every error reported, got %d:\n%s", n, dump(errs))
	}
}

func TestUsesKinds(t *testing.T) {
	p, diags := build(t, "main.nx", map[string]string{"main.nx": `
@tool("t") fn t1(): string { return "a" }
agent A uses t1, std.fs, mcp:"stdio:python3 server.py", "skills/review.md" { prompt: "p" }`})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	a := p.Agent("A")
	want := []ir.Use{{Kind: ir.UseTool, Name: "t1"}, {Kind: ir.UseStd, Name: "std.fs"}, {Kind: ir.UseMCP, Name: "stdio:python3 server.py"}, {Kind: ir.UseSkill, Name: "skills/review.md"}}
	if len(a.Uses) != len(want) {
		t.Fatalf("uses = %v", a.Uses)
	}
	for i := range want {
		if a.Uses[i] != want[i] {
			t.Errorf("use %d = %v, want %v", i, a.Uses[i], want[i])
		}
	}
	// std.fs brings in every tool of the namespace
	if strings.Join(a.Tools, ",") != "file_append,file_delete,file_edit,file_exists,file_list,file_read,file_write,t1" {
		t.Errorf("tools = %v", a.Tools)
	}
	findDiag(t, diags, lang.CodeSkill)
}

func TestProtocols(t *testing.T) {
	p := mustBuild(t, `protocol ReviewResult { score: "int", summary: "string", tags: list[str] }
agent R implements ReviewResult { prompt: "p" }`)
	want := `{"type":"object","properties":{"score":{"type":"integer"},"summary":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["score","summary","tags"],"additionalProperties":false}`
	if got := string(p.Protocol("ReviewResult").Schema); got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if p.Agent("R").Implements != "ReviewResult" {
		t.Errorf("implements = %q", p.Agent("R").Implements)
	}
	errs := errorsOf(t, `protocol P { a: P }`)
	findDiag(t, errs, lang.CodeUnknownType)
}

func TestDuplicateShowsBothPositions(t *testing.T) {
	_, diags := build(t, "main.nx", map[string]string{
		"main.nx": "include \"lib.nx\";\n@tool(\"a\") fn dup(): string { return \"a\" }\n",
		"lib.nx":  "\n\ntool dup { description: \"b\", parameters: { \"q\": \"string\" } }\n",
	})
	d := findDiag(t, diags.Errors(), lang.CodeDuplicate)
	if d.File != "main.nx" || d.Line != 2 || !strings.Contains(d.Message, "first declared at lib.nx:3:6") {
		t.Errorf("duplicate = %+v", d)
	}
	if len(d.Related) != 1 || d.Related[0].File != "lib.nx" || d.Related[0].Line != 3 {
		t.Errorf("related = %+v", d.Related)
	}
	if d.SourceLine == "" || d.Related[0].SourceLine == "" {
		t.Errorf("source lines missing: %+v", d)
	}
}

func TestIncludes(t *testing.T) {
	files := map[string]string{
		"app/main.nx":         "include \"tools/a.nx\";\ninclude \"shared.nx\"\ninclude \"secrets/dev.nxs\";\nagent A uses a, b, s { prompt: \"p\" }\n",
		"app/tools/a.nx":      "include \"../shared.nx\";\n@tool(\"a\") fn a(): string { return \"a\" }\ninclude \"b.nx\";",
		"app/tools/b.nx":      "@tool(\"b\") fn b(): string { return \"b\" }",
		"app/shared.nx":       "@tool(\"s\") fn s(): string { return \"s\" }",
		"app/secrets/dev.nxs": "KEY = \"v\"",
		"app/secrets.nxs":     "X = \"1\"",
	}
	p, diags := build(t, "app/main.nx", files)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if got := strings.Join(p.Files, " "); got != "app/main.nx app/tools/a.nx app/shared.nx app/tools/b.nx" {
		t.Errorf("files = %s", got)
	}
	if got := strings.Join(p.SecretFiles, " "); got != "app/secrets.nxs app/secrets/dev.nxs" {
		t.Errorf("secret files = %s", got)
	}
	if len(p.Tools) != 3 {
		t.Errorf("shared.nx included twice must be compiled once: %d tools", len(p.Tools))
	}
}

func TestIncludeNexaPath(t *testing.T) {
	files := map[string]string{
		"proj/main.nx":        "include \"stdlib/news.nx\";\nagent A uses search_news { prompt: \"p\" }",
		"lib1/other.nx":       "",
		"lib2/stdlib/news.nx": "@tool(\"n\") fn search_news(query: string): string { return query }",
	}
	if _, diags := build(t, "proj/main.nx", files); !diags.HasErrors() {
		t.Fatal("include must fail without NEXA_PATH")
	} else {
		d := findDiag(t, diags, lang.CodeIncludeNotFound)
		if !strings.Contains(d.Message, `"stdlib/news.nx"`) {
			t.Errorf("message = %q", d.Message)
		}
	}
	p, diags := build(t, "proj/main.nx", files, "lib1:lib2")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if p.Files[1] != "lib2/stdlib/news.nx" {
		t.Errorf("files = %v", p.Files)
	}
}

func TestIncludeCycle(t *testing.T) {
	_, diags := build(t, "a.nx", map[string]string{
		"a.nx": "include \"b.nx\";\n",
		"b.nx": "include \"c.nx\";\n",
		"c.nx": "\ninclude \"a.nx\";\n",
	})
	d := findDiag(t, diags, lang.CodeIncludeCycle)
	if d.Message != "include cycle: a.nx → b.nx → c.nx → a.nx" || d.File != "c.nx" || d.Line != 2 {
		t.Errorf("cycle = %+v", d)
	}
}

func TestMissingMainFile(t *testing.T) {
	_, diags := build(t, "nope.nx", map[string]string{})
	d := findDiag(t, diags, lang.CodeFileNotFound)
	if d.Message != "file nope.nx does not exist" {
		t.Errorf("message = %q", d.Message)
	}
}

func TestHash(t *testing.T) {
	files := map[string]string{"main.nx": reviewNX, "lib.nx": "// lib\n"}
	p1, _ := build(t, "main.nx", files)
	p2, _ := build(t, "main.nx", files)
	if p1.Hash != p2.Hash {
		t.Fatal("same sources must give the same hash")
	}
	// the directory the program lives in does not matter
	p3, _ := build(t, "elsewhere/main.nx", map[string]string{"elsewhere/main.nx": reviewNX})
	if p3.Hash != p1.Hash {
		t.Error("hash depends on the location of the program")
	}
	// a comment change changes the hash although the IR is the same
	p4, _ := build(t, "main.nx", map[string]string{"main.nx": reviewNX + "// note\n"})
	if p4.Hash == p1.Hash {
		t.Error("a source byte change must change the hash")
	}
	// an included file's bytes count
	withInc := map[string]string{"main.nx": "include \"lib.nx\";\n" + reviewNX, "lib.nx": "// a\n"}
	p5, _ := build(t, "main.nx", withInc)
	withInc["lib.nx"] = "// b\n"
	p6, _ := build(t, "main.nx", withInc)
	if p5.Hash == p6.Hash {
		t.Error("an include's bytes must change the hash")
	}
	// secrets are not part of it
	s1, _ := build(t, "main.nx", map[string]string{"main.nx": reviewNX, "secrets.nxs": "K = \"1\""})
	s2, _ := build(t, "main.nx", map[string]string{"main.nx": reviewNX, "secrets.nxs": "K = \"2\""})
	if s1.Hash != s2.Hash {
		t.Error("secrets must not change the hash")
	}
}

func TestAllErrorsOfAFileReported(t *testing.T) {
	errs := errorsOf(t, `@tool("a") fn a(x) { return "" }

agent B uses nope { prompt: "p" }

agent C {
    prompt: "unclosed"

@tool("d", sandbox: "perhaps") fn d(): string { return "" }
`)
	for _, code := range []string{lang.CodeUntypedParam, lang.CodeUnknownTool, lang.CodeSyntax, lang.CodeBadSetting} {
		findDiag(t, errs, code)
	}
}

// TestHostileInput: deep nesting, binary data and truncated programs give
// positioned errors through the whole compiler, never a panic.
func TestHostileInput(t *testing.T) {
	const n = 50000
	inputs := map[string]string{
		"deep braces":   "agent A { x: " + strings.Repeat("{", n) + strings.Repeat("}", n) + " }",
		"deep parens":   "@tool(\"d\") fn f() { return " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + " }",
		"deep brackets": "protocol P { a: " + strings.Repeat("list[", n) + "int" + strings.Repeat("]", n) + " }",
		"deep quoted":   "protocol P { a: \"" + strings.Repeat("list[", n) + "int" + strings.Repeat("]", n) + "\" }",
		"deep unclosed": strings.Repeat("[", n),
		"binary":        "\x00\x01\xff\xfeagent\x00{" + strings.Repeat("\xc3\x28", 1000),
		"truncated":     reviewNX[:len(reviewNX)/2],
	}
	for name, src := range inputs {
		t.Run(name, func(t *testing.T) {
			prog, diags := build(t, "in.nx", map[string]string{"in.nx": src})
			if prog != nil || !diags.HasErrors() {
				t.Fatalf("want errors, got program=%v diags=%v", prog != nil, diags)
			}
			d := diags.Errors()[0]
			if d.File != "in.nx" || d.Line < 1 || d.Column < 1 || d.Message == "" {
				t.Errorf("error without position: %+v", d)
			}
		})
	}
}

// TestNativeBodies checks lowering and the constructs it refuses.
func TestNativeBodies(t *testing.T) {
	p := mustBuild(t, `@tool("t") fn t(q: string, n: int = 1) {
    x = "a" + q;
    if (n > 1) { return x } else if (n == 1) { return "one" } else { print(x) }
    return
}`)
	body := p.Tool("t").Body
	if body.Kind != ir.BodyNative || len(body.Native) != 3 {
		t.Fatalf("body = %+v", body)
	}
	b := ir.CanonicalJSON(ir.StmtsJSON(body.Native))
	want := `[{"kind":"assign","name":"x","value":{"kind":"binary","op":"+","l":{"kind":"literal","value":"a"},"r":{"kind":"name","name":"q"}}},{"kind":"if","cond":{"kind":"binary","op":">","l":{"kind":"name","name":"n"},"r":{"kind":"literal","value":1}},"then":[{"kind":"return","value":{"kind":"name","name":"x"}}],"else":[{"kind":"if","cond":{"kind":"binary","op":"==","l":{"kind":"name","name":"n"},"r":{"kind":"literal","value":1}},"then":[{"kind":"return","value":{"kind":"literal","value":"one"}}],"else":[{"kind":"print","value":{"kind":"name","name":"x"}}]}]},{"kind":"return","value":null}]`
	if string(b) != want {
		t.Errorf("native\n got %s\nwant %s", b, want)
	}
	cases := []struct{ body, msg string }{
		{`for each x in items { print(x) }`, "`for` (for loop) is not supported in a native tool body"},
		{`while (true) { break; }`, "`while` (while loop) is not supported"},
		{`x = len(q);`, "a function call (`len(…)`) is not supported"},
		{`x = q[0];`, "indexing with `[…]` is not supported"},
		{`return q ?? "x";`, "the null-coalescing operator `??` is not supported"},
		{`return "#{q ?? 1}";`, "the interpolation `#{q ?? 1}`"},
		{`python! """return 1"""
    return 2`, "has a python! block, so it may contain nothing else"},
		{`return z;`, "unknown name `z`"},
		{`q.x = 1;`, "assignment to anything but a plain name is not supported"},
	}
	for _, c := range cases {
		errs := errorsOf(t, "@tool(\"t\") fn t(q: string) {\n    "+c.body+"\n}")
		if !strings.Contains(errs[0].Message, c.msg) {
			t.Errorf("%s\n got %q\nwant %q", c.body, errs[0].Message, c.msg)
		}
		if errs[0].Line != 2 && !strings.HasPrefix(c.body, "python!") {
			t.Errorf("%s: line %d", c.body, errs[0].Line)
		}
		if errs[0].Code == lang.CodeUnsupported && !strings.Contains(errs[0].Hint, "python!") {
			t.Errorf("%s: hint %q does not suggest python!", c.body, errs[0].Hint)
		}
	}
}

func TestDedent(t *testing.T) {
	cases := map[string]string{
		"return content": "return content",
		"\n    x = 1\n    if x:\n        y = 2\n": "x = 1\nif x:\n    y = 2",
		"\nx = 1\nreturn x\n":                     "x = 1\nreturn x",
		"import os\n    return os.sep\n    ":      "import os\nreturn os.sep",
		"\n\t\tx = 1\n\n\t\treturn x\n\t":         "x = 1\n\nreturn x",
	}
	for in, want := range cases {
		if got := Dedent(in); got != want {
			t.Errorf("Dedent(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestMoreDiagnostics covers the remaining error and warning paths.
func TestMoreDiagnostics(t *testing.T) {
	cases := []struct {
		src, code, msg string
		warning        bool
	}{
		{`tool t { parameters: { "q": "string" } }`, lang.CodeMissingDesc, "tool t needs a non-empty description", false},
		{`tool t { description: "d", parameters: { "q": "strin" } }`, lang.CodeUnknownType, "unknown type `strin`", false},
		{`tool t { description: "d", parameters: ["q"] }`, lang.CodeBadSetting, "parameters of tool t must be an object", false},
		{`tool t { description: "d", mcp: "stdio:x", python: "a.py" }`, lang.CodeBadBody, "cannot be both an MCP server and a Python file", false},
		{`tool t { mcp: "npm:server" }`, lang.CodeBadSetting, "neither a stdio: command nor an http(s) URL", true},
		{`agent A uses std.fss { prompt: "p" }`, lang.CodeUnknownTool, "unknown built-in namespace `std.fss`", true},
		{`@tool("d") fn f(x: dict[int, str]) { return "" }`, lang.CodeUnknownType, "dictionary keys must be strings", false},
		{`@tool("d") fn f(x: Option[int, str]) { return "" }`, lang.CodeUnknownType, "Option takes one type argument, found 2", false},
		{`@tool("d") fn f(x: int[str]) { return "" }`, lang.CodeUnknownType, "type `int` takes no type arguments", false},
		{`@tool("d") fn f(x: "no such") { return "" }`, lang.CodeUnknownType, `"no such" is not a type`, false},
		{`@tool("d") fn f(): Strng { return "" }`, lang.CodeUnknownType, "unknown type `Strng` in the return type of tool f", false},
		{`@tool("d", "extra") fn f() { return "" }`, lang.CodeBadSetting, "unexpected positional argument in @tool", false},
		{`@tool("d") @cache fn f() { return "" }`, lang.CodeBadDecorator, "unknown decorator @cache on fn f", false},
		{`@limit(tokens=3) agent A { prompt: "p" }`, lang.CodeBadDecorator, "@limit takes one argument, max_tokens", false},
		{`agent A { model: [1, 2] }`, lang.CodeBadSetting, "model list of agent A holds model names", false},
		{`agent A { max_tool_calls: -1 }`, lang.CodeBadSetting, "max_tool_calls of agent A must be a whole number ≥ 0, found the number -1", false},
		{`agent A { stream: "yes" }`, lang.CodeBadSetting, "stream of agent A must be true or false", false},
		{`agent A { output_format: "xml" }`, lang.CodeBadSetting, "output_format of agent A must be \"json\" or \"text\"", false},
		{`agent A { prompt: "p", prompt: "q" }`, lang.CodeDuplicate, "property `prompt` given twice in agent A", false},
		{`agent A { promt: "p" }`, lang.CodeUnknownSetting, "unknown property `promt` of agent A", false},
		{`agent A { max_tool_call: 3 }`, lang.CodeUnknownSetting, "unknown property `max_tool_call` of agent A", false},
		{`agent A { cache: true }`, lang.CodeNoEffect, "property `cache` of agent A accepted, no effect in nexa agent", true},
		{`agent A { gadget: 1 }`, lang.CodeNoEffect, "property `gadget` of agent A accepted, no effect in nexa agent", true},
		{`agent A uses B { prompt: "p" }
agent B { prompt: "q" }`, lang.CodeUnknownTool, "agent A uses unknown tool `B`", false},
		{`protocol P { a: int, a: str }`, lang.CodeDuplicate, "field `a` appears twice in protocol P", false},
		{`include "missing.nx";`, lang.CodeIncludeNotFound, `included file "missing.nx" not found`, false},
		{`include "keys.nxs";`, lang.CodeIncludeNotFound, `included secrets file "keys.nxs" not found`, true},
		{`protocol P { a: int }
protocol P { b: int }`, lang.CodeDuplicate, "duplicate protocol `P`: first declared at main.nx:1:10", false},
		{`flow main {}
flow main {}`, lang.CodeDuplicate, "duplicate flow `main`", false},
	}
	for _, c := range cases {
		_, diags := build(t, "main.nx", map[string]string{"main.nx": c.src})
		list := diags.Errors()
		if c.warning {
			list = diags.Warnings()
			if diags.HasErrors() {
				t.Errorf("%s: unexpected errors %v", c.src, diags.Errors())
				continue
			}
		}
		found := false
		for _, d := range list {
			if d.Code == c.code && strings.Contains(d.Message, c.msg) {
				found = true
				if d.Line < 1 || d.Column < 1 {
					t.Errorf("%s: no position: %+v", c.src, d)
				}
			}
		}
		if !found {
			t.Errorf("%s\n want %s %q, got:\n%s", c.src, c.code, c.msg, dump(diags))
		}
	}
	// an agent's name in uses gets a specific hint
	_, diags := build(t, "main.nx", map[string]string{"main.nx": "agent A uses Bee { prompt: \"p\" }\nagent Bee { prompt: \"q\" }"})
	if d := findDiag(t, diags, lang.CodeUnknownTool); d.Hint != "Bee is an agent; uses lists tools" {
		t.Errorf("hint = %q", d.Hint)
	}
}

// TestTypesAndAliases: semantic types, Result and unit.
func TestTypesAndAliases(t *testing.T) {
	p := mustBuild(t, `type Email = str @ "a valid address"
type Emails = list[Email]
protocol R { ok: Result[str, int], nothing: unit }
@tool("d") fn f(to: Emails, r: R): string { return "" }`)
	raw := string(p.Tool("f").Parameters)
	for _, want := range []string{
		`"to":{"type":"array","items":{"type":"string","description":"a valid address"},"description":"Parameter to"}`,
		`"ok":{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
		`"nothing":{"type":"null"}`,
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("missing %s in\n%s", want, raw)
		}
	}
	errs := errorsOf(t, "type A = B\ntype B = A\n@tool(\"d\") fn f(x: A) { return \"\" }")
	findDiag(t, errs, lang.CodeUnknownType)
}

// TestStringsEndToEnd: the escape rule as a user sees it in the IR.
func TestStringsEndToEnd(t *testing.T) {
	p := mustBuild(t, `agent A {
    role: "a \"careful\" reviewer",
    prompt: "Line one\nstill line one",
    model: """raw \n model"""
}`)
	a := p.Agent("A")
	if a.Role != `a "careful" reviewer` || a.Prompt != `Line one\nstill line one` || a.Model != `raw \n model` {
		t.Errorf("role=%q prompt=%q model=%q", a.Role, a.Prompt, a.Model)
	}
}

// TestRemoveMargin: textwrap.dedent, which the runtime applies to python!
// bodies (also to hand-built IR).
func TestRemoveMargin(t *testing.T) {
	cases := map[string]string{
		"a\n  b":               "a\n  b",
		"  a\n    b\n  c":      "a\n  b\nc",
		"\n    a\n\n    b\n  ": "\na\n\nb\n",
		"\ta\n\t\tb":           "a\n\tb",
		"  a\r\n  b":           "a\nb",
	}
	for in, want := range cases {
		if got := ir.RemoveMargin(in); got != want {
			t.Errorf("RemoveMargin(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBuiltinTypesResolve: every name of the builtin type table is a type a
// parameter can have (the table and resolveTerm cannot drift apart), and
// an unknown name is suggested from the same table.
func TestBuiltinTypesResolve(t *testing.T) {
	args := map[string]string{"list": "[int]", "dict": "[str, int]", "Option": "[int]", "Optional": "[int]", "Result": "[int, str]"}
	for name := range builtinTypes {
		src := fmt.Sprintf("@tool(\"d\") fn f(a: %s%s) { return 1 }", name, args[name])
		if _, diags := Compile("t.nx", Options{ReadFile: MapFiles(map[string]string{"t.nx": src})}); diags.HasErrors() {
			t.Errorf("%s: %v", name, diags.Err())
		}
	}
	src := "@tool(\"d\") fn f(a: Optonal) { return 1 }"
	_, diags := Compile("t.nx", Options{ReadFile: MapFiles(map[string]string{"t.nx": src})})
	if errs := diags.Errors(); len(errs) != 1 || errs[0].Hint != "did you mean `Optional`?" {
		t.Errorf("diagnostics = %v", errs)
	}
}

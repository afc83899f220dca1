package lang

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// sample is a program touching every construct the parser knows.
const sample = `include "tools/review_tools.nx";
use config default;

/* a tool */
@tool("Record reviewed text", requires_approval: true, risk_level: "high", sandbox: false, timeout: 30)
fn record_review(content: string, score: int = 3, tags: list[string]?, meta: dict[str, int], u: int | string, o: Option[str]): string {
    python! """
    return content
    """
}

@tool("Search") fn web_search(query: string) -> string {
    q = "Results for: #{query}";
    if (query == "x") { return "a"; } else if (query != "b") { print("no") } else { return q + "!" }
    return q
}

tool echo_tool { description: "Echo", parameters: { "text": "string" } }
tool remote { mcp: "stdio:python3 server.py" }
tool legacy_py { python: "impl.py" }

@limit(max_tokens=2000) @timeout(seconds=120)
@retry(max_attempts=3) @temperature(value=0.2)
agent Reviewer -> str uses record_review, std.fs, mcp:"stdio:python3 s.py", "skill.md" implements ReviewResult requires "a" ensures "b" {
    role: "careful reviewer",
    prompt: """multi
line""",
    model: ["deepseek/deepseek-chat", fallback: "gpt"],
    context: "a property named context",
    uses: 3,
    max_tool_calls: 8, timeout: 900,
    context { source: upstream, inherit: [messages, artifacts] }
    n: -1e3
    obj: { "a": 1, b: [true, false], c: null_like }
}

protocol ReviewResult { score: "int", summary: string; tags: list[str], }
flow main(x: int) -> str requires x > 0 { print "hi"; r = A.run("t") |>> [B, C] &>> D; }
test "my test" { assert true; }
type Email = str @ "valid email"
job SendEmail on "emails" (retry: 2) { perform(user_id) { print(user_id) } }
server 8080 { route GET "/chat" => ChatBot }
db app = connect("sqlite://:memory:")
auth a = enable_auth("{}")
kv store = open("kv.db")
struct Point { x: Int, y: Int }
enum Color { Red, Green(v) }
trait Printable { fn format() }
impl Printable for Point { fn format() { return "x" } }
spawn(worker())
parallel([a, b])
race([a, b])
channel()
after(5, x)
schedule(10, y)
defer cleanup();
match x { 1 => "one", _ => "other" }
`

func TestParseEveryConstruct(t *testing.T) {
	f, diags := Parse("s.nx", []byte(sample))
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%v", diags.Err())
	}
	var got []string
	for _, d := range f.Decls {
		got = append(got, d.DeclKind()+":"+d.DeclName())
	}
	want := []string{
		"include:tools/review_tools.nx", "use_config:default", "tool:record_review", "tool:web_search",
		"tool:echo_tool", "tool:remote", "tool:legacy_py", "agent:Reviewer", "protocol:ReviewResult",
		"flow:main", "test:my test", "type:Email", "job:SendEmail", "server:8080", "db:app", "auth:a",
		"kv:store", "struct:Point", "enum:Color", "trait:Printable", "impl:Printable for Point",
		"spawn:(worker())", "parallel:([a, b])", "race:([a, b])", "channel:()", "after:(5, x)",
		"schedule:(10, y)", "defer:cleanup();", "match:x",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("declarations:\n got %q\nwant %q", got, want)
	}
	tool := f.Decls[2].(*ToolFn)
	if len(tool.Params) != 6 || tool.Params[1].Default == nil || !tool.Params[2].Type.Alts[0].Optional {
		t.Errorf("params parsed wrong: %+v", tool.Params)
	}
	if tool.Params[4].Type.String() != "int | string" || tool.Params[5].Type.String() != "Option[str]" {
		t.Errorf("types: %q %q", tool.Params[4].Type, tool.Params[5].Type)
	}
	ws := f.Decls[3].(*ToolFn)
	if len(ws.Body.Stmts) != 3 || ws.Body.Stmts[1].If == nil || len(ws.Body.Stmts[1].If.Arms) != 2 {
		t.Errorf("native body parsed wrong")
	}
	ag := f.Decls[7].(*Agent)
	if len(ag.Decorators) != 4 || len(ag.Uses) != 4 || ag.Implements.Name != "ReviewResult" || len(ag.Clauses) != 2 {
		t.Errorf("agent header parsed wrong: %+v", ag)
	}
	keys := []string{}
	for _, it := range ag.Items {
		if it.Prop != nil {
			keys = append(keys, it.Prop.Key.Name())
		} else {
			keys = append(keys, "{context}")
		}
	}
	if strings.Join(keys, ",") != "role,prompt,model,context,uses,max_tool_calls,timeout,{context},n,obj" {
		t.Errorf("agent items = %v", keys)
	}
	if ag.Items[1].Prop.Value.Str.Value() != "multi\nline" {
		t.Errorf("triple-quoted prompt = %q", ag.Items[1].Prop.Value.Str.Value())
	}
}

// TestSyntaxErrors checks the message, position and recovery of typical
// mistakes.
func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		src, msg  string
		line, col int
		hint      string // checked when set
	}{
		{"agent A {\n  prompt \"x\"\n}", "expected `:` or `{`, found string \"x\"", 2, 10, ""},
		{"agent A uses {\n}", "expected a name or a string, found `{`", 1, 14, `uses lists tool names, std.NS namespaces, mcp:"…" servers and "file.md" skills, separated by commas`},
		{"agent A uses t x {\n}", "expected `:`, `{`, `,`, `implements`, `requires` or `ensures`, found `x`", 1, 16, "the agent header is: decorators, agent NAME, -> Type, uses …, implements P, requires/ensures, then `{`"},
		{"@tool(\"d\") fn f() x {}", "expected `:`, `->` or `{`, found `x`", 1, 19, ""},
		{"@tool(\"d\") fn f(a b) {}", "expected `:`, `=`, `,` or `)`, found `b`", 1, 19, ""},
		{"@tool(\"d\") fn f(a: int { return a }", "expected `)` to close this `(`, found end of file", 1, 16, ""},
		{"protocol P { a: list[int }", "expected `]` to close the `[` at line 1, found `}`", 1, 26, ""},
		{"protocol P { a: list[int) }", "expected `]` to close the `[` at line 1, found `)`", 1, 25, ""},
		{"agent A { model: [\"a\" \"b\"] }", "expected `,` or `]`, found string \"b\"", 1, 23, ""},
		{"agent A -> { }", "expected a type (string, int, float, bool, list[T], dict[K, V], a protocol name, …), found `{`", 1, 12, ""},
		{"@tool(\"d\") fn f() { return 1 +; }", "expected an expression, found `;`", 1, 31, ""},
		{"protocol P { a int }", "expected `:`, found `int`", 1, 16, ""},
		{"agent A {\n  prompt: \"x\"", "expected `}` to close this `{`, found end of file", 1, 9, ""},
		{"agent A { x: (1 }", "expected `)` to close the `(` at line 1, found `}`", 1, 17, ""},
		{"@tool(\"d\")\nagent", "expected a name, found end of file", 2, 6, ""},
		{"@limit(max_tokens=3)\nflow main {}", "expected `fn` or `agent` after the decorators, found `flow`", 2, 1, ""},
		{"}", "expected a declaration (agent, @tool fn, tool, protocol, flow, include, use config, test, type, …), found `}`", 1, 1, ""},
	}
	for _, c := range cases {
		_, diags := Parse("e.nx", []byte(c.src))
		if len(diags) == 0 {
			t.Errorf("%q: no error", c.src)
			continue
		}
		d := diags[0]
		if d.Message != c.msg || d.Line != c.line || d.Column != c.col || (c.hint != "" && d.Hint != c.hint) {
			t.Errorf("%q\n got %d:%d %s (hint %q)\nwant %d:%d %s (hint %q)", c.src, d.Line, d.Column, d.Message, d.Hint, c.line, c.col, c.msg, c.hint)
		}
	}
}

// TestRecovery: an error in one declaration does not hide the next ones.
func TestRecovery(t *testing.T) {
	src := "agent A { prompt \"x\" }\nagent B { prompt: }\nagnet C {}\nprotocol P { a: int }\n@tool(\"d\") fn f( { }\nagent D { prompt: \"ok\" }\n"
	f, diags := Parse("r.nx", []byte(src))
	lines := []int{}
	for _, d := range diags {
		lines = append(lines, d.Line)
	}
	if len(diags) != 4 || lines[0] != 1 || lines[1] != 2 || lines[2] != 3 || lines[3] != 6 {
		t.Errorf("want errors on lines 1, 2, 3, 6; got %v", diags)
	}
	var names []string
	for _, d := range f.Decls {
		names = append(names, d.DeclKind()+":"+d.DeclName())
	}
	if strings.Join(names, " ") != "agent:A agent:B protocol:P tool:f agent:D" {
		t.Errorf("decls = %v", names)
	}
	if _, ok := f.Decls[4].(*Agent); !ok {
		t.Errorf("agent D after the errors must parse")
	}
}

// TestDeepNesting: 50,000 levels of each bracket give a positioned error,
// not a stack overflow.
func TestDeepNesting(t *testing.T) {
	const n = 50000
	for _, open := range []string{"{", "(", "["} {
		for _, wrap := range []string{"%s", "agent A { x: %s }", "@tool(\"d\") fn f(x: int) { return %s }", "flow main { %s }", "@tool(\"d\") fn f(x: \"%s\") {}"} {
			deep := strings.Repeat(open, n) + strings.Repeat(closer(open), n)
			src := strings.Replace(wrap, "%s", deep, 1)
			_, diags := Parse("deep.nx", []byte(src))
			if !diags.HasErrors() {
				if strings.Contains(wrap, `"%s"`) {
					continue // inside a string the brackets are text; the compiler reports the type
				}
				t.Errorf("%s: no error", wrap)
				continue
			}
			d := diags[0]
			if d.Line != 1 || d.Column < 1 {
				t.Errorf("%s: error without position: %+v", wrap, d)
			}
		}
	}
	// unclosed
	_, diags := Parse("deep.nx", []byte("agent A { x: "+strings.Repeat("[", n)))
	codes := map[string]int{}
	for _, d := range diags {
		codes[d.Code]++
	}
	if codes[CodeTooDeep] != 1 || codes[CodeSyntax] != 2 || len(diags) != 3 {
		t.Errorf("unclosed deep nesting: want one too_deep and the outermost and innermost unclosed brackets, got %v", diags)
	}
	// a quoted type nested deeply
	if _, d := ParseType(Position{Filename: "q", Line: 1, Column: 1}, strings.Repeat("list[", n)+"int"+strings.Repeat("]", n)); len(d) == 0 {
		t.Errorf("deep quoted type must be rejected")
	}
}

// TestArbitraryInput: random bytes, every truncation of a real program,
// and garbage in string-heavy positions never panic and every diagnostic
// has a position.
func TestArbitraryInput(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	check := func(src []byte) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic on %q: %v", src, r)
			}
		}()
		_, diags := Parse("in.nx", src)
		for _, d := range diags {
			if d.Line < 1 || d.Column < 1 || d.Message == "" || d.Code == "" {
				t.Fatalf("bad diagnostic %+v for %q", d, src)
			}
		}
		if n := len(diags.Errors()); n > MaxErrorsPerFile+1 {
			t.Fatalf("%d errors for one file", n)
		}
	}
	for i := 0; i < 300; i++ {
		b := make([]byte, rng.Intn(2000))
		rng.Read(b)
		check(b)
	}
	for i := 0; i <= len(sample); i += 7 {
		check([]byte(sample[:i]))
	}
	// mismatched brackets in bulk (a quadratic recovery would hang here)
	check([]byte("agent A {" + strings.Repeat("(", 20000) + strings.Repeat("]", 20000) + "}"))
	check([]byte("flow f {" + strings.Repeat("(]", 20000) + "}"))
	check([]byte(strings.Repeat("@a(b) x ", 20000)))
	check([]byte(strings.Repeat("@a(", 20000)))
	alphabet := []string{"{", "}", "(", ")", "[", "]", "\"", `"""`, "//", "/*", "*/", "agent", "tool", "@", "fn", ":", ",", ";", "x", "\n", "python!", "if", "else", "-", "1e3"}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for j := rng.Intn(60); j > 0; j-- {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
			b.WriteByte(' ')
		}
		check([]byte(b.String()))
	}
}

func TestTooManyErrorsIsCapped(t *testing.T) {
	src := strings.Repeat("agent { }\n", 500)
	_, diags := Parse("many.nx", []byte(src))
	last := diags[len(diags)-1]
	if last.Code != CodeTooMany || !strings.Contains(last.Message, "more not shown") {
		t.Errorf("last = %+v", last)
	}
}

// FuzzParse: no input makes the parser panic, and diagnostics always carry
// a position.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("agent A uses x { prompt: \"p\" }"))
	f.Add([]byte("@tool(\"d\") fn f(a: list[int]?, b: dict[str, A | B] = 3) { if (a) { return \"#{a.b}\" } }"))
	f.Add([]byte("\"unterminated"))
	f.Add([]byte("{{{{[[[(((("))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := Parse("fuzz.nx", src)
		if file == nil {
			t.Fatal("nil file")
		}
		for _, d := range diags {
			if d.Line < 1 || d.Column < 1 {
				t.Fatalf("diagnostic without position: %+v", d)
			}
		}
	})
}

// TestClauseTokens: an expression clause keeps its tokens (the compiler
// writes them back as text), without comments and up to the next clause.
func TestClauseTokens(t *testing.T) {
	f, diags := Parse("c.nx", []byte("agent A requires len(x) /* c */ > 0 ensures \"ok\" {\n prompt: \"p\"\n}"))
	if len(diags) > 0 {
		t.Fatal(diags.Err())
	}
	a := f.Decls[0].(*Agent)
	var words []string
	for _, tk := range a.Clauses[0].Tokens {
		words = append(words, tk.Value)
	}
	if got := strings.Join(words, " "); got != "requires len ( x ) > 0" {
		t.Errorf("clause tokens = %q", got)
	}
	if p := a.Clauses[1].Pos; p.Line != 1 || p.Column != 37 || p.Filename != "c.nx" {
		t.Errorf("second clause at %s", p)
	}
}

// TestManyDeclarations parses a file whose declarations fill several of
// participle's token streams (spanStream), one of them longer than a
// stream, with other kinds, comments and a broken declaration in between:
// every tool is read with its own name, parameters and line, and the
// broken one is reported on its line.
func TestManyDeclarations(t *testing.T) {
	type want struct {
		name         string
		params, line int
	}
	var (
		b     strings.Builder
		wants []want
		line  = 1
	)
	write := func(s string) {
		b.WriteString(s)
		line += strings.Count(s, "\n")
	}
	var brokenLines []int
	for i := 0; i < 60; i++ {
		n := i % 7
		if i == 31 {
			n = batchTokens // alone longer than one stream
		}
		params := make([]string, n)
		for j := range params {
			params[j] = fmt.Sprintf("p%d: int = %d", j, j)
		}
		write(fmt.Sprintf("// tool %d\n@tool(\"tool %d\", timeout: %d)\n", i, i, i+1))
		wants = append(wants, want{fmt.Sprintf("t%d", i), n, line})
		write(fmt.Sprintf("fn t%d(%s\n): string { return \"x\" }\n\n", i, strings.Join(params, ", // a comment\n")))
		switch i % 10 {
		case 3:
			write("flow f { a = 1; }\n\n")
		case 7:
			brokenLines = append(brokenLines, line+1)
			write("@tool(\"broken\")\nfn broken(x: ): string { return \"x\" }\n\n")
		}
	}
	f, diags := Parse("many.nx", []byte(b.String()))
	var errLines []int
	for _, d := range diags.Errors() {
		errLines = append(errLines, d.Line)
	}
	if fmt.Sprint(errLines) != fmt.Sprint(brokenLines) {
		t.Fatalf("want errors on lines %v (the broken declarations), got %v", brokenLines, diags)
	}
	var got []want
	for _, d := range f.Decls {
		if fn, ok := d.(*ToolFn); ok {
			got = append(got, want{fn.Name.Name, len(fn.Params), fn.Name.Pos.Line})
		}
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d tools, want %d", len(got), len(wants))
	}
	for i := range wants {
		if got[i] != wants[i] {
			t.Errorf("tool %d: got %+v, want %+v", i, got[i], wants[i])
		}
	}
}

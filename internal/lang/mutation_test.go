package lang

import (
	"math/rand"
	"testing"
)

// parseSeeds are declarations, valid and broken at every point of the
// grammar.
var parseSeeds = []string{
	sample,
	"@tool(\"d\") fn f(a: list[int]?, b: dict[str, A | B] = 3) { if (a) { return \"#{a.b}\" } }",
	"@tool(\"d\", risk_level: \"medium\", timeout: 30)\nfn f(query: string, limit: int = 5, tags: list[str]?): string { python! \"\"\"x\"\"\" }",
	"@tool(\"d\") fn (x) {}", "@tool(\"d\") fn f x {}", "@tool(\"d\") fn f(1) {}", "@tool(\"d\") fn f(): {}",
	"@tool(\"d\") fn f() -> 3 {}", "@tool(\"d\") fn f() x", "@tool(\"d\") fn f(a b) {}", "@tool(\"d\") fn f(a,, b) {}",
	"@tool(\"d\") fn f(a, 1) {}", "@tool(\"d\") fn f(a: ) {}", "@tool(\"d\") fn f(a = ) {}", "@tool(\"d\", x: ) fn f() {}",
	"@tool(\"d\" 3) fn f() {}", "fn f() { return }", "fn f(a: list<int, str>, b: List<x>?) { }",
	"fn f() { for x in y { } return 1 }", "fn f() { x.y = 3; x[1] = 2; f(a=1, 2); [1,2]; (1 + 2) * -3 }",
	"fn f() { if x { } else if y { } else { } else { } }", "fn f() { match = 3; loop(1); try { } catch (e) { } }",
	"fn f(a: \"int\", b: \"list[str]\") {}", "fn f(a: int,) {}", "fn f(a: int) -> \"list[A]\" {}",
	"/* c */ @tool(\"d\") // x\n fn /*y*/ f( // doc a\n a: int, // doc a2\n /* doc b */ b: str ) // tail\n : string { python! \"\"\"x\"\"\" }",
	"@tool(\"d\") fn f() { python! 3 }", "@tool(\"d\") fn f() { print }", "@tool(\"d\") fn f() { a.3 }",
	"@tool(\"d\") fn f(a: int = -x) {}", "@tool(\"d\") fn f(a: int = [1, x: 2, 3:4]) {}",
	"@tool(\"d\") fn f(a: int = {a: 1 b: 2}) {}", "@tool(\"d\") fn f(a: int = {a 1}) {}",
	"@tool(std.x, a.b: 3, \"q\": 4) fn f() {}", "@tool fn f() {}", "@tool() fn f() {}", "@a @b(1) @c(x=2) fn f() {}",
	"@tool(\"d\") fn f(a: A | B? | \"C\") -> list[A|B] { }", "fn f(a: int = true, b: x.y.z, c: -1.5e3) { x += 1; y -= 2 }",
	"fn f() { return not a and b or !c }", "fn f() { a |>> b &>> c ?? d |> e >> g }",
	"agent A -> P uses t, std.fs, mcp:\"stdio:x\", \"f.md\" implements P requires \"x\" { prompt: \"p\", context { a: 1 } }",
	"protocol P { a: list[int]?, b: \"str\" }", "tool T { description: \"d\", parameters: { a: \"int\" } }",
	"include \"x.nx\";", "use config prod;", "type E = str @ \"an address\"",
}

// TestParseMutations: on the seeds and on random mutations of them, the
// parser never panics, returns a file, positions every diagnostic, and
// reports an error for every declaration it could not read.
func TestParseMutations(t *testing.T) {
	check := func(src string) {
		t.Helper()
		file, diags := Parse("m.nx", []byte(src))
		if file == nil {
			t.Fatalf("%q: nil file", src)
		}
		for _, d := range diags {
			if d.Line < 1 || d.Column < 1 {
				t.Fatalf("%q: diagnostic without position: %+v", src, d)
			}
		}
		for _, d := range file.Decls {
			if _, broken := d.(*BrokenDecl); broken && !diags.HasErrors() {
				t.Fatalf("%q: a declaration is broken but no error is reported", src)
			}
		}
	}
	for _, src := range parseSeeds {
		check(src)
	}
	rng := rand.New(rand.NewSource(1))
	pool := []string{"(", ")", "{", "}", "[", "]", ",", ":", ";", "=", "->", "?", "|", "@", "fn", "x", "\"s\"", "3", "-",
		".", "<", ">", "return", "if", "else", "python!", "\"\"\"t\"\"\"", "// c\n", "/* c */", "for", "print", "\n",
		"agent", "uses", "requires", "context", "protocol", "include", "type"}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for k := 0; k < n; k++ {
		src := parseSeeds[rng.Intn(len(parseSeeds))]
		for m := 0; m < 1+rng.Intn(3); m++ {
			toks, _ := Lex("m.nx", []byte(src))
			if len(toks) < 2 {
				break
			}
			tk := toks[rng.Intn(len(toks)-1)]
			a, b := tk.Pos.Offset, min(tk.Pos.Offset+len(tk.Value), len(src))
			switch rng.Intn(3) {
			case 0:
				src = src[:a] + src[b:]
			case 1:
				src = src[:a] + pool[rng.Intn(len(pool))] + " " + src[a:]
			case 2:
				src = src[:a] + pool[rng.Intn(len(pool))] + src[b:]
			}
		}
		check(src)
	}
}

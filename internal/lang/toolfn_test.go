package lang

import (
	"math/rand"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
)

// toolFnGrammar is participle's parser for the grammar written in the
// struct tags of ToolFn: the specification parseToolFn implements by hand.
var toolFnGrammar = build[ToolFn]()

// byGrammar parses the @tool functions of src with toolFnGrammar, as Parse
// did before @tool functions were parsed by hand, and returns each one's
// declaration and diagnostics.
func byGrammar(src string) ([]Decl, []Diagnostics) {
	tl, _ := lex("g.nx", []byte(src))
	sp := newSplitter(tl)
	var decls []Decl
	var diags []Diagnostics
	for _, s := range sp.split() {
		if s.kind != "tool" || s.broken {
			continue
		}
		var toks []Token
		for i := s.start; i < s.end; i++ {
			if tl.typ(i) != Comment {
				toks = append(toks, tl.at(i))
			}
		}
		sepAt := tl.pos(min(s.end, tl.len()-1))
		toks = append(toks, Token{Type: Sep, Pos: sepAt})
		pl, err := lexer.Upgrade(&tokenLexer{toks: toks, eof: sepAt}, Comment)
		if err != nil {
			panic(err)
		}
		first := tl.at(s.start)
		name, nameAt := declName(tl, s, s.kw)
		fn, err := parseWith(toolFnGrammar, pl, pl.MakeCheckpoint())
		switch {
		case err != nil:
			decls = append(decls, &BrokenDecl{Pos: first.Pos, Kind: "tool", Name: name, NameAt: nameAt})
			diags = append(diags, Diagnostics{syntaxDiag(err, tl, s)})
		default:
			attachParamDocs(fn, tl, s.start, s.end)
			if ds := normalize(fn); len(ds) > 0 {
				decls = append(decls, &BrokenDecl{Pos: first.Pos, Kind: "tool", Name: name, NameAt: nameAt})
				diags = append(diags, ds)
			} else {
				decls = append(decls, fn)
				diags = append(diags, nil)
			}
		}
	}
	return decls, diags
}

// byHand parses the same declarations the way Parse does.
func byHand(src string) ([]Decl, []Diagnostics) {
	tl, _ := lex("g.nx", []byte(src))
	sp := newSplitter(tl)
	hs := &handState{n: &nodes{}}
	var decls []Decl
	var diags []Diagnostics
	for _, s := range sp.split() {
		if s.kind != "tool" || s.broken {
			continue
		}
		d, ds := parseSpan(tl, s, nil, lexer.Checkpoint{}, hs)
		decls = append(decls, d)
		diags = append(diags, ds)
	}
	return decls, diags
}

func checkToolFnGrammar(t *testing.T, src string) {
	t.Helper()
	wantDecls, wantDiags := byGrammar(src)
	gotDecls, gotDiags := byHand(src)
	if !reflect.DeepEqual(gotDecls, wantDecls) {
		t.Fatalf("%q: the hand-written parser gives another AST than the grammar", src)
	}
	if !reflect.DeepEqual(gotDiags, wantDiags) {
		t.Fatalf("%q: diagnostics differ from the grammar's\n got %v\nwant %v", src, gotDiags, wantDiags)
	}
}

// toolFnSeeds are @tool functions, valid and broken at every point of the
// grammar.
var toolFnSeeds = []string{
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
}

// TestToolFnMatchesGrammar: parseToolFn gives exactly what participle gives
// for the grammar in ToolFn's struct tags — the same AST, or the same error
// at the same place — on the seeds and on mutations of them.
func TestToolFnMatchesGrammar(t *testing.T) {
	for _, src := range toolFnSeeds {
		checkToolFnGrammar(t, src)
	}
	rng := rand.New(rand.NewSource(1))
	pool := []string{"(", ")", "{", "}", "[", "]", ",", ":", ";", "=", "->", "?", "|", "@", "fn", "x", "\"s\"", "3", "-",
		".", "<", ">", "return", "if", "else", "python!", "\"\"\"t\"\"\"", "// c\n", "/* c */", "for", "print", "\n"}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for k := 0; k < n; k++ {
		src := toolFnSeeds[1+rng.Intn(len(toolFnSeeds)-1)]
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
		checkToolFnGrammar(t, src)
	}
}

// FuzzToolFnMatchesGrammar is TestToolFnMatchesGrammar on any input.
func FuzzToolFnMatchesGrammar(f *testing.F) {
	for _, s := range toolFnSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if strings.Count(src, "(")+strings.Count(src, "[")+strings.Count(src, "{") > 2*MaxDepth {
			return // the recursive reference parser is not meant for that
		}
		checkToolFnGrammar(t, src)
	})
}

// TestStripCommentStart: the hand-written stripCommentStart removes what
// the regular expression it replaced removed.
func TestStripCommentStart(t *testing.T) {
	re := regexp.MustCompile(`^(/{2,}|/\*+)\s?`)
	for _, c := range []string{"// a", "//a", "/// a", "////\tb", "/* a */", "/** a */", "/***\n * a\n */", "/*", "//",
		"/", "x // y", "/ * a", "//\va", "//\r\nx", "/*\fa*/", "", "//  two", "/*/ a"} {
		if got, want := stripCommentStart(c), re.ReplaceAllString(c, ""); got != want {
			t.Errorf("stripCommentStart(%q) = %q, want %q", c, got, want)
		}
	}
}

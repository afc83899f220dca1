package lang

import (
	"strings"
	"testing"
)

// kinds renders tokens as TYPE:value for compact comparisons.
func kinds(toks []Token) string {
	names := map[int]string{int(Ident): "id", int(String): "str", int(RawString): "raw", int(Number): "num",
		int(Punct): "p", int(Comment): "c", int(Invalid): "bad", int(EOF): "eof"}
	var parts []string
	for _, t := range toks {
		if t.EOF() {
			continue
		}
		parts = append(parts, names[int(t.Type)]+":"+t.Value)
	}
	return strings.Join(parts, " ")
}

func TestLexBasics(t *testing.T) {
	cases := map[string]string{
		`agent A { x: -1e3, y: 0.7 }`:    `id:agent id:A p:{ id:x p:: p:- num:1e3 p:, id:y p:: num:0.7 p:}`,
		"a // c \"x\"\nb":                `id:a c:// c "x" id:b`,
		"a /* multi\nline */ b":          "id:a c:/* multi\nline */ id:b",
		`x -> y => z == != <= >= && ||`:  `id:x p:-> id:y p:=> id:z p:== p:!= p:<= p:>= p:&& p:||`,
		`a |>> [b] &>> c >> d |> e ?? f`: `id:a p:|>> p:[ id:b p:] p:&>> id:c p:>> id:d p:|> id:e p:?? id:f`,
		`python! """x"""`:                `p:python! raw:"""x"""`,
		`"// not a comment"`:             `str:"// not a comment"`,
		`"""/* raw */ "q" """`:           `raw:"""/* raw */ "q" """`,
		`1.x 3e 12`:                      `num:1 p:. id:x num:3 id:e num:12`,
		`mcp:"stdio:x"`:                  `id:mcp p:: str:"stdio:x"`,
		"\uFEFFagent":                    `id:agent`,
	}
	for src, want := range cases {
		toks, diags := Lex("t.nx", []byte(src))
		if len(diags) > 0 {
			t.Errorf("%q: unexpected diagnostics %v", src, diags)
		}
		if got := kinds(toks); got != want {
			t.Errorf("%q\n got %s\nwant %s", src, got, want)
		}
	}
}

func TestLexPositions(t *testing.T) {
	toks, _ := Lex("t.nx", []byte("a\n  \"é\" b\n\"multi\nline\" c"))
	want := []struct{ line, col int }{{1, 1}, {2, 3}, {2, 7}, {3, 1}, {4, 7}}
	for i, w := range want {
		if toks[i].Pos.Line != w.line || toks[i].Pos.Column != w.col {
			t.Errorf("token %d %q at %d:%d, want %d:%d", i, toks[i].Value, toks[i].Pos.Line, toks[i].Pos.Column, w.line, w.col)
		}
	}
}

// TestStringEscapeRule pins the documented escape rule: raw by default,
// escapes decoded only in a string that uses \" as an escaped quote.
func TestStringEscapeRule(t *testing.T) {
	cases := []struct{ src, want string }{
		{`"a\nb"`, `a\nb`},                   // raw: a 2.x string keeps its backslash
		{`"C:\tmp\"`, `C:\tmp\`},             // 2.x: the string ends at the quote
		{`"C:\tmp\", "x"`, `C:\tmp\`},        // followed by a comma: still the end
		{`"say \"hi\" now"`, `say "hi" now`}, // escaped quotes
		{`"He said \"hi\""`, `He said "hi"`}, // escaped quote before the closing one
		{`"tab\tand \"q\" \\ \n"`, "tab\tand \"q\" \\ \n"},
		{`"\d+ \"x\""`, `\d+ "x"`}, // unknown escapes stay literal
		{`"a\\"`, `a\\`},           // no escaped quote: raw
		{"\"multi\nline\"", "multi\nline"},
		{`""`, ``},
		{`"""a "quoted" b"""`, `a "quoted" b`},
		{`"""say "hi""""`, `say "hi"`},
		{`"""\n stays \"raw\" """`, `\n stays \"raw\" `},
	}
	for _, c := range cases {
		toks, diags := Lex("t.nx", []byte(c.src))
		if len(diags) > 0 {
			t.Errorf("%s: %v", c.src, diags)
			continue
		}
		if got := StringValue(toks[0].Value); got != c.want {
			t.Errorf("%s\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

func TestLexErrors(t *testing.T) {
	cases := []struct {
		src, msg  string
		line, col int
	}{
		{"agent A {\n  prompt: \"open", "unterminated string", 2, 11},
		{"x \"\"\"never closed", "unterminated triple-quoted string", 1, 3},
		{"a /* no end", "unterminated /* comment", 1, 3},
		{"a\n  § b", "unexpected character '§' (U+00A7)", 2, 3},
		{"a \x00\x01\x02 b", "unexpected control character U+0000", 1, 3},
		{"a \xff b", "unexpected invalid UTF-8 byte 0xff", 1, 3},
		{"x: 'single", `unexpected "'": single quotes and backquotes do not make strings`, 1, 4},
		{"a # b", `unexpected character "#" outside a string`, 1, 3},
	}
	for _, c := range cases {
		_, diags := Lex("t.nx", []byte(c.src))
		if len(diags) != 1 {
			t.Errorf("%q: want one diagnostic, got %v", c.src, diags)
			continue
		}
		d := diags[0]
		if d.Message != c.msg || d.Line != c.line || d.Column != c.col {
			t.Errorf("%q: got %d:%d %q, want %d:%d %q", c.src, d.Line, d.Column, d.Message, c.line, c.col, c.msg)
		}
	}
}

func TestClosest(t *testing.T) {
	cands := []string{"record_review", "publish", "search_news", "risk_level"}
	cases := map[string]string{
		"record_reviw":  "record_review",
		"recrod_review": "record_review",
		"publsh":        "publish",
		"risk":          "risk_level",
		"zzz":           "",
		"search":        "search_news", // a prefix up to `_`
	}
	for name, want := range cases {
		if got := Closest(name, cands); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
	if Distance("hihg", "high") != 1 {
		t.Errorf("a swap of neighbours is one edit")
	}
}

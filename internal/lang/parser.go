package lang

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// MaxErrorsPerFile bounds the diagnostics reported for one file so that
// binary input gives a short report.
const MaxErrorsPerFile = 50

func build[G any]() *participle.Parser[G] {
	return participle.MustBuild[G](
		participle.Lexer(definition{}),
		participle.Elide("Comment"),
		// No backtracking: the grammar is LL(1), so a declaration that
		// fails after its first token reports the real error position
		// ("expected `:`, found …") instead of a shallow one.
		participle.UseLookahead(0),
	)
}

// The participle parsers of the declarations nexa compiles; each one's
// grammar is in the struct tags of its type (ast.go).
var (
	toolFnParser     = build[ToolFn]()
	agentParser      = build[Agent]()
	legacyToolParser = build[LegacyTool]()
	protocolParser   = build[Protocol]()
	includeParser    = build[Include]()
	useConfigParser  = build[UseConfig]()
	typeDeclParser   = build[TypeDecl]()
)

// ParseType reads a type written inside a string (a quoted parameter type
// such as "list[str]"); every position of the result is at.
func ParseType(at Position, text string) (*TypeExpr, Diagnostics) {
	bad := func(shown string) Diagnostics {
		return Diagnostics{{File: at.Filename, Line: at.Line, Column: at.Column, Code: CodeSyntax,
			Message: "expected a type, found " + strconvQuote(shown), Severity: SeverityError}}
	}
	toks, diags := Lex(at.Filename, []byte(text))
	if len(diags) > 0 || nestingDepth(toks) > MaxDepth {
		return nil, bad(truncate(text, 40))
	}
	for i := range toks {
		toks[i].Pos = at
	}
	toks[len(toks)-1] = Token{Type: Sep, Pos: at}
	pl, err := lexer.Upgrade(&tokenLexer{toks: toks, eof: at}, Comment)
	if err != nil {
		return nil, bad(text)
	}
	lex := cursor{pl}
	if t := lex.Peek(); t.Type != Ident && t.Type != String && t.Type != RawString {
		return nil, bad(text)
	}
	te := &TypeExpr{}
	if err := parseType(lex, te); err != nil || lex.Peek().Type != Sep {
		return nil, bad(text)
	}
	return te, nil
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// nestingDepth is the deepest bracket nesting of a token list.
func nestingDepth(toks []Token) int {
	depth, deepest := 0, 0
	for _, t := range toks {
		if t.Type != Punct {
			continue
		}
		switch t.Value {
		case "(", "[", "{", "<":
			depth++
			deepest = max(deepest, depth)
		case ")", "]", "}", ">":
			depth--
		}
	}
	return deepest
}

// Parse reads one source file. It always returns a File holding every
// declaration it could read (declarations with errors appear as
// *BrokenDecl), together with all diagnostics of the file.
func Parse(path string, src []byte) (*File, Diagnostics) {
	tl, diags := lex(path, src)
	sp := newSplitter(tl)
	spans := sp.split()
	diags = append(diags, sp.diags...)
	f := &File{Path: path}
	fs := &spanStream{tl: tl, spans: spans}
	for k, s := range spans {
		d, ds := parseSpan(tl, s, fs, k)
		diags = append(diags, ds...)
		if d != nil {
			f.Decls = append(f.Decls, d)
		}
	}
	diags.Sort([]string{path})
	if n := len(diags.Errors()); n > MaxErrorsPerFile {
		kept := make(Diagnostics, 0, MaxErrorsPerFile+1)
		errs := 0
		for _, d := range diags {
			if d.IsError() {
				errs++
				if errs > MaxErrorsPerFile {
					continue
				}
			}
			kept = append(kept, d)
		}
		last := kept[len(kept)-1]
		kept = append(kept, Diagnostic{
			File: path, Line: last.Line, Column: last.Column, Code: CodeTooMany,
			Message:  fmt.Sprintf("too many errors: %d more not shown", n-MaxErrorsPerFile),
			Hint:     "is this a .nx source file?",
			Severity: SeverityError,
		})
		diags = kept
	}
	return f, diags
}

// participleKinds are the declaration kinds nexa compiles, each parsed by
// the participle grammar of its type; the other kinds are kept as
// OtherDecl.
var participleKinds = map[string]bool{
	"tool": true, "agent": true, "legacy_tool": true, "protocol": true,
	"include": true, "use_config": true, "type": true,
}

// spanStream feeds participle the declarations of a file in batches of
// about batchTokens tokens: one token stream per batch holds the tokens of
// each declaration to parse, without comments (the grammar elides them
// anyway), each followed by a Sep token where the declaration ends, so
// that a grammar that stops early is reported at the right place.
// Participle copies tokens into its stream by appending; one stream per
// declaration costs a map and a copy each, one for the whole file regrows
// a slice of megabytes, and batches avoid both.
type spanStream struct {
	tl     *tokenList
	spans  []span
	pl     *lexer.PeekingLexer
	starts []int // raw index in pl of each span's first token, by span index
	next   int   // first span not yet in a stream
}

// batchTokens is about how many tokens one stream holds.
const batchTokens = 4096

// at returns the stream positioned at the first token of span k, which
// must be a kind participle parses; spans are parsed in order.
func (ss *spanStream) at(k int) *lexer.PeekingLexer {
	if k >= ss.next {
		ss.fill(k)
	}
	for int(ss.pl.RawCursor()) < ss.starts[k] {
		ss.pl.Next()
	}
	return ss.pl
}

// fill builds the stream of the batch starting at span k.
func (ss *spanStream) fill(k int) {
	toks := make([]Token, 0, batchTokens+64)
	if ss.starts == nil {
		ss.starts = make([]int, len(ss.spans))
	}
	for ss.next = k; ss.next < len(ss.spans) && len(toks) < batchTokens; ss.next++ {
		s := ss.spans[ss.next]
		if !participleKinds[s.kind] || s.broken {
			continue
		}
		ss.starts[ss.next] = len(toks)
		for i := s.start; i < s.end; i++ {
			if ss.tl.typ(i) != Comment {
				toks = append(toks, ss.tl.at(i))
			}
		}
		toks = append(toks, Token{Type: Sep, Pos: ss.tl.pos(min(s.end, ss.tl.len()-1))})
	}
	pl, err := lexer.Upgrade(&tokenLexer{toks: toks, eof: ss.tl.pos(ss.tl.len() - 1)})
	if err != nil {
		panic(err) // tokenLexer never fails
	}
	ss.pl = pl
}

func parseSpan(tl *tokenList, s span, fs *spanStream, k int) (Decl, Diagnostics) {
	first := tl.at(s.start)
	kw := s.kw
	name, nameAt := declName(tl, s, kw)
	if s.broken {
		return &BrokenDecl{Pos: first.Pos, Kind: kindLabel(s.kind), Name: name, NameAt: nameAt}, nil
	}
	var (
		d   Decl
		err error
	)
	switch s.kind {
	case "tool":
		var v *ToolFn
		v, err = parseWith(toolFnParser, fs.at(k))
		if err == nil {
			attachParamDocs(v, tl, s.start, s.end)
			d = v
		}
	case "agent":
		d, err = parseWith(agentParser, fs.at(k))
	case "legacy_tool":
		d, err = parseWith(legacyToolParser, fs.at(k))
	case "protocol":
		d, err = parseWith(protocolParser, fs.at(k))
	case "include":
		d, err = parseWith(includeParser, fs.at(k))
	case "use_config":
		d, err = parseWith(useConfigParser, fs.at(k))
	case "type":
		d, err = parseWith(typeDeclParser, fs.at(k))
	case "decorated":
		t := tl.at(kw)
		return &BrokenDecl{Pos: first.Pos, Kind: "decorated"}, Diagnostics{{
			File: t.Pos.Filename, Line: t.Pos.Line, Column: t.Pos.Column, Code: CodeSyntax,
			Message:  fmt.Sprintf("expected `fn` or `agent` after the decorators, found %s", describeAt(tl, kw, s)),
			Hint:     "decorators such as @tool(…) and @limit(…) go right before `fn` or `agent`",
			Severity: SeverityError,
		}}
	default:
		return &OtherDecl{Pos: first.Pos, Kind: s.kind, Name: name, NameAt: nameAt}, nil
	}
	if err != nil {
		return &BrokenDecl{Pos: first.Pos, Kind: kindLabel(s.kind), Name: name, NameAt: nameAt},
			Diagnostics{syntaxDiag(err, tl, s)}
	}
	if ds := normalize(d); len(ds) > 0 {
		return &BrokenDecl{Pos: first.Pos, Kind: kindLabel(s.kind), Name: name, NameAt: nameAt}, ds
	}
	return d, nil
}

// parseWith parses one declaration from its token stream; the declaration
// must end exactly at its Sep token.
func parseWith[G any](p *participle.Parser[G], pl *lexer.PeekingLexer) (*G, error) {
	g, err := p.ParseFromLexer(pl, participle.AllowTrailing(true))
	if err != nil {
		return nil, err
	}
	if next := pl.Peek(); next.Type != Sep {
		return nil, &participle.UnexpectedTokenError{Unexpected: *next}
	}
	return g, nil
}

func nextSignificant(tl *tokenList, i, end int) int {
	for j := i; j < end; j++ {
		if tl.typ(j) != Comment {
			return j
		}
	}
	return end
}

// declName reads the name of a declaration from its tokens, best effort.
func declName(tl *tokenList, s span, kw int) (string, Position) {
	n := nextSignificant(tl, kw+1, s.end)
	at := tl.at(kw).Pos
	if n >= s.end {
		return "", at
	}
	t := tl.at(n)
	switch s.kind {
	case "include":
		if t.Type == String || t.Type == RawString {
			return StringValue(t.Value), t.Pos
		}
		return "", at
	case "use_config":
		m := nextSignificant(tl, n+1, s.end)
		if t.Value == "config" && m < s.end && tl.at(m).Type == Ident {
			return tl.at(m).Value, tl.at(m).Pos
		}
		return "", at
	case "test":
		if t.Type == String || t.Type == RawString {
			return StringValue(t.Value), t.Pos
		}
	case "server":
		if t.Type == Number {
			return t.Value, t.Pos
		}
	case "impl":
		m := nextSignificant(tl, n+1, s.end)
		o := nextSignificant(tl, m+1, s.end)
		if t.Type == Ident && m < s.end && tl.at(m).Value == "for" && o < s.end && tl.at(o).Type == Ident {
			return t.Value + " for " + tl.at(o).Value, t.Pos
		}
	case "match", "defer", "spawn", "parallel", "race", "channel", "after", "schedule":
		return summarize(tl, kw+1, s.end), t.Pos
	}
	if t.Type == Ident {
		return t.Value, t.Pos
	}
	return "", at
}

// summarize renders tokens as short text for anonymous declarations.
func summarize(tl *tokenList, from, to int) string {
	var b strings.Builder
	for i := from; i < to && b.Len() < 40; i++ {
		t := tl.at(i)
		if t.Type == Comment {
			continue
		}
		if t.Value == "{" {
			break
		}
		if b.Len() > 0 && (t.Type == Ident || t.Type == Number || t.Type == String) {
			last := b.String()[b.Len()-1]
			if isIdentPart(last) || last == '"' || last == ',' {
				b.WriteByte(' ')
			}
		}
		b.WriteString(strings.ReplaceAll(t.Value, "\n", " "))
	}
	out := b.String()
	if len(out) > 40 {
		out = truncate(out, 37) + "…"
	}
	return strings.TrimSpace(out)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !validCut(s, n) {
		n--
	}
	return s[:n]
}

func validCut(s string, n int) bool { return n >= len(s) || s[n]&0xC0 != 0x80 }

func describeAt(tl *tokenList, i int, s span) string {
	if i >= s.end {
		return Describe(tl.at(min(s.end, tl.len()-1)))
	}
	return Describe(tl.at(i))
}

var expectedRe = regexp.MustCompile(`^unexpected token "((?s).*)" \(expected (.*)\)$`)

// syntaxDiag turns a participle error into an "expected X, found Y"
// diagnostic at the offending token.
func syntaxDiag(err error, tl *tokenList, s span) Diagnostic {
	var perr participle.Error
	pos := tl.at(s.start).Pos
	msg := err.Error()
	expected := ""
	var found string
	if errors.As(err, &perr) {
		pos = perr.Position()
		msg = perr.Message()
		var ute *participle.UnexpectedTokenError
		if errors.As(err, &ute) {
			found = Describe(ute.Unexpected)
			if ute.Unexpected.EOF() || ute.Unexpected.Type == Sep {
				found = describeAt(tl, s.end, s)
			}
			if m := expectedRe.FindStringSubmatch(ute.Message()); m != nil {
				expected = friendlyExpected(m[2])
			} else if ute.Expect != "" {
				expected = friendlyExpected(ute.Expect)
			}
		}
	}
	d := Diagnostic{File: pos.Filename, Line: pos.Line, Column: pos.Column, Code: CodeSyntax, Severity: SeverityError}
	if d.File == "" {
		d.File = tl.at(s.start).Pos.Filename
	}
	switch {
	case expected != "" && found != "":
		d.Message = fmt.Sprintf("expected %s, found %s", expected, found)
	case found != "":
		d.Message = fmt.Sprintf("unexpected %s in %s", found, kindLabel(s.kind))
	default:
		d.Message = fmt.Sprintf("%s (in %s)", msg, kindLabel(s.kind))
	}
	d.Hint = syntaxHint(s.kind, expected, found)
	return d
}

func syntaxHint(kind, expected, found string) string {
	switch {
	case kind == "tool" && strings.Contains(expected, "`fn`"):
		return "a @tool(…) decorator is followed by `fn name(params): type { … }`"
	case kind == "agent" && expected == "`{`":
		return "the agent header is: decorators, agent NAME, -> Type, uses …, implements P, requires/ensures, then `{`"
	case strings.Contains(expected, "`}`") && found == "end of file":
		return "a closing `}` is missing"
	case strings.HasPrefix(found, "string ") && strings.Contains(expected, "`:`"):
		return "separate a property name from its value with `:`"
	}
	return ""
}

// stripCommentStart removes the opening marker of a comment — two or more
// slashes, or a slash and one or more stars — and one white-space character
// after it (what the regular expression `^(/{2,}|/\*+)\s?` removes).
func stripCommentStart(c string) string {
	var i int
	switch {
	case strings.HasPrefix(c, "//"):
		for i = 2; i < len(c) && c[i] == '/'; i++ {
		}
	case strings.HasPrefix(c, "/*"):
		for i = 2; i < len(c) && c[i] == '*'; i++ {
		}
	default:
		return c
	}
	if i < len(c) && strings.IndexByte(" \t\n\f\r", c[i]) >= 0 {
		i++
	}
	return c[i:]
}

// commentText strips comment markers.
func commentText(c string) string {
	c = stripCommentStart(c)
	c = strings.TrimSuffix(c, "*/")
	var lines []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "*")
		l = strings.TrimSpace(l)
		if l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " ")
}

// attachParamDocs gives each parameter the text of a comment on the line(s)
// right before it inside the parameter list, or after it on its own line.
func attachParamDocs(fn *ToolFn, tl *tokenList, start, end int) {
	if len(fn.Params) == 0 {
		return
	}
	// the parameter list spans from the first param to the last one's line
	open := -1
	for i := start; i < end; i++ {
		if tl.is(i, Ident, "fn") {
			open = i
			break
		}
	}
	if open < 0 {
		return
	}
	depth := 0
	var comments []Token
	for i := open; i < end; i++ {
		if tl.is(i, Punct, "(") {
			depth++
		}
		if tl.is(i, Punct, ")") {
			depth--
			if depth == 0 {
				// a trailing comment on the line of the `)` belongs to
				// the last parameter
				if i+1 < end && tl.typ(i+1) == Comment && tl.line(i+1) == tl.line(i) {
					comments = append(comments, tl.at(i+1))
				}
				break
			}
		}
		if depth > 0 && tl.typ(i) == Comment {
			comments = append(comments, tl.at(i))
		}
	}
	for _, c := range comments {
		text := commentText(c.Value)
		if text == "" {
			continue
		}
		var target *Param
		for _, p := range fn.Params {
			if p.Pos.Line == c.Pos.Line && p.Pos.Offset < c.Pos.Offset {
				target = p // trailing comment on the parameter's line
			}
		}
		if target == nil {
			for _, p := range fn.Params {
				if p.Pos.Offset > c.Pos.Offset {
					target = p // leading comment
					break
				}
			}
		}
		if target != nil {
			if target.Doc != "" {
				target.Doc += " "
			}
			target.Doc += text
		}
	}
}

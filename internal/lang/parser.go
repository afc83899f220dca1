package lang

import (
	"fmt"
	"strings"
	"sync"

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

// declParser parses one declaration from a token stream that ends it with
// a Sep token.
type declParser func(pl *lexer.PeekingLexer) (Decl, error)

// declParsing is how one kind of declaration is parsed.
type declParsing struct {
	parse declParser
	// build builds the kind's participle parser now, if no parse or
	// build did yet; a parse waits for a build under way.
	build func()
}

// parserOf returns the parser of a declaration type; its grammar is in the
// struct tags of the type (ast.go). The participle parser is built on the
// first declaration of that kind, not at start-up: building all of them
// costs about 0.6 MB and 4,000 allocations, which a command that parses
// nothing (version, runs list) should not pay.
func parserOf[G any, P interface {
	*G
	Decl
}]() declParsing {
	p := sync.OnceValue(build[G])
	return declParsing{
		parse: func(pl *lexer.PeekingLexer) (Decl, error) {
			g, err := parseWith(p(), pl)
			if err != nil {
				return nil, err
			}
			return P(g), nil
		},
		build: func() { p() },
	}
}

// declParsers are the parsers of the declaration kinds nexa compiles, by
// the kind the splitter gives them; the other kinds are kept as OtherDecl.
var declParsers = map[string]declParsing{
	"tool":        parserOf[ToolFn](),
	"agent":       parserOf[Agent](),
	"legacy_tool": parserOf[LegacyTool](),
	"protocol":    parserOf[Protocol](),
	"include":     parserOf[Include](),
	"use_config":  parserOf[UseConfig](),
	"type":        parserOf[TypeDecl](),
}

// buildAhead builds, each in a goroutine of its own, the parsers of the
// declaration kinds a file has besides its first: a file with tools and
// an agent is the common case, and building the agent parser while the
// tools are parsed (both builds are ~1-3 ms in a fresh process, most of
// what `nexa validate` does itself) takes the second build off the wall
// time when a second core is free. Each parser is still built once per
// process; a parse that needs one waits for its build.
func buildAhead(spans []span) {
	seen := map[string]bool{}
	for _, s := range spans {
		k := declParsers[s.kind]
		if k.parse == nil || s.broken || seen[s.kind] {
			continue
		}
		if len(seen) > 0 {
			go k.build()
		}
		seen[s.kind] = true
	}
}

// ParseType reads a type written inside a string (a quoted parameter type
// such as "list[str]"); every position of the result is at.
func ParseType(at Position, text string) (*TypeExpr, Diagnostics) {
	bad := func(shown string) Diagnostics {
		return Diagnostics{{File: at.Filename, Line: at.Line, Column: at.Column, Code: CodeSyntax,
			Message: "expected a type, found " + strconvQuote(shown), Severity: SeverityError}}
	}
	tl, diags := lex(at.Filename, []byte(text))
	if len(diags) > 0 || nestingDepth(tl) > MaxDepth {
		return nil, bad(truncate(text, 40))
	}
	toks := make([]lexer.Token, tl.len())
	for i := range toks {
		toks[i] = tl.ptok(i)
		toks[i].Pos = lexer.Position(at)
	}
	toks[len(toks)-1] = lexer.Token{Type: Sep, Pos: lexer.Position(at)}
	pl, err := lexer.Upgrade(&tokenLexer{toks: toks, eof: lexer.Position(at)}, Comment)
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
func nestingDepth(tl *tokenList) int {
	depth, deepest := 0, 0
	for i := range tl.len() {
		if tl.typ(i) != Punct {
			continue
		}
		switch tl.value(i) {
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
	buildAhead(spans)
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

// spanStream feeds participle the declarations of a file in batches of at
// most batchTokens tokens: one token stream per batch holds the tokens of
// each declaration to parse, without comments (the grammar elides them
// anyway), each followed by a Sep token where the declaration ends, so
// that a grammar that stops early is reported at the right place.
// Participle copies tokens into its stream by appending one at a time, so
// a stream's slice doubles up to 512 tokens and then grows by about a
// quarter; one stream for the whole file would regrow a slice of megabytes.
// What a stream allocates is about twice its capacity, so batches are cut
// to fit a power of two as closely as whole declarations allow.
type spanStream struct {
	tl     *tokenList
	spans  []span
	pl     *lexer.PeekingLexer
	starts []int // raw index in pl of each span's first token, by span index
	next   int   // first span not yet in a stream
	// probed counts the syntax errors whose expectation was probed; past
	// MaxErrorsPerFile the messages would be dropped anyway, so probing
	// stops (a file of thousands of broken declarations stays fast).
	probed int
}

// batchTokens is the most tokens one stream holds (a declaration longer
// than that gets a stream of its own): 512, the largest capacity Go's
// append still reaches by doubling. Measured on the 3,000-tool program
// (declarations of 40 and 59 tokens): 139.2 MB allocated per compile with
// batches cut to fit 512 tokens, 144.8 MB with 256 (four declarations
// fill 203 of them) and with the earlier rule of closing a stream at the
// first declaration that reaches 192 tokens, 148 MB at 1,024.
const batchTokens = 512

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
	if ss.starts == nil {
		ss.starts = make([]int, len(ss.spans))
	}
	// the tokens are made as participle reads them (no intermediate slice)
	bl := &batchLexer{ss: ss, span: k - 1, i: -1}
	pl, err := lexer.Upgrade(bl)
	if err != nil {
		panic(err) // batchLexer never fails
	}
	ss.next = bl.span
	ss.pl = pl
}

// batchLexer gives participle the tokens of one batch of spanStream: the
// tokens of each declaration participle parses, comments left out, each
// declaration followed by a Sep token, then EOF.
type batchLexer struct {
	ss   *spanStream
	span int // the span being read
	i    int // the next token of it; -1: move to the next span
	n    int // tokens given so far
}

// Next implements lexer.Lexer.
func (b *batchLexer) Next() (lexer.Token, error) {
	ss, tl := b.ss, b.ss.tl
	for {
		if b.i < 0 {
			b.span++
			if b.span >= len(ss.spans) {
				return lexer.EOFToken(lexer.Position(tl.pos(tl.len() - 1))), nil
			}
			s := ss.spans[b.span]
			if declParsers[s.kind].parse == nil || s.broken {
				continue
			}
			// the span's tokens (comments counted, so at most), its Sep
			// and the EOF must fit; a span longer than a batch gets a
			// stream of its own
			if b.n > 0 && b.n+s.end-s.start+2 > batchTokens {
				return lexer.EOFToken(lexer.Position(tl.pos(tl.len() - 1))), nil
			}
			ss.starts[b.span] = b.n
			b.i = s.start
		}
		s := ss.spans[b.span]
		for b.i < s.end && tl.typ(b.i) == Comment {
			b.i++
		}
		b.n++
		if b.i >= s.end {
			b.i = -1
			return tl.sep(s), nil
		}
		b.i++
		return tl.ptok(b.i - 1), nil
	}
}

func parseSpan(tl *tokenList, s span, fs *spanStream, k int) (Decl, Diagnostics) {
	first := tl.at(s.start)
	kw := s.kw
	name, nameAt := declName(tl, s, kw)
	if s.broken {
		return &BrokenDecl{Pos: first.Pos, Kind: kindLabel(s.kind), Name: name, NameAt: nameAt}, nil
	}
	if s.kind == "decorated" {
		t := tl.at(kw)
		return &BrokenDecl{Pos: first.Pos, Kind: "decorated"}, Diagnostics{{
			File: t.Pos.Filename, Line: t.Pos.Line, Column: t.Pos.Column, Code: CodeSyntax,
			Message:  fmt.Sprintf("expected `fn` or `agent` after the decorators, found %s", describeAt(tl, kw, s)),
			Hint:     "decorators such as @tool(…) and @limit(…) go right before `fn` or `agent`",
			Severity: SeverityError,
		}}
	}
	parse := declParsers[s.kind].parse
	if parse == nil {
		return &OtherDecl{Pos: first.Pos, Kind: s.kind, Name: name, NameAt: nameAt}, nil
	}
	d, err := parse(fs.at(k))
	if err != nil {
		return &BrokenDecl{Pos: first.Pos, Kind: kindLabel(s.kind), Name: name, NameAt: nameAt},
			Diagnostics{syntaxDiag(err, parse, tl, s, &fs.probed)}
	}
	if fn, ok := d.(*ToolFn); ok {
		attachParamDocs(fn, tl, s.start, s.end)
	}
	if ds := normalize(d, tl); len(ds) > 0 {
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

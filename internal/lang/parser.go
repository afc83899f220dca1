package lang

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
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

var (
	toolFnParser     = build[ToolFn]()
	agentParser      = build[Agent]()
	legacyToolParser = build[LegacyTool]()
	protocolParser   = build[Protocol]()
	includeParser    = build[Include]()
	useConfigParser  = build[UseConfig]()
	typeDeclParser   = build[TypeDecl]()
	typeExprParser   = build[TypeExpr]()
)

// ParseType reads a type written inside a string (a quoted parameter type
// such as "list[str]"); every position of the result is at.
func ParseType(at Position, text string) (*TypeExpr, Diagnostics) {
	toks, diags := Lex(at.Filename, []byte(text))
	if len(diags) > 0 || nestingDepth(toks) > MaxDepth {
		return nil, Diagnostics{{File: at.Filename, Line: at.Line, Column: at.Column, Code: CodeSyntax,
			Message: "expected a type, found " + strconvQuote(truncate(text, 40)), Severity: SeverityError}}
	}
	for i := range toks {
		toks[i].Pos = at
	}
	toks = append(toks[:len(toks)-1], Token{Type: Sep, Pos: at})
	pl, err := lexer.Upgrade(&tokenLexer{toks: toks, eof: at}, Comment)
	if err != nil {
		return nil, Diagnostics{{File: at.Filename, Line: at.Line, Column: at.Column, Code: CodeSyntax,
			Message: "expected a type, found " + strconvQuote(truncate(text, 40)), Severity: SeverityError}}
	}
	te, err := parseWith(typeExprParser, pl, pl.MakeCheckpoint())
	if err != nil {
		return nil, Diagnostics{{File: at.Filename, Line: at.Line, Column: at.Column, Code: CodeSyntax,
			Message: "expected a type, found " + strconvQuote(text), Severity: SeverityError}}
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
	toks, diags := Lex(path, src)
	sp := newSplitter(toks)
	spans := sp.split()
	diags = append(diags, sp.diags...)
	f := &File{Path: path}
	decls := make([]Decl, len(spans))
	spanDiags := make([]Diagnostics, len(spans))
	// Declarations are independent once split, so batches of them are
	// parsed on all cores; results are kept in source order.
	batches := batchSpans(spans, batchTokens)
	workers := min(runtime.GOMAXPROCS(0), len(batches))
	var wg sync.WaitGroup
	next := make(chan [2]int, len(batches))
	for _, b := range batches {
		next <- b
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				part := spans[b[0]:b[1]]
				base, cps := joinSpans(toks, part)
				for i := range part {
					decls[b[0]+i], spanDiags[b[0]+i] = parseSpan(toks, part[i], base, cps[i])
				}
			}
		}()
	}
	wg.Wait()
	for i := range spans {
		diags = append(diags, spanDiags[i]...)
		if decls[i] != nil {
			f.Decls = append(f.Decls, decls[i])
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

// batchTokens is about how many tokens one participle token stream holds:
// big enough that starting a stream costs little, small enough that the
// stream's growth stays cheap and the batches spread over the cores.
const batchTokens = 4096

// batchSpans groups consecutive spans into batches of about n tokens,
// returned as [first, end) index pairs.
func batchSpans(spans []span, n int) [][2]int {
	var out [][2]int
	start, size := 0, 0
	for i, s := range spans {
		size += s.end - s.start + 1
		if size >= n {
			out = append(out, [2]int{start, i + 1})
			start, size = i+1, 0
		}
	}
	if start < len(spans) {
		out = append(out, [2]int{start, len(spans)})
	}
	return out
}

// participleKinds are the declaration kinds parsed by a participle grammar.
var participleKinds = map[string]bool{
	"tool": true, "agent": true, "legacy_tool": true, "protocol": true,
	"include": true, "use_config": true, "type": true,
}

// joinSpans builds one participle token stream for a batch of
// declarations: the tokens of each declaration to parse (comments left
// out: the grammar elides them anyway), each followed by a Sep token, and a
// checkpoint at the start of each declaration. One stream per batch instead
// of one per declaration saves most of the cost of participle's token
// copying on big programs.
func joinSpans(toks []Token, spans []span) (*lexer.PeekingLexer, []lexer.Checkpoint) {
	sl := &spansLexer{toks: toks, spans: spans, eof: toks[len(toks)-1].Pos, starts: make([]int, len(spans))}
	pl, err := lexer.Upgrade(sl, Comment)
	cps := make([]lexer.Checkpoint, len(spans))
	if err != nil {
		return pl, cps // spansLexer never fails
	}
	for i, start := range sl.starts {
		if start < 0 {
			continue
		}
		for int(pl.RawCursor()) < start && !pl.Peek().EOF() {
			pl.Next()
		}
		cps[i] = pl.MakeCheckpoint()
	}
	return pl, cps
}

// spansLexer emits the tokens of the spans to parse, a Sep after each, then
// EOF; it records where each span starts in the emitted stream.
type spansLexer struct {
	toks   []Token
	spans  []span
	eof    Position
	starts []int
	si     int // current span
	ti     int // next token index in toks, -1 before the span starts
	n      int // tokens emitted
	inSpan bool
}

// Next implements lexer.Lexer.
func (l *spansLexer) Next() (Token, error) {
	for !l.inSpan {
		if l.si >= len(l.spans) {
			return lexer.EOFToken(l.eof), nil
		}
		s := l.spans[l.si]
		if participleKinds[s.kind] && !s.broken {
			l.inSpan = true
			l.ti = s.start
			l.starts[l.si] = l.n
			break
		}
		l.starts[l.si] = -1
		l.si++
	}
	s := l.spans[l.si]
	l.n++
	for l.ti < s.end && l.toks[l.ti].Type == Comment {
		l.ti++
	}
	if l.ti < s.end {
		t := l.toks[l.ti]
		l.ti++
		return t, nil
	}
	l.inSpan = false
	l.si++
	return Token{Type: Sep, Pos: l.toks[min(s.end, len(l.toks)-1)].Pos}, nil
}

func parseSpan(toks []Token, s span, base *lexer.PeekingLexer, cp lexer.Checkpoint) (Decl, Diagnostics) {
	first := toks[s.start]
	kw := s.kw
	name, nameAt := declName(toks, s, kw)
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
		v, err = parseWith(toolFnParser, base, cp)
		if err == nil {
			attachParamDocs(v, toks[s.start:s.end])
			d = v
		}
	case "agent":
		var v *Agent
		v, err = parseWith(agentParser, base, cp)
		d = v
	case "legacy_tool":
		var v *LegacyTool
		v, err = parseWith(legacyToolParser, base, cp)
		d = v
	case "protocol":
		var v *Protocol
		v, err = parseWith(protocolParser, base, cp)
		d = v
	case "include":
		var v *Include
		v, err = parseWith(includeParser, base, cp)
		d = v
	case "use_config":
		var v *UseConfig
		v, err = parseWith(useConfigParser, base, cp)
		d = v
	case "type":
		var v *TypeDecl
		v, err = parseWith(typeDeclParser, base, cp)
		d = v
	case "decorated":
		t := toks[kw]
		return &BrokenDecl{Pos: first.Pos, Kind: "decorated"}, Diagnostics{{
			File: t.Pos.Filename, Line: t.Pos.Line, Column: t.Pos.Column, Code: CodeSyntax,
			Message:  fmt.Sprintf("expected `fn` or `agent` after the decorators, found %s", describeAt(toks, kw, s)),
			Hint:     "decorators such as @tool(…) and @limit(…) go right before `fn` or `agent`",
			Severity: SeverityError,
		}}
	default:
		return &OtherDecl{Pos: first.Pos, Kind: s.kind, Name: name, NameAt: nameAt}, nil
	}
	if err != nil {
		return &BrokenDecl{Pos: first.Pos, Kind: kindLabel(s.kind), Name: name, NameAt: nameAt},
			Diagnostics{syntaxDiag(err, toks, s)}
	}
	if ds := normalize(d); len(ds) > 0 {
		return &BrokenDecl{Pos: first.Pos, Kind: kindLabel(s.kind), Name: name, NameAt: nameAt}, ds
	}
	return d, nil
}

// parseWith parses one declaration from a private copy of the file's
// participle lexer, starting at cp; the declaration must end exactly at its
// Sep token.
func parseWith[G any](p *participle.Parser[G], base *lexer.PeekingLexer, cp lexer.Checkpoint) (g *G, err error) {
	local := *base
	local.LoadCheckpoint(cp)
	// participle reports some grammar conditions by panicking; no input
	// may crash the compiler, so such a panic becomes a syntax error.
	defer func() {
		if r := recover(); r != nil {
			g = nil
			err = &participle.ParseError{Msg: fmt.Sprintf("cannot parse this declaration (%v)", r), Pos: local.Peek().Pos}
		}
	}()
	g, err = p.ParseFromLexer(&local, participle.AllowTrailing(true))
	if err != nil {
		return nil, err
	}
	if next := local.Peek(); next.Type != Sep {
		return nil, &participle.UnexpectedTokenError{Unexpected: *next}
	}
	return g, nil
}

func nextSignificant(toks []Token, i, end int) int {
	for j := i; j < end; j++ {
		if toks[j].Type != Comment {
			return j
		}
	}
	return end
}

// declName reads the name of a declaration from its tokens, best effort.
func declName(toks []Token, s span, kw int) (string, Position) {
	n := nextSignificant(toks, kw+1, s.end)
	at := toks[kw].Pos
	if n >= s.end {
		return "", at
	}
	t := toks[n]
	switch s.kind {
	case "include":
		if t.Type == String || t.Type == RawString {
			return StringValue(t.Value), t.Pos
		}
		return "", at
	case "use_config":
		m := nextSignificant(toks, n+1, s.end)
		if t.Value == "config" && m < s.end && toks[m].Type == Ident {
			return toks[m].Value, toks[m].Pos
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
		m := nextSignificant(toks, n+1, s.end)
		o := nextSignificant(toks, m+1, s.end)
		if t.Type == Ident && m < s.end && toks[m].Value == "for" && o < s.end && toks[o].Type == Ident {
			return t.Value + " for " + toks[o].Value, t.Pos
		}
	case "match", "defer", "spawn", "parallel", "race", "channel", "after", "schedule":
		return summarize(toks, kw+1, s.end), t.Pos
	}
	if t.Type == Ident {
		return t.Value, t.Pos
	}
	return "", at
}

// summarize renders tokens as short text for anonymous declarations.
func summarize(toks []Token, from, to int) string {
	var b strings.Builder
	for i := from; i < to && b.Len() < 40; i++ {
		t := toks[i]
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

func describeAt(toks []Token, i int, s span) string {
	if i >= s.end {
		return Describe(toks[min(s.end, len(toks)-1)])
	}
	return Describe(toks[i])
}

var expectedRe = regexp.MustCompile(`^unexpected token "((?s).*)" \(expected (.*)\)$`)

// syntaxDiag turns a participle error into an "expected X, found Y"
// diagnostic at the offending token.
func syntaxDiag(err error, toks []Token, s span) Diagnostic {
	var perr participle.Error
	pos := toks[s.start].Pos
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
				found = describeAt(toks, s.end, s)
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
		d.File = toks[s.start].Pos.Filename
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

var docPrefix = regexp.MustCompile(`^(/{2,}|/\*+)\s?`)

// commentText strips comment markers.
func commentText(c string) string {
	c = docPrefix.ReplaceAllString(c, "")
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
func attachParamDocs(fn *ToolFn, ts []Token) {
	if len(fn.Params) == 0 {
		return
	}
	// the parameter list spans from the first param to the last one's line
	open := -1
	for i, t := range ts {
		if t.Type == Ident && t.Value == "fn" {
			open = i
			break
		}
	}
	if open < 0 {
		return
	}
	depth := 0
	var comments []Token
	for i := open; i < len(ts); i++ {
		t := ts[i]
		if t.Type == Punct && t.Value == "(" {
			depth++
		}
		if t.Type == Punct && t.Value == ")" {
			depth--
			if depth == 0 {
				// a trailing comment on the line of the `)` belongs to
				// the last parameter
				if i+1 < len(ts) && ts[i+1].Type == Comment && ts[i+1].Pos.Line == t.Pos.Line {
					comments = append(comments, ts[i+1])
				}
				break
			}
		}
		if depth > 0 && t.Type == Comment {
			comments = append(comments, t)
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

package lang

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// A syntax error becomes "expected WHAT, found TOKEN" at the offending
// token. Nothing here reads participle's error text: the position and the
// offending token come from participle's structured errors
// (participle.Error, *participle.UnexpectedTokenError), and WHAT comes
// either from the Expect field that a hand-written production sets, or —
// for an error inside a struct-tag grammar — from asking the grammar
// itself: the declaration is parsed again with one candidate token
// (probes, below) inserted before the offending one, and every candidate
// that lets the parser get past that point is something it expected. So
// the message follows the grammar when the grammar changes, without a
// second copy of it.

// probe is one candidate token tried where the parser stopped, with the
// words a message uses for it.
type probe struct {
	typ   lexer.TokenType
	value string
	words string
	// keyword candidates are only reported when a name is not expected
	// (a name would accept every keyword too).
	keyword bool
}

// probes are tried in this order, which is also the order of the words in
// a message.
var probes = []probe{
	{Ident, "x", "a name", false},
	{String, `"s"`, "a string", false},
	{Number, "1", "a number", false},
	{Punct, "-", "`-`", false},
	{Punct, "!", "`!`", false},
	{Punct, "(", "`(`", false},
	{Punct, "[", "`[`", false},
	{Punct, ":", "`:`", false},
	{Punct, "->", "`->`", false},
	{Punct, "=", "`=`", false},
	{Punct, "{", "`{`", false},
	{Punct, ",", "`,`", false},
	{Punct, ")", "`)`", false},
	{Punct, "]", "`]`", false},
	{Punct, "}", "`}`", false},
	{Punct, "|", "`|`", false},
	{Punct, "?", "`?`", false},
	{Punct, ".", "`.`", false},
	{Punct, ">", "`>`", false},
	{Punct, "@", "`@`", false},
	{Punct, "python!", "`python!`", false},
	{Punct, ";", "`;`", false},
	{Ident, "fn", "`fn`", true},
	{Ident, "agent", "`agent`", true},
	{Ident, "config", "`config`", true},
	{Ident, "uses", "`uses`", true},
	{Ident, "implements", "`implements`", true},
	{Ident, "requires", "`requires`", true},
	{Ident, "ensures", "`ensures`", true},
}

// valueStarts, exprStarts and stmtStarts are the probe words that together
// mean "a value", "an expression" or "a statement" (the tokens that can
// begin one).
var (
	valueStarts = []string{"a name", "a string", "a number", "`-`", "`[`", "`{`"}
	exprStarts  = []string{"a name", "a string", "a number", "`-`", "`!`", "`(`", "`[`"}
	stmtStarts  = append(slices.Clone(exprStarts), "`python!`")
)

// continuations are probe words that are often accepted only because what
// precedes could go on (an operator or `.name` after an expression, `[` or
// `|` after a type); when the parser also expects something else, they
// are left out of the message ("expected `{`", not "expected `-`, `(`, `[`,
// `{`, `.` or `>`").
var continuations = []string{"`-`", "`(`", "`[`", "`.`", "`>`", "`|`", "`?`"}

// syntaxDiag turns a participle error from parsing declaration s into a
// diagnostic at the offending token; probed counts the errors of the file
// whose expectation was probed (see spanStream).
func syntaxDiag(err error, parse declParser, tl *tokenList, s span, probed *int) Diagnostic {
	toks, first := declTokens(tl, s)
	at := first
	expected := ""
	var perr participle.Error
	if errors.As(err, &perr) {
		at = lexer.Token{Type: EOF, Pos: perr.Position()}
		var ute *participle.UnexpectedTokenError
		if errors.As(err, &ute) {
			at, expected = ute.Unexpected, ute.Expect
		}
	}
	k := len(toks) - 1 // the Sep token, when at is not found
	for i, t := range toks {
		if t.Pos.Offset >= at.Pos.Offset && t.Type != Sep {
			k = i
			break
		}
	}
	if expected == "" && *probed < MaxErrorsPerFile {
		*probed++
		expected = probeExpected(parse, toks, k)
	}
	found := describeAt(tl, s.end, s)
	if toks[k].Type != Sep {
		found = Describe(fromParticiple(toks[k]))
	}
	p := Position(toks[k].Pos)
	d := Diagnostic{File: p.Filename, Line: p.Line, Column: p.Column, Code: CodeSyntax, Severity: SeverityError}
	if expected != "" {
		d.Message = fmt.Sprintf("expected %s, found %s", expected, found)
	} else {
		d.Message = fmt.Sprintf("unexpected %s in %s", found, kindLabel(s.kind))
	}
	prev := ""
	if k > 0 {
		prev = toks[k-1].Value
	}
	d.Hint = syntaxHint(s.kind, prev, expected, found)
	return d
}

// declTokens are the tokens of declaration s as participle reads them (no
// comments) followed by a Sep token, and the first of them.
func declTokens(tl *tokenList, s span) ([]lexer.Token, lexer.Token) {
	toks := make([]lexer.Token, 0, s.end-s.start+1)
	for i := s.start; i < s.end; i++ {
		if tl.typ(i) != Comment {
			toks = append(toks, tl.ptok(i))
		}
	}
	toks = append(toks, tl.sep(s))
	return toks, toks[0]
}

// probeExpected asks the grammar what it accepts before toks[k]: each probe
// is inserted there and the declaration parsed again; a probe that the
// parser gets past (it fails later, or not at all) was expected.
func probeExpected(parse declParser, toks []lexer.Token, k int) string {
	var words []string
	name := false
	trial := make([]lexer.Token, len(toks)+1)
	copy(trial, toks[:k])
	copy(trial[k+1:], toks[k:])
	for _, pr := range probes {
		if pr.keyword && name {
			continue
		}
		// the probe's offset is -1: an error there is "not expected"
		trial[k] = lexer.Token{Type: pr.typ, Value: pr.value, Pos: lexer.Position{Filename: toks[k].Pos.Filename, Offset: -1}}
		pl, err := lexer.Upgrade(&tokenLexer{toks: trial, eof: toks[len(toks)-1].Pos})
		if err != nil {
			continue // tokenLexer never fails
		}
		if _, err := parse(pl); err != nil {
			var perr participle.Error
			if !errors.As(err, &perr) || perr.Position().Offset < toks[k].Pos.Offset {
				continue
			}
		}
		words = append(words, pr.words)
		if pr.typ == Ident && !pr.keyword {
			name = true
		}
	}
	words = group(words, stmtStarts, "a statement")
	words = group(words, exprStarts, exprWords)
	words = group(words, valueStarts, valueWords)
	if rest := slices.DeleteFunc(slices.Clone(words), func(w string) bool { return slices.Contains(continuations, w) }); len(rest) > 0 {
		words = rest
	}
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// group replaces the words of members, when all are present, by one
// phrase in the place of the first.
func group(words, members []string, phrase string) []string {
	for _, m := range members {
		if !slices.Contains(words, m) {
			return words
		}
	}
	out := make([]string, 0, len(words))
	done := false
	for _, w := range words {
		if slices.Contains(members, w) {
			if !done {
				out = append(out, phrase)
				done = true
			}
			continue
		}
		out = append(out, w)
	}
	return out
}

// syntaxHint adds advice for the mistakes that have a usual cause; prev is
// the text of the token before the offending one.
func syntaxHint(kind, prev, expected, found string) string {
	switch {
	case kind == "tool" && strings.Contains(expected, "`fn`"):
		return "a @tool(…) decorator is followed by `fn name(params): type { … }`"
	case prev == "python!":
		return `python! takes the Python code as a string: python! """…"""`
	case (prev == "if" && strings.Contains(expected, "condition")) || (prev == "else" && expected == "`{`"):
		return "write if (condition) { … } else if (condition) { … } else { … }"
	case kind == "agent" && prev == "uses":
		return `uses lists tool names, std.NS namespaces, mcp:"…" servers and "file.md" skills, separated by commas`
	case kind == "agent" && strings.Contains(expected, "`ensures`"):
		return "the agent header is: decorators, agent NAME, -> Type, uses …, implements P, requires/ensures, then `{`"
	case strings.Contains(expected, "`}`") && found == "end of file":
		return "a closing `}` is missing"
	case strings.HasPrefix(found, "string ") && strings.Contains(expected, "`:`"):
		return "separate a property name from its value with `:`"
	}
	return ""
}

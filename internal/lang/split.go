package lang

import (
	"fmt"
	"strings"
)

// MaxDepth is the deepest bracket nesting the parser accepts. Real programs
// stay far below it; deeper input gets a positioned error instead of being
// handed to the recursive-descent parser.
const MaxDepth = 200

// declKinds maps a top-level keyword to the kind of declaration it starts
// and how its extent is found.
var declKinds = map[string]extent{
	"include":  extStatement,
	"use":      extStatement,
	"fn":       extBlock,
	"tool":     extBlock,
	"agent":    extBlock,
	"protocol": extBlock,
	"flow":     extBlock,
	"test":     extBlock,
	"job":      extBlock,
	"server":   extBlock,
	"struct":   extBlock,
	"enum":     extBlock,
	"trait":    extBlock,
	"impl":     extBlock,
	"match":    extBlock,
	"type":     extStatement,
	"defer":    extStatement,
	"db":       extCall,
	"auth":     extCall,
	"kv":       extCall,
	"spawn":    extCall,
	"parallel": extCall,
	"race":     extCall,
	"channel":  extCall,
	"after":    extCall,
	"schedule": extCall,
}

// topKeywordList is shown in "expected a declaration" messages.
const topKeywordList = "a declaration (agent, @tool fn, tool, protocol, flow, include, use config, test, type, …)"

type extent int

const (
	extBlock     extent = iota // ends with the first { … } at depth 0
	extStatement               // ends at ; or before the next declaration
	extCall                    // ends with the first ( … ) at depth 0
)

// span is the token range [start, end) of one top-level declaration.
type span struct {
	kind   string
	start  int
	kw     int // index of the keyword (after any decorators)
	end    int
	broken bool // the splitter already reported an error inside it
}

// splitter cuts a token stream into declarations, iteratively.
type splitter struct {
	tl      *tokenList
	endLine []int // line on which each token ends
	stack   []int // scratch bracket stack of scan
	diags   Diagnostics
}

func newSplitter(tl *tokenList) *splitter {
	s := &splitter{tl: tl, endLine: make([]int, tl.len())}
	for i := range s.endLine {
		s.endLine[i] = tl.line(i)
		if t := tl.typ(i); t == String || t == RawString || t == Comment {
			s.endLine[i] += strings.Count(tl.value(i), "\n")
		}
	}
	return s
}

func (s *splitter) errorAt(t Token, code, hint, format string, args ...any) {
	s.diags = append(s.diags, Diagnostic{
		File: t.Pos.Filename, Line: t.Pos.Line, Column: t.Pos.Column,
		Code: code, Message: fmt.Sprintf(format, args...), Hint: hint, Severity: SeverityError,
	})
}

// next returns the index of the first non-comment token at or after i.
func (s *splitter) next(i int) int {
	for i < s.tl.len() && s.tl.typ(i) == Comment {
		i++
	}
	return i
}

func (s *splitter) eof(i int) bool { return i >= s.tl.len() || s.tl.typ(i) == EOF }

// firstOnLine reports whether token i is the first token of its line.
func (s *splitter) firstOnLine(i int) bool {
	for j := i - 1; j >= 0; j-- {
		if s.endLine[j] < s.tl.line(i) {
			return true
		}
		if s.tl.typ(j) != Comment || s.tl.line(j) == s.tl.line(i) {
			return false
		}
	}
	return true
}

// looksLikeDecl reports whether token i starts a declaration judging by the
// keyword and the token after it. It is used to notice a declaration where a
// closing bracket was missing, so it only accepts the unmistakable shapes.
func (s *splitter) looksLikeDecl(i int) bool {
	t := s.tl.at(i)
	if t.Type == Punct && t.Value == "@" {
		n := s.next(i + 1)
		return !s.eof(n) && s.tl.at(n).Type == Ident
	}
	if t.Type != Ident {
		return false
	}
	n := s.next(i + 1)
	if s.eof(n) {
		return false
	}
	nt := s.tl.at(n)
	switch t.Value {
	case "agent", "tool", "protocol", "flow", "struct", "enum", "trait", "impl", "job", "db", "auth", "kv":
		return nt.Type == Ident
	case "type":
		if nt.Type != Ident {
			return false
		}
		m := s.next(n + 1)
		return !s.eof(m) && s.tl.at(m).Value == "="
	case "test", "include":
		return nt.Type == String
	case "server":
		return nt.Type == Number
	case "use":
		return nt.Value == "config"
	}
	return false
}

// declarationBreak reports whether token i, met inside another
// declaration, must be the start of the next one: a declaration shape that
// begins its line in column 1.
func (s *splitter) declarationBreak(i int) bool {
	return s.tl.col(i) == 1 && s.firstOnLine(i) && s.looksLikeDecl(i)
}

// split returns the spans of the file's declarations.
func (s *splitter) split() []span {
	var spans []span
	i := s.next(0)
	for !s.eof(i) {
		t := s.tl.at(i)
		kind, ext, kw, ok := s.classify(i)
		if !ok {
			j := s.resync(i)
			s.errorAt(t, CodeSyntax, s.topHint(t), "expected %s, found %s", topKeywordList, Describe(t))
			i = s.next(j)
			continue
		}
		sp := s.scan(i, kw, kind, ext)
		spans = append(spans, sp)
		i = s.next(sp.end)
		// a `;` right after a declaration is allowed
		for !s.eof(i) && s.tl.at(i).Value == ";" && s.tl.at(i).Type == Punct {
			i = s.next(i + 1)
		}
	}
	return spans
}

// classify finds the kind of the declaration starting at token i.
func (s *splitter) classify(i int) (string, extent, int, bool) {
	t := s.tl.at(i)
	if t.Type == Punct && t.Value == "@" {
		// decorators: skip `@name( … )` groups to find `fn` or `agent`
		j := i
		for !s.eof(j) && s.tl.at(j).Value == "@" && s.tl.at(j).Type == Punct {
			j = s.next(j + 1)
			if s.eof(j) || s.tl.at(j).Type != Ident {
				return "", 0, 0, false
			}
			j = s.next(j + 1)
			if !s.eof(j) && s.tl.at(j).Value == "(" {
				end := s.skipBalanced(j)
				if s.eof(end) {
					// unclosed arguments: let scan report the bracket
					return "decorated", extBlock, i, true
				}
				j = s.next(end)
			}
		}
		if !s.eof(j) && s.tl.at(j).Type == Ident {
			switch s.tl.at(j).Value {
			case "fn":
				return "tool", extBlock, j, true
			case "agent":
				return "agent", extBlock, j, true
			}
		}
		return "decorated", extBlock, j, true
	}
	if t.Type != Ident {
		return "", 0, 0, false
	}
	ext, ok := declKinds[t.Value]
	if !ok {
		return "", 0, 0, false
	}
	kind := t.Value
	switch kind {
	case "fn":
		kind = "tool"
	case "tool":
		// `tool NAME {` is the legacy form
		kind = "legacy_tool"
	case "use":
		kind = "use_config"
	}
	return kind, ext, i, true
}

// skipBalanced returns the index after the bracket group opening at i,
// without reporting errors (used only for lookahead).
func (s *splitter) skipBalanced(i int) int {
	depth := 0
	for j := i; !s.eof(j); j++ {
		t := s.tl.at(j)
		if t.Type != Punct {
			continue
		}
		switch t.Value {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth <= 0 {
				return j + 1
			}
		}
	}
	return s.tl.len() - 1
}

// resync skips from a token that starts no declaration to the next token
// that plausibly does, stepping over bracket groups.
func (s *splitter) resync(i int) int {
	depth := 0
	for j := i + 1; !s.eof(j); j++ {
		t := s.tl.at(j)
		if t.Type == Punct {
			switch t.Value {
			case "(", "[", "{":
				depth++
				continue
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
				continue
			}
		}
		if t.Type == Comment {
			continue
		}
		if (depth == 0 || t.Pos.Column == 1) && s.firstOnLine(j) && s.looksLikeDecl(j) {
			return j
		}
	}
	return s.tl.len() - 1
}

func (s *splitter) topHint(t Token) string {
	if t.Type == Ident {
		words := make([]string, 0, len(declKinds))
		for k := range declKinds {
			words = append(words, k)
		}
		if best := Closest(t.Value, words); best != "" {
			return fmt.Sprintf("did you mean `%s`?", best)
		}
	}
	if t.Type == Punct && t.Value == "}" {
		return "this `}` closes nothing; remove it or check the braces above"
	}
	return ""
}

// scan finds the end of the declaration of the given kind starting at i,
// checking bracket balance and depth on the way.
func (s *splitter) scan(start, kw int, kind string, ext extent) span {
	sp := span{kind: kind, start: start, kw: kw}
	stack := s.stack[:0] // reused from one declaration to the next
	defer func() { s.stack = stack[:0] }()
	// open counts the brackets of each kind on the stack (by bracketIndex),
	// so that a closer with no matching opener is recognised without
	// walking the stack (hostile input could otherwise make this quadratic)
	var open [3]int
	tooDeep := false
	i := kw + 1
	for ; !s.eof(i); i++ {
		tt := s.tl.typ(i)
		if tt == Comment {
			continue
		}
		if tt == Invalid {
			sp.broken = true
		}
		if tt != Punct && tt != Ident {
			// strings, numbers and invalid text neither open nor close
			// anything, nor start a declaration (looksLikeDecl)
			continue
		}
		t := s.tl.at(i)
		// A declaration written in column 1 ends this one: a missing
		// closing bracket or a missing block.
		if s.declarationBreak(i) {
			if len(stack) > 0 {
				o := s.tl.at(stack[len(stack)-1])
				s.errorAt(t, CodeSyntax, fmt.Sprintf("add `%s` before this line", closer(o.Value)),
					"expected `%s` to close the `%s` opened at line %d, found the start of another declaration (%s)",
					closer(o.Value), o.Value, o.Pos.Line, Describe(t))
				sp.broken = true
			}
			sp.end = i
			return sp
		}
		if t.Type == Punct {
			switch t.Value {
			case "(", "[", "{":
				stack = append(stack, i)
				open[bracketIndex(t.Value)]++
				if len(stack) > MaxDepth && !tooDeep {
					tooDeep = true
					sp.broken = true
					s.errorAt(t, CodeTooDeep, "flatten the structure or move data into a file",
						"brackets nested deeper than %d levels", MaxDepth)
				}
				continue
			case ")", "]", "}":
				if len(stack) == 0 {
					s.errorAt(t, CodeSyntax, "remove it or check the brackets before it", "unexpected %s: nothing to close", Describe(t))
					sp.broken = true
					continue
				}
				top := s.tl.at(stack[len(stack)-1])
				if closer(top.Value) != t.Value {
					if open[bracketIndex(t.Value)] == 0 {
						s.errorAt(t, CodeSyntax, "remove it or check the brackets before it",
							"expected `%s` to close the `%s` at line %d, found `%s`", closer(top.Value), top.Value, top.Pos.Line, t.Value)
						sp.broken = true
						continue
					}
					// a matching opener is deeper in the stack: the
					// brackets above it were left unclosed
					s.errorAt(t, CodeSyntax, fmt.Sprintf("add `%s`", closer(top.Value)),
						"expected `%s` to close the `%s` at line %d, found `%s`", closer(top.Value), top.Value, top.Pos.Line, t.Value)
					sp.broken = true
					for closer(s.tl.at(stack[len(stack)-1]).Value) != t.Value {
						open[bracketIndex(s.tl.value(stack[len(stack)-1]))]--
						stack = stack[:len(stack)-1]
					}
				}
				open[bracketIndex(s.tl.value(stack[len(stack)-1]))]--
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					if (ext == extBlock && t.Value == "}") || (ext == extCall && t.Value == ")") {
						sp.end = i + 1
						return sp
					}
				}
				continue
			case ";":
				if len(stack) == 0 && ext != extBlock {
					sp.end = i + 1
					return sp
				}
			}
		}
		if len(stack) == 0 && ext == extStatement && s.firstOnLine(i) && s.looksLikeDecl(i) {
			sp.end = i
			return sp
		}
	}
	// end of file: report the outermost unclosed bracket (usually the one
	// whose closer is missing) and the innermost (where the text stops)
	if len(stack) > 0 {
		report := []int{stack[0]}
		if len(stack) > 1 {
			report = append(report, stack[len(stack)-1])
		}
		for _, k := range report {
			o := s.tl.at(k)
			s.errorAt(o, CodeSyntax, fmt.Sprintf("nothing closes it before the end of the file; add the missing `%s`", closer(o.Value)),
				"expected `%s` to close this `%s`, found end of file", closer(o.Value), o.Value)
		}
		sp.broken = true
	}
	sp.end = i
	return sp
}

// bracketIndex numbers the kinds of brackets, opening or closing: ( ) are
// 0, [ ] are 1, { } are 2.
func bracketIndex(b string) int {
	switch b {
	case "(", ")":
		return 0
	case "[", "]":
		return 1
	}
	return 2
}

func closer(open string) string {
	switch open {
	case "(":
		return ")"
	case "[":
		return "]"
	}
	return "}"
}

func kindLabel(kind string) string {
	switch kind {
	case "legacy_tool":
		return "tool"
	case "use_config":
		return "use config"
	case "decorated":
		return "declaration"
	}
	return kind
}

// Describe names a token for messages: `word`, the string "…", a number, or
// end of file.
func Describe(t Token) string {
	switch t.Type {
	case EOF:
		return "end of file"
	case String, RawString:
		v := t.Value
		if len(v) > 30 {
			v = truncate(v, 27) + "…"
		}
		return "string " + strings.ReplaceAll(v, "\n", `\n`)
	case Number:
		return "number " + t.Value
	case Invalid:
		return "invalid character"
	}
	v := t.Value
	if len(v) > 30 {
		v = truncate(v, 27) + "…"
	}
	return "`" + v + "`"
}

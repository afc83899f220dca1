package lang

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// unsupportedStmtKeywords are the 2.x statement keywords that are not part
// of the native-body subset. The parser accepts such statements so that 2.x
// files parse; the compiler rejects them in tool bodies with a message that
// names the construct.
var unsupportedStmtKeywords = map[string]string{
	"for":            "for loop",
	"while":          "while loop",
	"loop":           "loop … until",
	"match":          "match",
	"try":            "try/catch",
	"assert":         "assert",
	"break":          "break",
	"continue":       "continue",
	"semantic_if":    "semantic_if",
	"autoloop":       "autoloop",
	"with_context":   "with_context",
	"try_agent":      "try_agent",
	"snapshot":       "snapshot",
	"restore":        "restore",
	"fork":           "fork",
	"verify":         "verify",
	"reflect":        "reflect",
	"unharnessed":    "unharnessed",
	"let":            "let",
	"defer":          "defer",
	"spawn":          "spawn",
	"pass":           "pass",
	"await":          "await",
	"receive":        "receive",
	"before_step":    "before_step hook",
	"after_step":     "after_step hook",
	"on_error":       "on_error hook",
	"before_tool":    "before_tool hook",
	"after_tool":     "after_tool hook",
	"context_policy": "context_policy",
	"parallel":       "parallel",
	"race":           "race",
	"select":         "select",
	"schedule":       "schedule",
	"after":          "after",
	"throw":          "throw",
	"raise":          "raise",
	"yield":          "yield",
}

// chainKeywords continue a statement after a block (`} else {`,
// `} catch (e) {`, `} until (…)`).
var chainKeywords = map[string]bool{
	"else": true, "catch": true, "catch_correction": true, "until": true, "finally": true,
}

// OtherStmt is a 2.x statement outside the native-body subset (a loop, a
// match, …), kept as its keyword and extent so that the compiler can name it.
type OtherStmt struct {
	Pos     Position
	Keyword string
	// Construct is a readable name of the statement kind ("for loop").
	Construct string
}

// Parse implements participle.Parseable: it takes the keyword and what
// follows up to a `;` or the end of the statement's block(s), without
// recursion.
func (o *OtherStmt) Parse(pl *lexer.PeekingLexer) error {
	return parseOther(cursor{pl}, o)
}

// parseOther reads an unsupported statement (participle.NextMatch when the
// next token does not start one).
func parseOther(lex cursor, o *OtherStmt) error {
	first := lex.Peek()
	if first.Type != Ident {
		return participle.NextMatch
	}
	construct, ok := unsupportedStmtKeywords[first.Value]
	if !ok {
		return participle.NextMatch
	}
	// `match = 3` or `loop(…)` style uses of the word as a name are not
	// this statement.
	next := lex.PeekAfter()
	if next.Value == "=" || next.Value == "." || next.Value == "+=" || next.Value == "-=" {
		return participle.NextMatch
	}
	o.Pos = pos(first)
	o.Keyword = first.Value
	o.Construct = construct
	lex.Next()
	depth := 0
	for {
		t := lex.Peek()
		if t.EOF() || t.Type == Sep {
			return nil
		}
		switch t.Value {
		case "(", "[", "{":
			if t.Type == Punct {
				depth++
			}
		case ")", "]", "}":
			if t.Type == Punct {
				if depth == 0 {
					return nil // the end of the enclosing block
				}
				depth--
				lex.Next()
				if depth == 0 && t.Value == "}" {
					after := lex.Peek()
					if after.Type == Ident && chainKeywords[after.Value] {
						continue
					}
					if after.Value == ";" {
						lex.Next()
					}
					return nil
				}
				continue
			}
		case ";":
			if depth == 0 {
				lex.Next()
				return nil
			}
		}
		lex.Next()
	}
}

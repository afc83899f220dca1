// Package lang reads .nx sources of the Nexa 2.4 path into an AST with
// positions, reporting every problem it finds as a Diagnostic.
//
// The pipeline is:
//
//	bytes ──Lex──▶ tokens ──split──▶ one token span per top-level declaration
//	      ──participle──▶ AST nodes (tools, agents, protocols, includes, …)
//
// The lexer is written by hand because the string rules of the language
// (multi-line strings, raw triple-quoted strings, the escape rule below,
// comments that are text inside strings) do not fit a regular-expression
// lexer well; it feeds its tokens to participle parsers through a small
// lexer.Definition adapter.
//
// Splitting the file into declarations before parsing gives error recovery:
// a syntax error in one declaration is reported and parsing resumes at the
// next top-level declaration, so every broken declaration of a file is
// reported, not only the first. A declaration keyword in column 1 inside an
// unclosed block ends that block with "expected `}`", which is what a
// missing brace usually is. The splitter is iterative and checks bracket
// depth (MaxDepth) before anything recursive runs, so deep nesting gives a
// positioned error instead of exhausting the stack. Declarations are parsed
// in parallel; kinds nexa agent does not run (flow, test, job, …) are kept
// as balanced token ranges.
//
// The grammar of the declarations (tools, agents, protocols, legacy tool
// blocks, includes, type declarations) is participle struct tags in ast.go,
// written LL(1) and parsed without backtracking (UseLookahead(0)), so that
// an error is reported where it happens. The most frequent productions —
// values, types, decorators, parameters, statement blocks and expressions —
// implement participle.Parseable by hand (leaf.go, stmt.go, expr.go): the
// reflective parser costs several microseconds per node, which made a
// 3,000-tool program take over a second, and the hand-written productions
// can say "expected a value" instead of quoting grammar.
//
// # String escape rule
//
// As in 2.x, a "…" string is read up to the next double quote and a
// backslash is an ordinary character ("C:\tmp\" is the four characters
// C:\tmp\ followed by nothing). The one extension: when a backslash-quote
// pair inside a string is followed (after spaces or tabs on the same line) by
// a character that cannot follow a string in 2.x — a letter, a digit, a
// quote, … — the pair is an escaped quote and the string goes on. Such a
// string ("escaped string") has its escapes decoded: \" is a quote, \\ a
// backslash, \n a newline, \t a tab; any other backslash stays literal. A
// string without an escaped quote is raw, exactly as in 2.x, so no valid 2.x
// string changes meaning. Triple-quoted strings are always raw.
package lang

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
// lexer.Definition adapter. Splitting the file into declarations before
// parsing gives error recovery: a syntax error in one declaration is reported
// and parsing resumes at the next top-level declaration, so every broken
// declaration of a file is reported, not only the first. The splitter is
// iterative and checks bracket depth before anything recursive runs, so deep
// nesting gives a positioned error instead of exhausting the stack.
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

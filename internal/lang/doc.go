// Package lang reads .nx sources of the Nexa 2.4 path into an AST with
// positions, reporting every problem it finds as a Diagnostic.
//
// The pipeline is:
//
//	bytes ──lex──▶ compact tokens ──split──▶ one token span per top-level declaration
//	      ──parse──▶ AST nodes (tools, agents, protocols, includes, …)
//
// The lexer is written by hand because the string rules of the language
// (multi-line strings, raw triple-quoted strings, the escape rule below,
// comments that are text inside strings) do not fit a regular-expression
// lexer well. Internally it produces compact tokens (offsets, line, column
// and type, no pointers: cheap to allocate and nothing for the garbage
// collector to scan); participle's lexer.Token values are built from them
// only where they are read (Lex, the declaration being parsed, participle's
// token streams).
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
// The grammar of the declarations is participle struct tags in ast.go,
// written LL(1) and parsed without backtracking (UseLookahead(0)), so that
// an error is reported where it happens. Agents, protocols, legacy tool
// blocks, includes, `use config` and type declarations are parsed by
// participle from those tags. @tool functions — by far the most frequent
// declaration — are parsed by hand (parseToolFn, toolfn.go) straight from
// the lexed tokens, implementing the grammar of ToolFn's tags; a test
// (TestToolFnMatchesGrammar, and its fuzz target) checks that both give the
// same AST and the same errors. Copying every token into a participle
// stream and the reflective parse made a 3,000-tool program take about
// 100 ms to compile. The most frequent productions — values, types,
// decorators, parameters, statement blocks and expressions — are written by
// hand too and implement participle.Parseable, so that participle's
// grammars use them (leaf.go, stmt.go, expr.go); they read a cursor that is
// either participle's PeekingLexer or a declaration's tokens, and allocate
// their nodes from slabs when parsing by hand (nodes.go). Hand-written
// productions can also say "expected a value" instead of quoting grammar.
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

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
// and type, no pointers); participle's lexer.Token values are built from
// them only where they are read.
//
// Splitting the file into declarations before parsing gives error recovery:
// a syntax error in one declaration is reported and parsing resumes at the
// next top-level declaration, so every broken declaration of a file is
// reported, not only the first. A declaration keyword in column 1 inside an
// unclosed block ends that block with "expected `}`", which is what a
// missing brace usually is. The splitter is iterative and checks bracket
// depth (MaxDepth) before anything recursive runs, so deep nesting gives a
// positioned error instead of exhausting the stack. Kinds nexa agent does
// not run (flow, test, job, …) are kept as balanced token ranges.
//
// # Where the grammar lives
//
// Every declaration nexa compiles, with its decorators, parameters, clauses
// and properties, is parsed by participle from the struct tags of its type
// in ast.go: ToolFn (with Decorator, Arg, Param), Agent (UseItem, Clause,
// AgentItem), LegacyTool, Protocol (Field), Include, UseConfig and
// TypeDecl, with Property, Key, Name and StringLit. The grammar is written
// LL(1) and parsed without backtracking (UseLookahead(0)), so that an
// error is reported where it happens. The recursive productions below
// them — values and types (leaf.go), statement blocks (stmt.go),
// expressions (expr.go) and unsupported 2.x statements (otherstmt.go) —
// implement participle.Parseable by hand, because they are most of the
// tokens of a program and participle's reflective parse of them measured
// slower (statements: 2.5 times for a native body; values: 1.3–1.7 times
// the CPU time of typical tool headers, docs/benchmarks.md#compiler); each says in
// its comment what it accepts. Each construct is defined in exactly one of these places;
// internal/lang/CONSTRUCTS.md, has the table and how to add a
// keyword.
//
// Positions are Position values (participle fills them: the type has the
// layout of participle's own), and syntax errors are built in syntax.go
// from participle's structured errors; what was expected is found by
// asking the grammar (probing), never by reading participle's error text.
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

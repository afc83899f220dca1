package lang

import "strings"

// File is one parsed source file.
type File struct {
	Path string
	// Decls are the top-level declarations in source order.
	Decls []Decl
}

// Decl is a top-level declaration: *ToolFn, *LegacyTool, *Agent, *Protocol,
// *Include, *UseConfig or *OtherDecl.
type Decl interface {
	// DeclKind is the kind shown by nexa inspect ("tool", "agent", "flow", …).
	DeclKind() string
	// DeclName is the declared name ("" for anonymous kinds).
	DeclName() string
	// DeclPos is where the declaration starts (its first decorator or keyword).
	DeclPos() Position
	// NamePos is where the name is written (DeclPos when there is none).
	NamePos() Position
}

// Name is an identifier with its position.
type Name struct {
	Pos  Position
	Name string `parser:"@Ident"`
}

// StringLit is a "…" or """…""" literal; Raw keeps the quotes.
type StringLit struct {
	Pos Position
	Raw string `parser:"@(String | RawString)"`
}

// Value is the decoded text (escape rule of the package documentation).
func (s *StringLit) Value() string { return StringValue(s.Raw) }

// Triple reports whether the literal is triple-quoted.
func (s *StringLit) Triple() bool { return strings.HasPrefix(s.Raw, `"""`) }

// Value is a property or setting value: string, number, boolean, name
// (possibly dotted), list or object.
//
// Values are parsed by hand (Value implements participle.Parseable): they
// are the most frequent node, and the hand-written parser can say
// "expected a value". Written as struct tags, values made parsing typical
// @tool headers allocate 40 % more and take 1.3–1.7 times the CPU time
// (docs/benchmarks.md#compiler).
type Value struct {
	Pos    Position
	Number *NumberLit
	Str    *StringLit
	Bool   *string
	List   *ListLit
	Object *ObjectLit
	Ref    *RefLit
}

// NumberLit is a number with an optional leading minus.
type NumberLit struct {
	Pos  Position
	Neg  bool
	Text string
}

// RefLit is a bare name such as `auto` or `std.fs`.
type RefLit struct {
	Pos   Position
	Parts []string
}

// String is the dotted name.
func (r *RefLit) String() string { return strings.Join(r.Parts, ".") }

// ListLit is `[a, b, label: c]`.
type ListLit struct {
	Pos   Position
	Items []*ListItem
}

// ListItem is one list element; `fallback: "m"` is parsed as the value
// `fallback` with Labeled set to "m" (see Label).
type ListItem struct {
	Pos     Position
	First   *Value
	Labeled *Value
	// Label and Value are filled after parsing: for `fallback: "m"`,
	// Label is "fallback" and Value "m"; otherwise Value is First.
	Label string
	Value *Value
}

// ObjectLit is `{ "k": v, k2: v2 }` (commas optional).
type ObjectLit struct {
	Pos     Position
	Entries []*Property
}

// Property is `key: value` with an optional trailing comma or semicolon.
type Property struct {
	Pos   Position
	Key   *Key   `parser:"@@ ':'"`
	Value *Value `parser:"@@ ( ',' | ';' )?"`
}

// Key is a property name, bare or quoted.
type Key struct {
	Pos   Position
	Ident string     `parser:"  @Ident"`
	Str   *StringLit `parser:"| @@"`
}

// Name returns the key text.
func (k *Key) Name() string {
	if k.Str != nil {
		return k.Str.Value()
	}
	return k.Ident
}

// Decorator is `@name(args)`, such as @tool("…", risk_level: "high") or
// @limit(max_tokens=2000).
type Decorator struct {
	Pos  Position
	Name string `parser:"'@' @Ident"`
	Args []*Arg `parser:"( '(' ( @@ ( ',' @@? )* )? ')' )?"`
}

// Arg is a decorator argument, positional or named with `:` or `=`.
type Arg struct {
	Pos   Position
	First *Value `parser:"@@"`
	Named *Value `parser:"( ( ':' | '=' ) @@ )?"`
	// Name and Value are filled after parsing: Name is set for `name: v`
	// and `name=v` (when the name is not a plain word, NameErr is set).
	Name    string
	Value   *Value
	NameErr bool
}

// TypeExpr is a type: alternatives separated by `|`. Parsed by hand, like
// Value and for the same reasons; the same production reads the types
// written inside strings (ParseType).
type TypeExpr struct {
	Pos  Position
	Alts []*TypeTerm
}

// String writes the type back in source form.
func (t *TypeExpr) String() string {
	if t == nil {
		return ""
	}
	parts := make([]string, len(t.Alts))
	for i, a := range t.Alts {
		parts[i] = a.String()
	}
	return strings.Join(parts, " | ")
}

// TypeTerm is one named type with optional arguments and `?`.
type TypeTerm struct {
	Pos    Position
	Quoted *StringLit
	Name   string
	Args   []*TypeExpr
	// Angle holds the names of the 2.x form `List<str>` (flat on purpose:
	// `<` is not a bracket the depth check counts, so it must not nest).
	Angle    []string
	Optional bool
}

// TypeArgs returns the type arguments of either form.
func (t *TypeTerm) TypeArgs() []*TypeExpr {
	if len(t.Angle) == 0 {
		return t.Args
	}
	out := make([]*TypeExpr, len(t.Angle))
	for i, n := range t.Angle {
		out[i] = &TypeExpr{Pos: t.Pos, Alts: []*TypeTerm{{Pos: t.Pos, Name: n}}}
	}
	return out
}

// String writes the term back in source form.
func (t *TypeTerm) String() string {
	var b strings.Builder
	if t.Quoted != nil {
		b.WriteString(t.Quoted.Raw)
	} else {
		b.WriteString(t.Name)
	}
	if args := t.TypeArgs(); len(args) > 0 {
		b.WriteByte('[')
		for i, a := range args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.String())
		}
		b.WriteByte(']')
	}
	if t.Optional {
		b.WriteByte('?')
	}
	return b.String()
}

// ToolFn is `@tool("description", settings…) fn name(params): Type { body }`.
type ToolFn struct {
	Pos        Position
	Decorators []*Decorator `parser:"@@*"`
	Name       *Name        `parser:"'fn' @@"`
	Params     []*Param     `parser:"'(' ( @@ ( ',' @@? )* )? ')'"`
	Returns    *TypeExpr    `parser:"( ( ':' | '->' ) @@ )?"`
	Body       *Block       `parser:"@@"`
}

// Param is one tool parameter. Type is nil when the source leaves it out
// (an error for the compiler, accepted by the parser so that the message can
// say so). Doc is the text of an adjacent comment (filled after parsing).
type Param struct {
	Pos     Position
	Name    string    `parser:"@Ident"`
	Type    *TypeExpr `parser:"( ':' @@ )?"`
	Default *Value    `parser:"( '=' @@ )?"`
	Doc     string
}

// Block is `{ statements }`. Blocks and their statements are parsed by
// hand (participle.Parseable in stmt.go): written as struct tags they made
// a native tool body 2.5 times slower to parse, and
// the hand-written ones say "expected a condition after if".
type Block struct {
	Pos    Position
	Stmts  []*Stmt
	EndPos Position
}

// Stmt is one statement of a tool body; exactly one field is set.
type Stmt struct {
	Pos    Position
	Python *PythonStmt
	Return *ReturnStmt
	Print  *PrintStmt
	If     *IfStmt
	Other  *OtherStmt
	Expr   *ExprStmt
}

// PythonStmt is `python! """…"""` (the lexer reads `python!` as one token).
type PythonStmt struct {
	Pos  Position
	Code *StringLit
}

// ExprStmt is an expression statement or an assignment `target = EXPR`
// (also `+=`, `-=`); the compiler checks that the target is a name.
type ExprStmt struct {
	Pos   Position
	X     *Expr
	Op    string
	Value *Expr
}

// ReturnStmt is `return EXPR` (the value may be left out).
type ReturnStmt struct {
	Pos   Position
	Value *Expr
}

// PrintStmt is `print(EXPR)` or `print EXPR`.
type PrintStmt struct {
	Pos   Position
	Value *Expr
}

// IfStmt is `if (COND) { … } else if (COND) { … } else { … }`. The arms
// after the first are a flat list (no recursion however long the chain).
type IfStmt struct {
	Pos  Position
	Cond *Expr
	Then *Block
	Arms []*ElseArm
}

// ElseArm is `else if (COND) { … }` (Cond set) or `else { … }`.
type ElseArm struct {
	Pos  Position
	Cond *Expr
	Then *Block
}

// Expr is a flat chain of operands and binary operators; the compiler
// applies precedence when it lowers it. Expressions are parsed by hand
// (Expr implements participle.Parseable in expr.go), like values and
// statements: they are most of the tokens of a native body.
type Expr struct {
	Pos  Position
	Left *Unary
	Ops  []*BinOp
}

// BinOp is one operator and its right operand.
type BinOp struct {
	Pos   Position
	Op    string
	Right *Unary
}

// Unary is an operand with prefix operators.
type Unary struct {
	Pos Position
	Ops []string
	X   *Postfix
}

// Postfix is a primary expression followed by member accesses, calls and
// indexing.
type Postfix struct {
	Pos      Position
	Primary  *Primary
	Suffixes []*Suffix
}

// Suffix is `.name`, `(args)` or `[index]`.
type Suffix struct {
	Pos    Position
	Member *string
	Call   *CallArgs
	Index  *Expr
}

// CallArgs are the arguments of a call.
type CallArgs struct {
	Pos  Position
	Args []*CallArg
}

// CallArg is one call argument, positional or named (`name = v`).
type CallArg struct {
	Pos   Position
	Value *Expr
	Named *Expr
}

// Primary is a literal, a name, a parenthesised expression or a list.
type Primary struct {
	Pos    Position
	Number *string
	Str    *StringLit
	Bool   *string
	Null   bool
	Name   *string
	Paren  *Expr
	List   *ListExpr
}

// ListExpr is a list literal inside a tool body.
type ListExpr struct {
	Pos   Position
	Items []*Expr
}

// LegacyTool is `tool NAME { description: "…", parameters: {…} }` and its
// `mcp:` and `python:` forms.
type LegacyTool struct {
	Pos   Position
	Name  *Name       `parser:"'tool' @@"`
	Props []*Property `parser:"'{' @@* '}'"`
}

// Agent is an agent declaration with its header clauses and body.
type Agent struct {
	Pos        Position
	Decorators []*Decorator `parser:"@@*"`
	Name       *Name        `parser:"'agent' @@"`
	Returns    *TypeExpr    `parser:"( '->' @@ )?"`
	Uses       []*UseItem   `parser:"( 'uses' @@ ( ',' @@? )* )?"`
	Implements *Name        `parser:"( 'implements' @@ )?"`
	Clauses    []*Clause    `parser:"@@*"`
	Items      []*AgentItem `parser:"'{' @@* '}'"`
}

// UseItem is one entry of a uses clause: a tool name, `std.NS`,
// `mcp:"…"` (Path ["mcp"] with Spec) or a "file.md".
type UseItem struct {
	Pos  Position
	File *StringLit `parser:"  @@"`
	Path []string   `parser:"| @Ident ( '.' @Ident )*"`
	Spec *StringLit `parser:"  ( ':' @@ )?"`
	// MCP is set after parsing for `mcp:"…"`.
	MCP *StringLit
}

// Clause is a `requires` or `ensures` contract clause. Tokens are its
// tokens, keyword included (filled after parsing).
type Clause struct {
	Pos    Position
	EndPos Position
	Tokens []Token
	Kind   string     `parser:"@( 'requires' | 'ensures' )"`
	Text   *StringLit `parser:"( @@"`
	Expr   *Expr      `parser:"| @@ )"`
}

// AgentItem is a property `key: value` or a block `key { … }` (only
// `context { … }` is meaningful; the compiler checks the key).
type AgentItem struct {
	Pos   Position
	Key   *Key        `parser:"@@"`
	Value *Value      `parser:"( ':' @@"`
	Block []*Property `parser:"| '{' @@* '}' ) ( ',' | ';' )?"`
	// Prop and Context are filled after parsing: Prop for `key: value`,
	// Context for `context { … }`.
	Prop    *Property
	Context *ContextBlock
}

// ContextBlock is `context { key: value … }` inside an agent.
type ContextBlock struct {
	Pos   Position
	Props []*Property
}

// Protocol is `protocol NAME { field: type … }`.
type Protocol struct {
	Pos    Position
	Name   *Name    `parser:"'protocol' @@"`
	Fields []*Field `parser:"'{' @@* '}'"`
}

// Field is one protocol field.
type Field struct {
	Pos  Position
	Key  *Key      `parser:"@@ ':'"`
	Type *TypeExpr `parser:"@@ ( ',' | ';' )?"`
}

// Include is `include "path";`.
type Include struct {
	Pos  Position
	Path *StringLit `parser:"'include' @@ ';'?"`
}

// UseConfig is `use config NAME;`.
type UseConfig struct {
	Pos  Position
	Name *Name `parser:"'use' 'config' @@ ';'?"`
}

// OtherDecl is a declaration nexa agent does not compile (flow, test,
// type, job, server, …): kept with its kind, name and extent, checked only
// for balanced brackets, strings and comments.
type OtherDecl struct {
	Pos  Position
	Kind string
	Name string
	// NameAt is where the name is written.
	NameAt Position
}

// BrokenDecl stands for a declaration that could not be parsed; it keeps
// the kind and name (when they could be read) so that later checks do not
// report the name as unknown on top of the syntax error.
type BrokenDecl struct {
	Pos    Position
	Kind   string
	Name   string
	NameAt Position
}

func nameOf(n *Name) string {
	if n == nil {
		return ""
	}
	return n.Name
}

func namePos(n *Name, def Position) Position {
	if n == nil {
		return def
	}
	return n.Pos
}

// DeclKind implements Decl.
func (d *ToolFn) DeclKind() string { return "tool" }

// DeclName implements Decl.
func (d *ToolFn) DeclName() string { return nameOf(d.Name) }

// DeclPos implements Decl.
func (d *ToolFn) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *ToolFn) NamePos() Position { return namePos(d.Name, d.Pos) }

// DeclKind implements Decl.
func (d *LegacyTool) DeclKind() string { return "tool" }

// DeclName implements Decl.
func (d *LegacyTool) DeclName() string { return nameOf(d.Name) }

// DeclPos implements Decl.
func (d *LegacyTool) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *LegacyTool) NamePos() Position { return namePos(d.Name, d.Pos) }

// DeclKind implements Decl.
func (d *Agent) DeclKind() string { return "agent" }

// DeclName implements Decl.
func (d *Agent) DeclName() string { return nameOf(d.Name) }

// DeclPos implements Decl.
func (d *Agent) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *Agent) NamePos() Position { return namePos(d.Name, d.Pos) }

// DeclKind implements Decl.
func (d *Protocol) DeclKind() string { return "protocol" }

// DeclName implements Decl.
func (d *Protocol) DeclName() string { return nameOf(d.Name) }

// DeclPos implements Decl.
func (d *Protocol) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *Protocol) NamePos() Position { return namePos(d.Name, d.Pos) }

// DeclKind implements Decl.
func (d *Include) DeclKind() string { return "include" }

// DeclName implements Decl.
func (d *Include) DeclName() string {
	if d.Path == nil {
		return ""
	}
	return d.Path.Value()
}

// DeclPos implements Decl.
func (d *Include) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *Include) NamePos() Position {
	if d.Path == nil {
		return d.Pos
	}
	return d.Path.Pos
}

// DeclKind implements Decl.
func (d *UseConfig) DeclKind() string { return "use_config" }

// DeclName implements Decl.
func (d *UseConfig) DeclName() string { return nameOf(d.Name) }

// DeclPos implements Decl.
func (d *UseConfig) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *UseConfig) NamePos() Position { return namePos(d.Name, d.Pos) }

// DeclKind implements Decl.
func (d *OtherDecl) DeclKind() string { return d.Kind }

// DeclName implements Decl.
func (d *OtherDecl) DeclName() string { return d.Name }

// DeclPos implements Decl.
func (d *OtherDecl) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *OtherDecl) NamePos() Position { return d.NameAt }

// DeclKind implements Decl.
func (d *BrokenDecl) DeclKind() string { return d.Kind }

// DeclName implements Decl.
func (d *BrokenDecl) DeclName() string { return d.Name }

// DeclPos implements Decl.
func (d *BrokenDecl) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *BrokenDecl) NamePos() Position { return d.NameAt }

// TypeDecl is `type Name = T` with an optional `@ "constraint"` (a
// semantic type of 2.x).
type TypeDecl struct {
	Pos        Position
	Name       *Name      `parser:"'type' @@ '='"`
	Type       *TypeExpr  `parser:"@@"`
	Constraint *StringLit `parser:"( '@' @@ )? ';'?"`
}

// DeclKind implements Decl.
func (d *TypeDecl) DeclKind() string { return "type" }

// DeclName implements Decl.
func (d *TypeDecl) DeclName() string { return nameOf(d.Name) }

// DeclPos implements Decl.
func (d *TypeDecl) DeclPos() Position { return d.Pos }

// NamePos implements Decl.
func (d *TypeDecl) NamePos() Position { return namePos(d.Name, d.Pos) }

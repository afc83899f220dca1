package ir

// Stmt is one lowered statement of a native tool body: *ReturnStmt,
// *PrintStmt, *AssignStmt or *IfStmt. The set is closed (the unexported
// method) so that an executor can switch over it exhaustively.
//
// Semantics an executor must follow (docs/reference/language.md#native-bodies):
//   - Statements run in order; ReturnStmt ends the call with its value as the
//     result (a string as is, nil as "", anything else JSON-encoded, like
//     python! bodies). Falling off the end returns "".
//   - PrintStmt writes the value (formatted like a result) and a newline to
//     the tool log, never into the result.
//   - AssignStmt binds a local name; parameters are names too, bound to the
//     call's arguments (a missing optional parameter is nil, or its default).
type Stmt interface{ stmt() }

// Expr is a lowered expression: *Literal, *Interp, *Name, *Member, *Unary or
// *Binary.
//
// Values are JSON values: string, float64 or int64, bool, nil,
// []any, map[string]any. Operators:
//   - `+`: both numbers → sum; otherwise both operands formatted as text and
//     concatenated (so "n=" + 3 is "n=3").
//   - `-`, `*`, `/`, `%`: numbers only (an error result otherwise; `/` by zero
//     is an error result).
//   - `==`, `!=`: deep equality of JSON values (1 == 1.0).
//   - `<`, `<=`, `>`, `>=`: two numbers or two strings.
//   - `&&`, `||`: short-circuit on truthiness (false, nil, 0, "", empty list
//     or object are false); the result is a bool.
//   - `!`: logical not; unary `-`: numeric negation.
//
// Text formatting: a string as is, nil as "", a whole float without a
// fraction, anything else JSON-encoded.
type Expr interface{ expr() }

// ReturnStmt ends the call with Value (nil Value: the empty string).
type ReturnStmt struct {
	Value Expr
	Line  int
}

// PrintStmt writes Value to the tool log.
type PrintStmt struct {
	Value Expr
	Line  int
}

// AssignStmt binds Name to Value in the call's local scope.
type AssignStmt struct {
	Name  string
	Value Expr
	Line  int
}

// IfStmt runs Then when Cond is truthy, else Else (an `else if` chain is an
// IfStmt as the only statement of Else).
type IfStmt struct {
	Cond Expr
	Then []Stmt
	Else []Stmt
	Line int
}

// Literal is a constant: string, int64, float64, bool or nil.
type Literal struct {
	Value any
}

// Interp is a string with `#{name}` / `#{a.b}` parts: the parts are
// concatenated, each Expr formatted as text.
type Interp struct {
	Parts []InterpPart
}

// InterpPart is literal text or an expression.
type InterpPart struct {
	Text string `json:"text,omitempty"`
	Expr Expr   `json:"expr,omitempty"`
}

// Name reads a parameter or local.
type Name struct {
	Name string
}

// Member reads field Name of an object value (nil when absent or when X
// is not an object).
type Member struct {
	X    Expr
	Name string
}

// Unary applies Op ("-" or "!") to X.
type Unary struct {
	Op string
	X  Expr
}

// Binary applies Op to L and R (see Expr for the operators).
type Binary struct {
	Op string
	L  Expr
	R  Expr
}

func (*ReturnStmt) stmt() {}
func (*PrintStmt) stmt()  {}
func (*AssignStmt) stmt() {}
func (*IfStmt) stmt()     {}

func (*Literal) expr() {}
func (*Interp) expr()  {}
func (*Name) expr()    {}
func (*Member) expr()  {}
func (*Unary) expr()   {}
func (*Binary) expr()  {}

// The JSON forms carry a "kind" so that the canonical encoding of a body is
// unambiguous (it is part of the program hash) and readable in tests.

// nodeObj returns the JSON object form of a statement or expression.
func nodeObj(n any) *Object {
	switch x := n.(type) {
	case *ReturnStmt:
		return NewObject().Set("kind", "return").Set("value", exprJSON(x.Value))
	case *PrintStmt:
		return NewObject().Set("kind", "print").Set("value", exprJSON(x.Value))
	case *AssignStmt:
		return NewObject().Set("kind", "assign").Set("name", x.Name).Set("value", exprJSON(x.Value))
	case *IfStmt:
		return NewObject().Set("kind", "if").Set("cond", exprJSON(x.Cond)).Set("then", StmtsJSON(x.Then)).Set("else", StmtsJSON(x.Else))
	case *Literal:
		return NewObject().Set("kind", "literal").Set("value", x.Value)
	case *Interp:
		parts := make([]any, len(x.Parts))
		for i, p := range x.Parts {
			if p.Expr != nil {
				parts[i] = NewObject().Set("expr", exprJSON(p.Expr))
			} else {
				parts[i] = NewObject().Set("text", p.Text)
			}
		}
		return NewObject().Set("kind", "interp").Set("parts", parts)
	case *Name:
		return NewObject().Set("kind", "name").Set("name", x.Name)
	case *Member:
		return NewObject().Set("kind", "member").Set("x", exprJSON(x.X)).Set("name", x.Name)
	case *Unary:
		return NewObject().Set("kind", "unary").Set("op", x.Op).Set("x", exprJSON(x.X))
	case *Binary:
		return NewObject().Set("kind", "binary").Set("op", x.Op).Set("l", exprJSON(x.L)).Set("r", exprJSON(x.R))
	}
	return NewObject()
}

func exprJSON(e Expr) any {
	if e == nil {
		return nil
	}
	return nodeObj(e)
}

// StmtsJSON is the JSON form of a native body, as the canonical IR (and
// so the program hash) encodes it.
func StmtsJSON(ss []Stmt) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = nodeObj(s)
	}
	return out
}

// MarshalJSON implements json.Marshaler.
func (s *ReturnStmt) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(s)), nil }

// MarshalJSON implements json.Marshaler.
func (s *PrintStmt) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(s)), nil }

// MarshalJSON implements json.Marshaler.
func (s *AssignStmt) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(s)), nil }

// MarshalJSON implements json.Marshaler.
func (s *IfStmt) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(s)), nil }

// MarshalJSON implements json.Marshaler.
func (e *Literal) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(e)), nil }

// MarshalJSON implements json.Marshaler.
func (e *Interp) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(e)), nil }

// MarshalJSON implements json.Marshaler.
func (e *Name) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(e)), nil }

// MarshalJSON implements json.Marshaler.
func (e *Member) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(e)), nil }

// MarshalJSON implements json.Marshaler.
func (e *Unary) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(e)), nil }

// MarshalJSON implements json.Marshaler.
func (e *Binary) MarshalJSON() ([]byte, error) { return CanonicalJSON(nodeObj(e)), nil }

package compile

import (
	"encoding/json"
)

// Stmt is one lowered statement of a native tool body: *ReturnStmt,
// *PrintStmt, *AssignStmt or *IfStmt. The set is closed (the unexported
// method) so that an executor can switch over it exhaustively.
//
// Semantics an executor must follow (language.md 4.3):
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

// MarshalJSON implements json.Marshaler.
func (s *ReturnStmt) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind  string `json:"kind"`
		Value Expr   `json:"value"`
	}{"return", s.Value})
}

// MarshalJSON implements json.Marshaler.
func (s *PrintStmt) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind  string `json:"kind"`
		Value Expr   `json:"value"`
	}{"print", s.Value})
}

// MarshalJSON implements json.Marshaler.
func (s *AssignStmt) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind  string `json:"kind"`
		Name  string `json:"name"`
		Value Expr   `json:"value"`
	}{"assign", s.Name, s.Value})
}

// MarshalJSON implements json.Marshaler.
func (s *IfStmt) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind string `json:"kind"`
		Cond Expr   `json:"cond"`
		Then []Stmt `json:"then"`
		Else []Stmt `json:"else"`
	}{"if", s.Cond, nonNilStmts(s.Then), nonNilStmts(s.Else)})
}

func nonNilStmts(s []Stmt) []Stmt {
	if s == nil {
		return []Stmt{}
	}
	return s
}

// MarshalJSON implements json.Marshaler.
func (e *Literal) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind  string `json:"kind"`
		Value any    `json:"value"`
	}{"literal", e.Value})
}

// MarshalJSON implements json.Marshaler.
func (e *Interp) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind  string       `json:"kind"`
		Parts []InterpPart `json:"parts"`
	}{"interp", e.Parts})
}

// MarshalJSON implements json.Marshaler.
func (e *Name) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}{"name", e.Name})
}

// MarshalJSON implements json.Marshaler.
func (e *Member) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind string `json:"kind"`
		X    Expr   `json:"x"`
		Name string `json:"name"`
	}{"member", e.X, e.Name})
}

// MarshalJSON implements json.Marshaler.
func (e *Unary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind string `json:"kind"`
		Op   string `json:"op"`
		X    Expr   `json:"x"`
	}{"unary", e.Op, e.X})
}

// MarshalJSON implements json.Marshaler.
func (e *Binary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind string `json:"kind"`
		Op   string `json:"op"`
		L    Expr   `json:"l"`
		R    Expr   `json:"r"`
	}{"binary", e.Op, e.L, e.R})
}

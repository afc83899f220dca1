package lang

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Parse implements participle.Parseable: `{ statements }`.
func (b *Block) Parse(pl *lexer.PeekingLexer) error {
	lex := cursor{pl}
	t := lex.Peek()
	if !isPunct(t, "{") {
		return participle.NextMatch
	}
	return parseBlock(lex, b)
}

// parseBlock reads a block; nested blocks recurse, bounded by the bracket
// depth the splitter checked.
func parseBlock(lex cursor, b *Block) error {
	t := lex.Next()
	b.Pos = pos(t)
	for {
		n := lex.Peek()
		switch {
		case isPunct(n, "}"):
			b.EndPos = pos(n)
			lex.Next()
			return nil
		case isPunct(n, ";"):
			lex.Next()
			continue
		case n.EOF() || n.Type == Sep:
			return expected(n, "a statement or `}`")
		}
		st := new(Stmt)
		if err := parseStmt(lex, st); err != nil {
			return err
		}
		b.Stmts = append(b.Stmts, st)
	}
}

func parseStmt(lex cursor, st *Stmt) error {
	t := lex.Peek()
	st.Pos = pos(t)
	switch {
	case isPunct(t, "python!"):
		lex.Next()
		c := lex.Peek()
		if c.Type != String && c.Type != RawString {
			return expected(c, `a string after python! (python! """…""")`)
		}
		lex.Next()
		st.Python = new(PythonStmt)
		st.Python.Pos, st.Python.Code = pos(t), &StringLit{Pos: pos(c), Raw: c.Value}
		return nil
	case t.Type == Ident && t.Value == "return":
		lex.Next()
		st.Return = new(ReturnStmt)
		st.Return.Pos = pos(t)
		if startsExpr(lex.Peek()) {
			st.Return.Value = new(Expr)
			return parseExpr(lex, st.Return.Value)
		}
		return nil
	case t.Type == Ident && t.Value == "print":
		lex.Next()
		if !startsExpr(lex.Peek()) {
			return expected(lex.Peek(), "an expression after print")
		}
		st.Print = &PrintStmt{Pos: pos(t), Value: new(Expr)}
		return parseExpr(lex, st.Print.Value)
	case t.Type == Ident && t.Value == "if":
		return parseIf(lex, st)
	}
	if t.Type == Ident && unsupportedStmtKeywords[t.Value] != "" {
		other := &OtherStmt{}
		switch err := parseOther(lex, other); err {
		case nil:
			st.Other = other
			return nil
		case participle.NextMatch:
		default:
			return err
		}
	}
	if !startsExpr(t) {
		return expected(t, "a statement or `}`")
	}
	es := new(ExprStmt)
	es.Pos, es.X = pos(t), new(Expr)
	if err := parseExpr(lex, es.X); err != nil {
		return err
	}
	if c := lex.Peek(); isPunct(c, "=") || isPunct(c, "+=") || isPunct(c, "-=") {
		lex.Next()
		es.Op = c.Value
		if !startsExpr(lex.Peek()) {
			return expected(lex.Peek(), exprWords)
		}
		es.Value = new(Expr)
		if err := parseExpr(lex, es.Value); err != nil {
			return err
		}
	}
	st.Expr = es
	return nil
}

func parseIf(lex cursor, st *Stmt) error {
	t := lex.Next()
	is := new(IfStmt)
	is.Pos, is.Cond, is.Then = pos(t), new(Expr), new(Block)
	st.If = is
	if !startsExpr(lex.Peek()) {
		return expected(lex.Peek(), "a condition after if")
	}
	if err := parseExpr(lex, is.Cond); err != nil {
		return err
	}
	if c := lex.Peek(); !isPunct(c, "{") {
		return expected(c, "`{`")
	}
	if err := parseBlock(lex, is.Then); err != nil {
		return err
	}
	for {
		e := lex.Peek()
		if e.Type != Ident || e.Value != "else" {
			return nil
		}
		lex.Next()
		arm := new(ElseArm)
		arm.Pos, arm.Then = pos(e), new(Block)
		if n := lex.Peek(); n.Type == Ident && n.Value == "if" {
			lex.Next()
			if !startsExpr(lex.Peek()) {
				return expected(lex.Peek(), "a condition after else if")
			}
			arm.Cond = new(Expr)
			if err := parseExpr(lex, arm.Cond); err != nil {
				return err
			}
		}
		if c := lex.Peek(); !isPunct(c, "{") {
			return expected(c, "`{`")
		}
		if err := parseBlock(lex, arm.Then); err != nil {
			return err
		}
		is.Arms = append(is.Arms, arm)
	}
}

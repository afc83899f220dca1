package lang

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Parse implements participle.Parseable: `@name` with optional arguments.
func (d *Decorator) Parse(pl *lexer.PeekingLexer) error {
	lex := &cursor{pl: pl}
	if !isPunct(lex.Peek(), "@") {
		return participle.NextMatch
	}
	return parseDecorator(lex, d)
}

// parseDecorator reads a decorator starting at its `@`.
func parseDecorator(lex *cursor, d *Decorator) error {
	t := lex.Next()
	d.Pos = t.Pos
	n := lex.Peek()
	if n.Type != Ident {
		return expected(n, "a decorator name after `@`")
	}
	lex.Next()
	d.Name = n.Value
	if !isPunct(lex.Peek(), "(") {
		return nil
	}
	lex.Next()
	for {
		c := lex.Peek()
		if isPunct(c, ")") {
			lex.Next()
			return nil
		}
		if !startsValue(c) {
			return expected(c, "an argument or `)`")
		}
		a := lex.n.arg()
		a.Pos, a.First = c.Pos, lex.n.value()
		if err := parseValue(lex, a.First); err != nil {
			return err
		}
		if c := lex.Peek(); isPunct(c, ":") || isPunct(c, "=") {
			lex.Next()
			a.Named = lex.n.value()
			if !startsValue(lex.Peek()) {
				return expected(lex.Peek(), valueWords)
			}
			if err := parseValue(lex, a.Named); err != nil {
				return err
			}
		}
		d.Args = lex.n.pushArg(d.Args, a)
		switch c := lex.Peek(); {
		case isPunct(c, ","):
			lex.Next()
		case isPunct(c, ")"):
		default:
			return expected(c, "`,` or `)`")
		}
	}
}

// Parse implements participle.Parseable: `name`, `name: Type`, with an
// optional `= default`.
func (p *Param) Parse(pl *lexer.PeekingLexer) error {
	lex := &cursor{pl: pl}
	if lex.Peek().Type != Ident {
		return participle.NextMatch
	}
	return parseParam(lex, p)
}

// parseParam reads a parameter starting at its name.
func parseParam(lex *cursor, p *Param) error {
	t := lex.Next()
	p.Pos, p.Name = t.Pos, t.Value
	if isPunct(lex.Peek(), ":") {
		lex.Next()
		p.Type = lex.n.typeExpr()
		if err := parseType(lex, p.Type); err != nil {
			return err
		}
	}
	if isPunct(lex.Peek(), "=") {
		lex.Next()
		p.Default = lex.n.value()
		if !startsValue(lex.Peek()) {
			return expected(lex.Peek(), valueWords)
		}
		if err := parseValue(lex, p.Default); err != nil {
			return err
		}
	}
	if c := lex.Peek(); !isPunct(c, ",") && !isPunct(c, ")") {
		return expected(c, "`,`, `)`, `:` or `=`")
	}
	return nil
}

// Parse implements participle.Parseable: `{ statements }`.
func (b *Block) Parse(pl *lexer.PeekingLexer) error {
	lex := &cursor{pl: pl}
	t := lex.Peek()
	if !isPunct(t, "{") {
		return participle.NextMatch
	}
	return parseBlock(lex, b)
}

// parseBlock reads a block; nested blocks recurse, bounded by the bracket
// depth the splitter checked.
func parseBlock(lex *cursor, b *Block) error {
	t := lex.Next()
	b.Pos = t.Pos
	for {
		n := lex.Peek()
		switch {
		case isPunct(n, "}"):
			b.EndPos = n.Pos
			lex.Next()
			return nil
		case isPunct(n, ";"):
			lex.Next()
			continue
		case n.EOF() || n.Type == Sep:
			return expected(n, "a statement or `}`")
		}
		st := lex.n.stmt()
		if err := parseStmt(lex, st); err != nil {
			return err
		}
		b.Stmts = lex.n.pushStmt(b.Stmts, st)
	}
}

func parseStmt(lex *cursor, st *Stmt) error {
	t := lex.Peek()
	st.Pos = t.Pos
	switch {
	case isPunct(t, "python!"):
		lex.Next()
		c := lex.Peek()
		if c.Type != String && c.Type != RawString {
			return expected(c, `a string after python! (python! """…""")`)
		}
		lex.Next()
		st.Python = lex.n.python()
		st.Python.Pos, st.Python.Code = t.Pos, lex.n.strLit(c.Pos, c.Value)
		return nil
	case t.Type == Ident && t.Value == "return":
		lex.Next()
		st.Return = lex.n.ret()
		st.Return.Pos = t.Pos
		if startsExpr(lex.Peek()) {
			st.Return.Value = lex.n.expr()
			return parseExpr(lex, st.Return.Value)
		}
		return nil
	case t.Type == Ident && t.Value == "print":
		lex.Next()
		if !startsExpr(lex.Peek()) {
			return expected(lex.Peek(), "an expression after print")
		}
		st.Print = &PrintStmt{Pos: t.Pos, Value: lex.n.expr()}
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
	es := lex.n.exprStmt()
	es.Pos, es.X = t.Pos, lex.n.expr()
	if err := parseExpr(lex, es.X); err != nil {
		return err
	}
	if c := lex.Peek(); isPunct(c, "=") || isPunct(c, "+=") || isPunct(c, "-=") {
		lex.Next()
		es.Op = c.Value
		if !startsExpr(lex.Peek()) {
			return expected(lex.Peek(), exprWords)
		}
		es.Value = lex.n.expr()
		if err := parseExpr(lex, es.Value); err != nil {
			return err
		}
	}
	st.Expr = es
	return nil
}

func parseIf(lex *cursor, st *Stmt) error {
	t := lex.Next()
	is := lex.n.ifStmt()
	is.Pos, is.Cond, is.Then = t.Pos, lex.n.expr(), lex.n.block()
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
		arm := lex.n.arm()
		arm.Pos, arm.Then = e.Pos, lex.n.block()
		if n := lex.Peek(); n.Type == Ident && n.Value == "if" {
			lex.Next()
			if !startsExpr(lex.Peek()) {
				return expected(lex.Peek(), "a condition after else if")
			}
			arm.Cond = lex.n.expr()
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
		is.Arms = lex.n.pushArm(is.Arms, arm)
	}
}

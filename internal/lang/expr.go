package lang

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// binaryOps are the operators of a flat expression chain (the compiler
// rejects the ones outside the native subset with a precise message).
var binaryOps = map[string]bool{
	"==": true, "!=": true, "<=": true, ">=": true, "<": true, ">": true,
	"+": true, "-": true, "*": true, "/": true, "%": true,
	"&&": true, "||": true, "??": true, "|>>": true, "&>>": true, ">>": true, "|>": true,
}

func isBinaryOp(t *lexer.Token) bool {
	if t.Type == Punct {
		return binaryOps[t.Value]
	}
	return t.Type == Ident && (t.Value == "and" || t.Value == "or")
}

// startsExpr reports whether t can begin an expression.
func startsExpr(t *lexer.Token) bool {
	switch t.Type {
	case Number, String, RawString, Ident:
		return true
	case Punct:
		return t.Value == "-" || t.Value == "!" || t.Value == "(" || t.Value == "["
	}
	return false
}

const exprWords = "an expression"

// Parse implements participle.Parseable.
func (e *Expr) Parse(pl *lexer.PeekingLexer) error {
	lex := cursor{pl}
	if !startsExpr(lex.Peek()) {
		return participle.NextMatch
	}
	return parseExpr(lex, e)
}

func parseExpr(lex cursor, e *Expr) error {
	e.Pos = pos(lex.Peek())
	e.Left = new(Unary)
	if err := parseUnary(lex, e.Left); err != nil {
		return err
	}
	for isBinaryOp(lex.Peek()) {
		t := lex.Next()
		op := new(BinOp)
		op.Pos, op.Op, op.Right = pos(t), t.Value, new(Unary)
		if err := parseUnary(lex, op.Right); err != nil {
			return err
		}
		e.Ops = append(e.Ops, op)
	}
	return nil
}

func parseUnary(lex cursor, u *Unary) error {
	u.Pos = pos(lex.Peek())
	for {
		t := lex.Peek()
		if isPunct(t, "-") || isPunct(t, "!") || (t.Type == Ident && t.Value == "not") {
			lex.Next()
			u.Ops = append(u.Ops, t.Value)
			continue
		}
		break
	}
	u.X = new(Postfix)
	return parsePostfix(lex, u.X)
}

func parsePostfix(lex cursor, p *Postfix) error {
	p.Pos = pos(lex.Peek())
	p.Primary = new(Primary)
	if err := parsePrimary(lex, p.Primary); err != nil {
		return err
	}
	for {
		t := lex.Peek()
		switch {
		case isPunct(t, "."):
			lex.Next()
			n := lex.Peek()
			if n.Type != Ident {
				return expected(n, "a name after `.`")
			}
			lex.Next()
			name := n.Value
			p.Suffixes = append(p.Suffixes, &Suffix{Pos: pos(t), Member: &name})
		case isPunct(t, "("):
			lex.Next()
			call := &CallArgs{Pos: pos(t)}
			for {
				n := lex.Peek()
				if isPunct(n, ")") {
					lex.Next()
					break
				}
				if !startsExpr(n) {
					return expected(n, "an argument or `)`")
				}
				arg := &CallArg{Pos: pos(n), Value: &Expr{}}
				if err := parseExpr(lex, arg.Value); err != nil {
					return err
				}
				if c := lex.Peek(); isPunct(c, "=") || isPunct(c, ":") {
					lex.Next()
					arg.Named = &Expr{}
					if !startsExpr(lex.Peek()) {
						return expected(lex.Peek(), exprWords)
					}
					if err := parseExpr(lex, arg.Named); err != nil {
						return err
					}
				}
				call.Args = append(call.Args, arg)
				c := lex.Peek()
				if isPunct(c, ",") {
					lex.Next()
					continue
				}
				if !isPunct(c, ")") {
					return expected(c, "`,` or `)`")
				}
			}
			p.Suffixes = append(p.Suffixes, &Suffix{Pos: pos(t), Call: call})
		case isPunct(t, "["):
			lex.Next()
			idx := &Expr{}
			if !startsExpr(lex.Peek()) {
				return expected(lex.Peek(), exprWords)
			}
			if err := parseExpr(lex, idx); err != nil {
				return err
			}
			if c := lex.Peek(); !isPunct(c, "]") {
				return expected(c, "`]`")
			}
			lex.Next()
			p.Suffixes = append(p.Suffixes, &Suffix{Pos: pos(t), Index: idx})
		default:
			return nil
		}
	}
}

func parsePrimary(lex cursor, p *Primary) error {
	t := lex.Peek()
	p.Pos = pos(t)
	switch {
	case t.Type == Number:
		p.Number = new(t.Value)
	case t.Type == String || t.Type == RawString:
		p.Str = &StringLit{Pos: pos(t), Raw: t.Value}
	case t.Type == Ident && (t.Value == "true" || t.Value == "false"):
		p.Bool = new(t.Value)
	case t.Type == Ident && (t.Value == "null" || t.Value == "None" || t.Value == "nil"):
		p.Null = true
	case t.Type == Ident:
		p.Name = new(t.Value)
	case isPunct(t, "("):
		lex.Next()
		p.Paren = new(Expr)
		if !startsExpr(lex.Peek()) {
			return expected(lex.Peek(), exprWords)
		}
		if err := parseExpr(lex, p.Paren); err != nil {
			return err
		}
		if c := lex.Peek(); !isPunct(c, ")") {
			return expected(c, "`)`")
		}
		lex.Next()
		return nil
	case isPunct(t, "["):
		lex.Next()
		list := &ListExpr{Pos: pos(t)}
		err := parseListItems(lex, startsExpr, exprWords, func(*lexer.Token) error {
			item := &Expr{}
			if err := parseExpr(lex, item); err != nil {
				return err
			}
			list.Items = append(list.Items, item)
			return nil
		})
		if err != nil {
			return err
		}
		p.List = list
		return nil
	default:
		return expected(t, exprWords)
	}
	lex.Next()
	return nil
}

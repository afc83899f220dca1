package lang

import (
	"github.com/alecthomas/participle/v2"
)

// parseToolFn reads an annotated function,
//
//	Decorator* 'fn' Name '(' ( Param ( ',' Param? )* )? ')' ( ( ':' | '->' ) TypeExpr )? Block
//
// by hand, straight from the declaration's tokens. It is the grammar of the
// participle tags of ToolFn (kept there as its specification, and checked
// against this function by a test), with the same results and the same
// errors; it is written by hand because @tool functions are by far the most
// frequent declaration, and going through participle (copying every token
// into its stream, then reflection per node) made a 3,000-tool program
// compile in over 100 ms.
func parseToolFn(lex *cursor) (*ToolFn, error) {
	fn := lex.n.toolFn()
	fn.Pos = lex.Peek().Pos
	for isPunct(lex.Peek(), "@") {
		d := lex.n.decorator()
		if err := parseDecorator(lex, d); err != nil {
			return nil, err
		}
		fn.Decorators = lex.n.pushDecorator(fn.Decorators, d)
	}
	if t := lex.Peek(); t.Type != Ident || t.Value != "fn" {
		return nil, expected(t, "`fn`")
	}
	lex.Next()
	t := lex.Peek()
	if t.Type != Ident {
		return nil, expected(t, "a name")
	}
	lex.Next()
	fn.Name = lex.n.name()
	fn.Name.Pos, fn.Name.Name = t.Pos, t.Value
	if t := lex.Peek(); !isPunct(t, "(") {
		return nil, expected(t, "`(`")
	}
	lex.Next()
	if lex.Peek().Type == Ident {
		for {
			p := lex.n.param()
			if err := parseParam(lex, p); err != nil {
				return nil, err
			}
			fn.Params = lex.n.pushParam(fn.Params, p)
			// ( ',' Param? )*: empty entries between commas are allowed
			for isPunct(lex.Peek(), ",") {
				lex.Next()
				if lex.Peek().Type == Ident {
					break
				}
			}
			if lex.Peek().Type != Ident {
				break
			}
		}
	}
	if t := lex.Peek(); !isPunct(t, ")") {
		return nil, expected(t, "`)`")
	}
	lex.Next()
	if t := lex.Peek(); isPunct(t, ":") || isPunct(t, "->") {
		lex.Next()
		n := lex.Peek()
		if n.Type != Ident && n.Type != String && n.Type != RawString {
			return nil, expected(n, typeWords)
		}
		fn.Returns = lex.n.typeExpr()
		if err := parseType(lex, fn.Returns); err != nil {
			return nil, err
		}
	}
	if t := lex.Peek(); !isPunct(t, "{") {
		return nil, expected(t, "`{`")
	}
	fn.Body = lex.n.block()
	if err := parseBlock(lex, fn.Body); err != nil {
		return nil, err
	}
	if next := lex.Peek(); next.Type != Sep {
		return nil, &participle.UnexpectedTokenError{Unexpected: *next}
	}
	return fn, nil
}

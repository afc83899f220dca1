package lang

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// expected builds the error of a hand-written production; syntaxDiag turns
// it into "expected WHAT, found TOKEN".
func expected(t *lexer.Token, what string) error {
	return &participle.UnexpectedTokenError{Unexpected: *t, Expect: what}
}

const valueWords = "a value (string, number, true/false, name, list or object)"

func isPunct(t *lexer.Token, v string) bool { return t.Type == Punct && t.Value == v }

// startsValue reports whether t can begin a value.
func startsValue(t *lexer.Token) bool {
	switch t.Type {
	case Number, String, RawString, Ident:
		return true
	case Punct:
		return t.Value == "-" || t.Value == "[" || t.Value == "{"
	}
	return false
}

// Parse implements participle.Parseable.
func (v *Value) Parse(pl *lexer.PeekingLexer) error {
	lex := cursor{pl}
	if !startsValue(lex.Peek()) {
		return participle.NextMatch
	}
	return parseValue(lex, v)
}

// parseValue reads one value; recursion is bounded by the bracket depth the
// splitter already checked.
func parseValue(lex cursor, v *Value) error {
	t := lex.Peek()
	v.Pos = pos(t)
	switch {
	case isPunct(t, "-"):
		lex.Next()
		n := lex.Peek()
		if n.Type != Number {
			return expected(n, "a number after `-`")
		}
		lex.Next()
		v.Number = &NumberLit{Pos: pos(t), Neg: true, Text: n.Value}
	case t.Type == Number:
		lex.Next()
		v.Number = &NumberLit{Pos: pos(t), Neg: false, Text: t.Value}
	case t.Type == String || t.Type == RawString:
		lex.Next()
		v.Str = &StringLit{Pos: pos(t), Raw: t.Value}
	case t.Type == Ident && (t.Value == "true" || t.Value == "false"):
		lex.Next()
		v.Bool = new(t.Value)
	case t.Type == Ident:
		lex.Next()
		ref := &RefLit{Pos: pos(t), Parts: []string{t.Value}}
		for isPunct(lex.Peek(), ".") {
			n := lex.PeekAfter()
			if n.Type != Ident {
				break
			}
			lex.Next()
			lex.Next()
			ref.Parts = append(ref.Parts, n.Value)
		}
		v.Ref = ref
	case isPunct(t, "["):
		lex.Next()
		list := &ListLit{Pos: pos(t)}
		err := parseListItems(lex, startsValue, valueWords, func(n *lexer.Token) error {
			it := &ListItem{Pos: pos(n), First: new(Value)}
			if err := parseValue(lex, it.First); err != nil {
				return err
			}
			if isPunct(lex.Peek(), ":") {
				lex.Next()
				it.Labeled = new(Value)
				if !startsValue(lex.Peek()) {
					return expected(lex.Peek(), valueWords)
				}
				if err := parseValue(lex, it.Labeled); err != nil {
					return err
				}
			}
			list.Items = append(list.Items, it)
			return nil
		})
		if err != nil {
			return err
		}
		v.List = list
	case isPunct(t, "{"):
		lex.Next()
		obj := &ObjectLit{Pos: pos(t)}
		for {
			n := lex.Peek()
			if isPunct(n, "}") {
				lex.Next()
				break
			}
			key := &Key{Pos: pos(n)}
			switch n.Type {
			case Ident:
				key.Ident = n.Value
			case String, RawString:
				key.Str = &StringLit{Pos: pos(n), Raw: n.Value}
			default:
				return expected(n, "a property name or `}`")
			}
			lex.Next()
			if c := lex.Peek(); !isPunct(c, ":") {
				return expected(c, "`:`")
			}
			lex.Next()
			val := new(Value)
			if !startsValue(lex.Peek()) {
				return expected(lex.Peek(), valueWords)
			}
			if err := parseValue(lex, val); err != nil {
				return err
			}
			obj.Entries = append(obj.Entries, &Property{Pos: pos(n), Key: key, Value: val})
			if c := lex.Peek(); isPunct(c, ",") || isPunct(c, ";") {
				lex.Next()
			}
		}
		v.Object = obj
	default:
		return expected(t, valueWords)
	}
	return nil
}

// parseListItems parses the rest of a list after its `[`, the `]`
// included: items separated by commas, a trailing comma allowed. Each item
// must start as starts says (words names what may, for the error) and is
// parsed by item, given its first token.
func parseListItems(lex cursor, starts func(*lexer.Token) bool, words string, item func(first *lexer.Token) error) error {
	for {
		n := lex.Peek()
		if isPunct(n, "]") {
			lex.Next()
			return nil
		}
		if !starts(n) {
			return expected(n, words+" or `]`")
		}
		if err := item(n); err != nil {
			return err
		}
		c := lex.Peek()
		if isPunct(c, ",") {
			lex.Next()
			continue
		}
		if !isPunct(c, "]") {
			return expected(c, "`,` or `]`")
		}
	}
}

// Parse implements participle.Parseable. A type is never optional where
// the grammar asks for one (after `:`, `->` or `=`), so a token that cannot
// start one is an error here, worded as "expected a type (…)".
func (te *TypeExpr) Parse(pl *lexer.PeekingLexer) error {
	return parseType(cursor{pl}, te)
}

const typeWords = "a type (string, int, float, bool, list[T], dict[K, V], a protocol name, …)"

func parseType(lex cursor, te *TypeExpr) error {
	te.Pos = pos(lex.Peek())
	for {
		t := lex.Peek()
		term := new(TypeTerm)
		term.Pos = pos(t)
		switch t.Type {
		case Ident:
			term.Name = t.Value
		case String, RawString:
			term.Quoted = &StringLit{Pos: pos(t), Raw: t.Value}
		default:
			return expected(t, typeWords)
		}
		lex.Next()
		if term.Quoted == nil {
			switch n := lex.Peek(); {
			case isPunct(n, "["):
				lex.Next()
				for {
					arg := new(TypeExpr)
					if err := parseType(lex, arg); err != nil {
						return err
					}
					term.Args = append(term.Args, arg)
					c := lex.Peek()
					if isPunct(c, ",") {
						lex.Next()
						continue
					}
					if isPunct(c, "]") {
						lex.Next()
						break
					}
					return expected(c, "`,` or `]`")
				}
			case isPunct(n, "<"):
				lex.Next()
				for {
					c := lex.Peek()
					if c.Type != Ident {
						return expected(c, "a type name")
					}
					lex.Next()
					term.Angle = append(term.Angle, c.Value)
					c = lex.Peek()
					if isPunct(c, ",") {
						lex.Next()
						continue
					}
					if isPunct(c, ">") {
						lex.Next()
						break
					}
					return expected(c, "`,` or `>`")
				}
			}
		}
		if isPunct(lex.Peek(), "?") {
			lex.Next()
			term.Optional = true
		}
		te.Alts = append(te.Alts, term)
		if !isPunct(lex.Peek(), "|") {
			return nil
		}
		lex.Next()
	}
}

package lang

import "strings"

// firstSet reads the EBNF text participle gives for "what was expected"
// (the rest of a production) and returns what may come first, so that a
// message says "expected `:` or `{`" rather than quoting grammar.
func firstSet(ebnf string) []string {
	p := &ebnfParser{toks: ebnfTokens(ebnf)}
	alt := p.alt()
	var out []string
	seen := map[string]bool{}
	for _, f := range alt.first {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

type ebnfSet struct {
	first    []string
	nullable bool
}

type ebnfParser struct {
	toks []string
	i    int
	// depth bounds recursion on malformed input
	depth int
}

func ebnfTokens(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			toks = append(toks, s[i:min(j+1, len(s))])
			i = j + 1
		case c == '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				j = len(s) - i - 1
			}
			toks = append(toks, s[i:i+j+1])
			i += j + 1
		case strings.IndexByte("()|?*+", c) >= 0:
			toks = append(toks, string(c))
			i++
		default:
			j := i
			for j < len(s) && strings.IndexByte(` ()|?*+"<`, s[j]) < 0 {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

func (p *ebnfParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *ebnfParser) alt() ebnfSet {
	p.depth++
	defer func() { p.depth-- }()
	out := p.seq()
	for p.peek() == "|" {
		p.i++
		s := p.seq()
		out.first = append(out.first, s.first...)
		out.nullable = out.nullable || s.nullable
	}
	return out
}

func (p *ebnfParser) seq() ebnfSet {
	out := ebnfSet{nullable: true}
	for {
		t := p.peek()
		if t == "" || t == ")" || t == "|" {
			return out
		}
		item := p.item()
		if out.nullable {
			out.first = append(out.first, item.first...)
			out.nullable = item.nullable
		}
	}
}

func (p *ebnfParser) item() ebnfSet {
	t := p.peek()
	p.i++
	var s ebnfSet
	if t == "(" {
		if p.depth > 50 {
			return ebnfSet{}
		}
		s = p.alt()
		if p.peek() == ")" {
			p.i++
		}
	} else {
		s = ebnfSet{first: []string{t}}
	}
	switch p.peek() {
	case "?", "*":
		p.i++
		s.nullable = true
	case "+":
		p.i++
	}
	return s
}

// friendlyNames are the grammar's node names as a user would say them.
var friendlyNames = map[string]string{
	"Ident": "a name", "<ident>": "a name", "Name": "a name", "Key": "a property name",
	"String": "a string", "<string>": "a string", "RawString": "a string", "<rawstring>": "a string", "StringLit": "a string",
	"Number": "a number", "<number>": "a number",
	"Value":    "a value (string, number, true/false, name, list or object)",
	"Property": "a property `name: value`", "AgentItem": "a property `name: value`", "Field": "a field `name: type`",
	"TypeExpr": typeWords, "Block": "`{`", "Stmt": "a statement", "ExprStmt": "an expression",
	"Expr": "an expression", "Unary": "an expression", "Postfix": "an expression", "Primary": "an expression",
	"Param": "a parameter `name: type`", "Decorator": "a decorator `@name(…)`", "Arg": "a setting",
	"UseItem": "a tool name, std.NS, mcp:\"…\" or \"file.md\"", "Clause": "`requires` or `ensures`",
	"CallArg": "an argument", "ElseArm": "`else`", "CallArgs": "`(`", "Suffix": "`.`, `(` or `[`",
	"BinOp": "an operator", "PythonStmt": "python!", "ReturnStmt": "`return`", "PrintStmt": "`print`",
	"IfStmt": "`if`", "OtherStmt": "a statement",
}

// friendlyExpected rewrites participle's description of what it expected
// into the words of the language: "`:` or `{`", "a name", ….
func friendlyExpected(e string) string {
	e = strings.TrimSpace(e)
	if strings.HasPrefix(e, "a ") || strings.HasPrefix(e, "an ") || strings.HasPrefix(e, "`") {
		return e // already written for people (hand-written productions)
	}
	firsts := firstSet(e)
	if len(firsts) == 0 {
		return e
	}
	var words []string
	seen := map[string]bool{}
	for _, f := range firsts {
		w := f
		if len(f) >= 2 && f[0] == '"' && f[len(f)-1] == '"' {
			w = "`" + f[1:len(f)-1] + "`"
		} else if n, ok := friendlyNames[f]; ok {
			w = n
		}
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	if len(words) > 6 {
		words = append(words[:6], "…")
	}
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

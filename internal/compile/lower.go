package compile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/lang"
)

// maxExprOps bounds the operators of one expression chain so that the
// lowered tree stays shallow enough for every later recursive walk.
const maxExprOps = 1000

// lowerer turns a parsed native body into Stmts, reporting constructs
// outside the supported subset.
type lowerer struct {
	c     *compiler
	tool  string
	scope map[string]bool
}

func (l *lowerer) unsupported(pos lang.Position, construct string) {
	l.c.errorAt(pos, lang.CodeUnsupported,
		fmt.Sprintf(`write the body of %s in Python instead: python! """ … """`, l.tool),
		"%s is not supported in a native tool body", construct)
}

func (l *lowerer) block(stmts []*lang.Stmt) []ir.Stmt {
	var out []ir.Stmt
	for _, s := range stmts {
		if st := l.stmt(s); st != nil {
			out = append(out, st)
		}
	}
	return out
}

func (l *lowerer) stmt(s *lang.Stmt) ir.Stmt {
	switch {
	case s.Return != nil:
		var v ir.Expr
		if s.Return.Value != nil {
			v = l.expr(s.Return.Value)
		}
		return &ir.ReturnStmt{Value: v, Line: s.Pos.Line}
	case s.Print != nil:
		return &ir.PrintStmt{Value: l.expr(s.Print.Value), Line: s.Pos.Line}
	case s.If != nil:
		return l.ifStmt(s.If)
	case s.Other != nil:
		l.unsupported(s.Other.Pos, "`"+s.Other.Keyword+"` ("+s.Other.Construct+")")
		return nil
	case s.Python != nil:
		l.c.errorAt(s.Python.Pos, lang.CodeBadBody,
			"put all of the Python code in the one python! block, or write the body in Nexa statements only",
			"a tool body with python! may contain nothing else")
		return nil
	case s.Expr != nil && s.Expr.Op != "":
		return l.assign(s.Expr, s.Pos.Line)
	case s.Expr != nil:
		if isCall(s.Expr.X) {
			l.unsupported(s.Expr.Pos, "a function call")
		} else {
			l.unsupported(s.Expr.Pos, "an expression statement (its value would be discarded)")
		}
		return nil
	}
	return nil
}

// assign lowers `name = EXPR` (and `+=`, `-=`); the target must be a
// plain name.
func (l *lowerer) assign(a *lang.ExprStmt, line int) ir.Stmt {
	name, ok := targetName(a.X)
	if !ok {
		l.unsupported(a.Pos, "assignment to anything but a plain name")
		return nil
	}
	v := l.expr(a.Value)
	if a.Op != "=" {
		if !l.scope[name] {
			l.unknownName(a.Pos, name)
		}
		v = &ir.Binary{Op: a.Op[:1], L: &ir.Name{Name: name}, R: v}
	}
	l.scope[name] = true
	return &ir.AssignStmt{Name: name, Value: v, Line: line}
}

// targetName returns the name when the expression is exactly one name.
func targetName(e *lang.Expr) (string, bool) {
	if e == nil || len(e.Ops) > 0 || e.Left == nil || len(e.Left.Ops) > 0 || e.Left.X == nil ||
		len(e.Left.X.Suffixes) > 0 || e.Left.X.Primary == nil || e.Left.X.Primary.Name == nil {
		return "", false
	}
	return *e.Left.X.Primary.Name, true
}

func isCall(e *lang.Expr) bool {
	if len(e.Ops) > 0 || e.Left == nil || e.Left.X == nil {
		return false
	}
	sx := e.Left.X.Suffixes
	return len(sx) > 0 && sx[len(sx)-1].Call != nil
}

// ifStmt lowers an if/else-if/else chain into nested IfStmts (the nesting
// is as deep as the chain is long, so long chains are refused).
func (l *lowerer) ifStmt(s *lang.IfStmt) ir.Stmt {
	if len(s.Arms) > maxElseArms {
		l.unsupported(s.Pos, fmt.Sprintf("an if chain with more than %d else arms", maxElseArms))
		return nil
	}
	st := &ir.IfStmt{Cond: l.expr(s.Cond), Then: l.block(s.Then.Stmts), Line: s.Pos.Line}
	cur := st
	for i, arm := range s.Arms {
		if arm.Cond == nil {
			if i != len(s.Arms)-1 {
				l.c.errorAt(s.Arms[i+1].Pos, lang.CodeSyntax, "move the plain `else { … }` to the end of the chain",
					"`else` arm after the final `else`")
			}
			cur.Else = l.block(arm.Then.Stmts)
			break
		}
		next := &ir.IfStmt{Cond: l.expr(arm.Cond), Then: l.block(arm.Then.Stmts), Line: arm.Pos.Line}
		cur.Else = []ir.Stmt{next}
		cur = next
	}
	return st
}

// maxElseArms bounds an if chain (each arm nests one level in the IR).
const maxElseArms = 500

func (l *lowerer) unknownName(pos lang.Position, name string) {
	cands := make([]string, 0, len(l.scope))
	for n := range l.scope {
		cands = append(cands, n)
	}
	hint := "only the tool's parameters and names assigned earlier in the body can be read"
	if best := l.c.closest(name, cands); best != "" {
		hint = fmt.Sprintf("did you mean `%s`?", best)
	}
	l.c.errorAt(pos, lang.CodeUnknownName, hint, "unknown name `%s` in the body of tool %s", name, l.tool)
}

// precedence of binary operators; higher binds tighter.
var precedence = map[string]int{
	"||": 1, "or": 1,
	"&&": 2, "and": 2,
	"==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"+": 4, "-": 4,
	"*": 5, "/": 5, "%": 5,
}

var unsupportedOps = map[string]string{
	"??":  "the null-coalescing operator `??`",
	"|>>": "the DAG fork operator `|>>`",
	"&>>": "the DAG merge operator `&>>`",
	">>":  "the pipeline operator `>>`",
	"|>":  "the pipe operator `|>`",
}

// expr lowers a flat operator chain with precedence climbing (iterative,
// via an operand and an operator stack).
func (l *lowerer) expr(e *lang.Expr) ir.Expr {
	if e == nil {
		return &ir.Literal{}
	}
	if len(e.Ops) > maxExprOps {
		l.c.errorAt(e.Pos, lang.CodeUnsupported, "split it into several assignments",
			"expression with more than %d operators", maxExprOps)
		return &ir.Literal{}
	}
	operands := []ir.Expr{l.unary(e.Left)}
	var ops []string
	reduce := func() {
		op := ops[len(ops)-1]
		ops = ops[:len(ops)-1]
		r := operands[len(operands)-1]
		lft := operands[len(operands)-2]
		operands = operands[:len(operands)-2]
		switch op {
		case "and":
			op = "&&"
		case "or":
			op = "||"
		}
		operands = append(operands, &ir.Binary{Op: op, L: lft, R: r})
	}
	for _, b := range e.Ops {
		if what, bad := unsupportedOps[b.Op]; bad {
			l.unsupported(b.Pos, what)
		}
		p := precedence[b.Op]
		for len(ops) > 0 && precedence[ops[len(ops)-1]] >= p {
			reduce()
		}
		ops = append(ops, b.Op)
		operands = append(operands, l.unary(b.Right))
	}
	for len(ops) > 0 {
		reduce()
	}
	return operands[0]
}

func (l *lowerer) unary(u *lang.Unary) ir.Expr {
	if u == nil || u.X == nil {
		return &ir.Literal{}
	}
	x := l.postfix(u.X)
	for i := len(u.Ops) - 1; i >= 0; i-- {
		op := u.Ops[i]
		if op == "not" {
			op = "!"
		}
		x = &ir.Unary{Op: op, X: x}
	}
	return x
}

func (l *lowerer) postfix(p *lang.Postfix) ir.Expr {
	// a call is reported as such, not as an unknown function name
	for _, s := range p.Suffixes {
		if s.Call != nil {
			what := "a function call"
			if p.Primary != nil && p.Primary.Name != nil {
				what = fmt.Sprintf("a function call (`%s(…)`)", *p.Primary.Name)
			}
			l.unsupported(p.Pos, what)
			return &ir.Literal{}
		}
	}
	x := l.primary(p.Primary)
	for _, s := range p.Suffixes {
		switch {
		case s.Member != nil:
			x = &ir.Member{X: x, Name: *s.Member}
		case s.Index != nil:
			l.unsupported(s.Pos, "indexing with `[…]`")
		}
	}
	return x
}

func (l *lowerer) primary(p *lang.Primary) ir.Expr {
	switch {
	case p == nil:
		return &ir.Literal{}
	case p.Number != nil:
		return &ir.Literal{Value: numberValue(*p.Number, false)}
	case p.Str != nil:
		return l.interp(p.Str)
	case p.Bool != nil:
		return &ir.Literal{Value: *p.Bool == "true"}
	case p.Null:
		return &ir.Literal{}
	case p.Name != nil:
		if !l.scope[*p.Name] {
			l.unknownName(p.Pos, *p.Name)
		}
		return &ir.Name{Name: *p.Name}
	case p.Paren != nil:
		return l.expr(p.Paren)
	case p.List != nil:
		l.unsupported(p.Pos, "a list literal")
		return &ir.Literal{}
	}
	return &ir.Literal{}
}

// numberValue reads a number token as int64 when it is a whole number that
// fits, else float64.
func numberValue(text string, neg bool) any {
	if neg {
		text = "-" + text
	}
	if !strings.ContainsAny(text, ".eE") {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0.0 // out of range: ±Inf is not JSON; the lexer only gives digits
	}
	return f
}

// interp lowers a string literal with `#{a.b}` parts. `\#{` is a literal
// `#{`. Inside `#{…}` only a name or dotted path is supported.
func (l *lowerer) interp(s *lang.StringLit) ir.Expr {
	text := s.Value()
	if s.Triple() || !strings.Contains(text, "#{") {
		return &ir.Literal{Value: text}
	}
	var parts []ir.InterpPart
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			parts = append(parts, ir.InterpPart{Text: buf.String()})
			buf.Reset()
		}
	}
	for i := 0; i < len(text); i++ {
		if strings.HasPrefix(text[i:], `\#{`) {
			buf.WriteString("#{")
			i += 2
			continue
		}
		if !strings.HasPrefix(text[i:], "#{") {
			buf.WriteByte(text[i])
			continue
		}
		end := strings.IndexByte(text[i+2:], '}')
		if end < 0 {
			buf.WriteString(text[i:])
			break
		}
		inner := strings.TrimSpace(text[i+2 : i+2+end])
		path := strings.Split(inner, ".")
		ok := inner != ""
		for _, seg := range path {
			if !isIdent(seg) {
				ok = false
			}
		}
		if !ok {
			l.unsupported(s.Pos, fmt.Sprintf("the interpolation `#{%s}` (only `#{name}` and `#{a.b}` are)", inner))
			buf.WriteString(text[i : i+3+end])
			i += 2 + end
			continue
		}
		flush()
		if !l.scope[path[0]] {
			l.unknownName(s.Pos, path[0])
		}
		var x ir.Expr = &ir.Name{Name: path[0]}
		for _, seg := range path[1:] {
			x = &ir.Member{X: x, Name: seg}
		}
		parts = append(parts, ir.InterpPart{Expr: x})
		i += 2 + end
	}
	flush()
	if len(parts) == 1 && parts[0].Expr == nil {
		return &ir.Literal{Value: parts[0].Text}
	}
	return &ir.Interp{Parts: parts}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

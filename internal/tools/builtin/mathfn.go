package builtin

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

const (
	maxExprLen   = 10000
	maxExprDepth = 200
)

// exprParser evaluates arithmetic while parsing (recursive descent). It
// only knows numbers, operators, parentheses and a fixed table of
// functions and constants: nothing in the input can name or run code.
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ ("^" | "**") unary ]      (right associative)
//	primary = number | name | name "(" [ expr { "," expr } ] ")" | "(" expr ")"
//
// So -2^2 is -4 and 2^3^2 is 512, as in mathematics.
type exprParser struct {
	src   string
	pos   int
	depth int
}

type exprError struct {
	msg string
	pos int
}

func (e *exprError) Error() string { return e.msg }

func (p *exprParser) errf(format string, args ...any) error {
	return &exprError{msg: fmt.Sprintf(format, args...), pos: p.pos}
}

func (p *exprParser) skip() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
}

// accept consumes tok if it comes next.
func (p *exprParser) accept(tok string) bool {
	p.skip()
	if strings.HasPrefix(p.src[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *exprParser) peek() byte {
	p.skip()
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *exprParser) enter() error {
	p.depth++
	if p.depth > maxExprDepth {
		return p.errf("expression is nested too deeply")
	}
	return nil
}

func (p *exprParser) expr() (float64, error) {
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer func() { p.depth-- }()
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for {
		switch p.peek() {
		case '+':
			p.pos++
			r, err := p.term()
			if err != nil {
				return 0, err
			}
			v += r
		case '-':
			p.pos++
			r, err := p.term()
			if err != nil {
				return 0, err
			}
			v -= r
		default:
			return v, nil
		}
	}
}

func (p *exprParser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		c := p.peek()
		if c == '*' && strings.HasPrefix(p.src[p.pos:], "**") {
			return v, nil // handled by power
		}
		if c != '*' && c != '/' && c != '%' {
			return v, nil
		}
		at := p.pos
		p.pos++
		r, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch c {
		case '*':
			v *= r
		case '/':
			if r == 0 {
				return 0, &exprError{msg: "division by zero", pos: at}
			}
			v /= r
		case '%':
			if r == 0 {
				return 0, &exprError{msg: "modulo by zero", pos: at}
			}
			v = math.Mod(v, r)
		}
	}
}

func (p *exprParser) unary() (float64, error) {
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer func() { p.depth-- }()
	switch p.peek() {
	case '-':
		p.pos++
		v, err := p.unary()
		return -v, err
	case '+':
		p.pos++
		return p.unary()
	}
	return p.power()
}

func (p *exprParser) power() (float64, error) {
	base, err := p.primary()
	if err != nil {
		return 0, err
	}
	if p.accept("**") || p.accept("^") {
		exp, err := p.unary()
		if err != nil {
			return 0, err
		}
		return math.Pow(base, exp), nil
	}
	return base, nil
}

var mathConsts = map[string]float64{"pi": math.Pi, "e": math.E, "tau": 2 * math.Pi, "phi": math.Phi}

// mathFuncs take a fixed number of arguments (or, with -1, one or more).
var mathFuncs = map[string]struct {
	arity int
	f     func(a []float64) (float64, error)
}{
	"abs": {1, func(a []float64) (float64, error) { return math.Abs(a[0]), nil }},
	"sqrt": {1, func(a []float64) (float64, error) {
		return domain(math.Sqrt(a[0]), a[0] >= 0, "sqrt of a negative number")
	}},
	"cbrt": {1, func(a []float64) (float64, error) { return math.Cbrt(a[0]), nil }},
	"exp":  {1, func(a []float64) (float64, error) { return math.Exp(a[0]), nil }},
	"ln": {1, func(a []float64) (float64, error) {
		return domain(math.Log(a[0]), a[0] > 0, "logarithm of a number <= 0")
	}},
	"log2": {1, func(a []float64) (float64, error) {
		return domain(math.Log2(a[0]), a[0] > 0, "logarithm of a number <= 0")
	}},
	"log10": {1, func(a []float64) (float64, error) {
		return domain(math.Log10(a[0]), a[0] > 0, "logarithm of a number <= 0")
	}},
	"sin": {1, func(a []float64) (float64, error) { return math.Sin(a[0]), nil }},
	"cos": {1, func(a []float64) (float64, error) { return math.Cos(a[0]), nil }},
	"tan": {1, func(a []float64) (float64, error) { return math.Tan(a[0]), nil }},
	"asin": {1, func(a []float64) (float64, error) {
		return domain(math.Asin(a[0]), math.Abs(a[0]) <= 1, "asin outside [-1, 1]")
	}},
	"acos": {1, func(a []float64) (float64, error) {
		return domain(math.Acos(a[0]), math.Abs(a[0]) <= 1, "acos outside [-1, 1]")
	}},
	"atan":  {1, func(a []float64) (float64, error) { return math.Atan(a[0]), nil }},
	"atan2": {2, func(a []float64) (float64, error) { return math.Atan2(a[0], a[1]), nil }},
	"floor": {1, func(a []float64) (float64, error) { return math.Floor(a[0]), nil }},
	"ceil":  {1, func(a []float64) (float64, error) { return math.Ceil(a[0]), nil }},
	"trunc": {1, func(a []float64) (float64, error) { return math.Trunc(a[0]), nil }},
	"pow":   {2, func(a []float64) (float64, error) { return math.Pow(a[0], a[1]), nil }},
	"hypot": {2, func(a []float64) (float64, error) { return math.Hypot(a[0], a[1]), nil }},
	"min": {-1, func(a []float64) (float64, error) {
		m := a[0]
		for _, x := range a[1:] {
			m = math.Min(m, x)
		}
		return m, nil
	}},
	"max": {-1, func(a []float64) (float64, error) {
		m := a[0]
		for _, x := range a[1:] {
			m = math.Max(m, x)
		}
		return m, nil
	}},
	// round(x) or round(x, digits); halves go away from zero.
	"round": {-2, func(a []float64) (float64, error) {
		if len(a) == 1 {
			return math.Round(a[0]), nil
		}
		d := a[1]
		if d != math.Trunc(d) || d < -15 || d > 15 {
			return 0, errors.New("round: digits must be an integer between -15 and 15")
		}
		return roundTo(a[0], int(d)), nil
	}},
	// log(x) is the natural logarithm; log(x, b) the base-b one.
	"log": {-2, func(a []float64) (float64, error) {
		if a[0] <= 0 || (len(a) == 2 && (a[1] <= 0 || a[1] == 1)) {
			return 0, errors.New("logarithm of a number <= 0, or with a base <= 0 or 1")
		}
		if len(a) == 1 {
			return math.Log(a[0]), nil
		}
		return math.Log(a[0]) / math.Log(a[1]), nil
	}},
}

// roundTo rounds to d decimals, halves away from zero, on the shortest
// decimal form of x, so that round(2.675, 2) gives 2.68 as a person
// expects (2.675 is stored as 2.67499999…).
func roundTo(x float64, d int) float64 {
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e")
	e, _ := strconv.Atoi(exp)
	scaled, err := strconv.ParseFloat(mant+"e"+strconv.Itoa(e+d), 64)
	if err != nil || math.IsInf(scaled, 0) {
		return x
	}
	r := math.Round(scaled)
	if d >= 0 {
		return r / math.Pow(10, float64(d))
	}
	return r * math.Pow(10, float64(-d))
}

func domain(v float64, okDomain bool, msg string) (float64, error) {
	if !okDomain {
		return 0, errors.New(msg)
	}
	return v, nil
}

func (p *exprParser) primary() (float64, error) {
	c := p.peek()
	switch {
	case c == '(':
		p.pos++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.accept(")") {
			return 0, p.errf("missing )")
		}
		return v, nil
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
		start := p.pos
		for p.pos < len(p.src) && (isIdent(p.src[p.pos])) {
			p.pos++
		}
		name := strings.ToLower(p.src[start:p.pos])
		if p.peek() != '(' {
			if v, ok := mathConsts[name]; ok {
				return v, nil
			}
			return 0, &exprError{msg: fmt.Sprintf("unknown name %q", name), pos: start}
		}
		fn, ok := mathFuncs[name]
		if !ok {
			return 0, &exprError{msg: fmt.Sprintf("unknown function %q", name), pos: start}
		}
		p.pos++ // (
		var args []float64
		if !p.accept(")") {
			for {
				v, err := p.expr()
				if err != nil {
					return 0, err
				}
				args = append(args, v)
				if p.accept(")") {
					break
				}
				if !p.accept(",") {
					return 0, p.errf("expected , or ) in the arguments of %s", name)
				}
			}
		}
		switch {
		case fn.arity > 0 && len(args) != fn.arity:
			return 0, &exprError{msg: fmt.Sprintf("%s takes %d argument(s), got %d", name, fn.arity, len(args)), pos: start}
		case fn.arity == -1 && len(args) == 0:
			return 0, &exprError{msg: fmt.Sprintf("%s needs at least one argument", name), pos: start}
		case fn.arity == -2 && (len(args) < 1 || len(args) > 2):
			return 0, &exprError{msg: fmt.Sprintf("%s takes 1 or 2 arguments, got %d", name, len(args)), pos: start}
		}
		v, err := fn.f(args)
		if err != nil {
			return 0, &exprError{msg: err.Error(), pos: start}
		}
		return v, nil
	case c == 0:
		return 0, p.errf("the expression ends too early")
	default:
		return 0, p.errf("unexpected %q", string(rune(c)))
	}
}

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9'
}

func (p *exprParser) number() (float64, error) {
	start := p.pos
	for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] == '.' || p.src[p.pos] == '_') {
		p.pos++
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		q := p.pos + 1
		if q < len(p.src) && (p.src[q] == '+' || p.src[q] == '-') {
			q++
		}
		if q < len(p.src) && p.src[q] >= '0' && p.src[q] <= '9' {
			for q < len(p.src) && p.src[q] >= '0' && p.src[q] <= '9' {
				q++
			}
			p.pos = q
		}
	}
	text := strings.ReplaceAll(p.src[start:p.pos], "_", "")
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, &exprError{msg: fmt.Sprintf("%q is not a number", p.src[start:p.pos]), pos: start}
	}
	return v, nil
}

// evalExpr evaluates a whole expression.
func evalExpr(src string) (float64, error) {
	if len(src) > maxExprLen {
		return 0, fmt.Errorf("expression is longer than %d characters", maxExprLen)
	}
	p := &exprParser{src: src}
	v, err := p.expr()
	if err == nil && p.peek() != 0 {
		err = p.errf("unexpected %q", p.src[p.pos:min(p.pos+10, len(p.src))])
	}
	if err != nil {
		var ee *exprError
		if errors.As(err, &ee) {
			return 0, fmt.Errorf("%s at character %d", ee.msg, len([]rune(src[:ee.pos]))+1)
		}
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("the result is not a finite number")
	}
	return v, nil
}

// formatNumber prints integers without a decimal point and other numbers
// in their shortest exact form.
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func mathCalc(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Expression string `json:"expression"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	v, err := evalExpr(a.Expression)
	if err != nil {
		return fail("%v", err), nil
	}
	return ok(formatNumber(v)), nil
}

func mathRandom(_ context.Context, c *call) (tool.Outcome, error) {
	var a struct {
		Min int64 `json:"min"`
		Max int64 `json:"max"`
	}
	if err := c.decode(&a); err != nil {
		return argError(err), nil
	}
	if a.Max < a.Min {
		return fail("max (%d) is smaller than min (%d)", a.Max, a.Min), nil
	}
	span := uint64(a.Max) - uint64(a.Min) // wraps correctly for any int64 pair
	var off uint64
	if span == math.MaxUint64 {
		off = rand.Uint64()
	} else {
		off = rand.Uint64N(span + 1)
	}
	return ok(strconv.FormatInt(int64(uint64(a.Min)+off), 10)), nil
}

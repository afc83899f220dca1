package native

import (
	"errors"
	"fmt"
	"math"
)

// arith applies `-`, `*`, `/`, `%` (and `+` once both operands are known
// to be numbers). Two int64 operands give an int64 except for `/` with a
// remainder; an int64 overflow is an error rather than a silent loss of
// precision. Any float64 operand makes the operation a float64 one, and a
// result that is not finite is an error (it has no JSON form).
func arith(op string, a, b any) (any, error) {
	if !isNumber(a) || !isNumber(b) {
		return nil, fmt.Errorf("`%s` needs two numbers, got %s and %s", op, typeName(a), typeName(b))
	}
	x, xInt := a.(int64)
	y, yInt := b.(int64)
	if xInt && yInt {
		return intArith(op, x, y)
	}
	f, g := toFloat(a), toFloat(b)
	var r float64
	switch op {
	case "+":
		r = f + g
	case "-":
		r = f - g
	case "*":
		r = f * g
	case "/":
		if g == 0 {
			return nil, errors.New("division by zero")
		}
		r = f / g
	case "%":
		if g == 0 {
			return nil, errors.New("modulo by zero")
		}
		r = math.Mod(f, g)
		if r != 0 && (r < 0) != (g < 0) {
			r += g
		}
	default:
		return nil, fmt.Errorf("unsupported operator `%s`", op)
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return nil, fmt.Errorf("numeric overflow in `%s`", op)
	}
	return r, nil
}

func intArith(op string, x, y int64) (any, error) {
	overflow := fmt.Errorf("integer overflow in `%s`", op)
	switch op {
	case "+":
		if (y > 0 && x > math.MaxInt64-y) || (y < 0 && x < math.MinInt64-y) {
			return nil, overflow
		}
		return x + y, nil
	case "-":
		if (y < 0 && x > math.MaxInt64+y) || (y > 0 && x < math.MinInt64+y) {
			return nil, overflow
		}
		return x - y, nil
	case "*":
		if x == 0 || y == 0 {
			return int64(0), nil
		}
		r := x * y
		if (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) || r/y != x {
			return nil, overflow
		}
		return r, nil
	case "/":
		if y == 0 {
			return nil, errors.New("division by zero")
		}
		if x == math.MinInt64 && y == -1 {
			return -float64(x), nil
		}
		if x%y == 0 {
			return x / y, nil
		}
		return float64(x) / float64(y), nil
	case "%":
		if y == 0 {
			return nil, errors.New("modulo by zero")
		}
		r := x % y // Go defines MinInt64 % -1 as 0
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r, nil
	}
	return nil, fmt.Errorf("unsupported operator `%s`", op)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// negate is unary `-`.
func negate(v any) (any, error) {
	switch x := v.(type) {
	case int64:
		if x == math.MinInt64 {
			return nil, errors.New("integer overflow in unary `-`")
		}
		return -x, nil
	case float64:
		return -x, nil
	}
	return nil, fmt.Errorf("unary `-` needs a number, got %s", typeName(v))
}

// compare applies `<`, `<=`, `>`, `>=` to two numbers or two strings
// (strings in byte order, which is code point order for UTF-8 text).
func compare(op string, a, b any) (bool, error) {
	var c int
	switch {
	case isNumber(a) && isNumber(b):
		c = compareNumbers(a, b)
	default:
		x, ok1 := a.(string)
		y, ok2 := b.(string)
		if !ok1 || !ok2 {
			return false, fmt.Errorf("cannot compare %s with %s using `%s` (both sides must be numbers or both strings)",
				typeName(a), typeName(b), op)
		}
		c = cmpOrdered(x, y)
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	}
	return false, fmt.Errorf("unsupported operator `%s`", op)
}

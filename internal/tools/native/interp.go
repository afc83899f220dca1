package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nexa-run/nexa/internal/ir"
)

const (
	// MaxText is the longest string (in bytes) that `+`, interpolation or
	// the formatting of a value may build. Without loops a body can still
	// double a string once per statement; the cap keeps a hostile or
	// mistaken body from exhausting memory.
	MaxText = 16 << 20

	// MaxDepth bounds the nesting of statements and expressions walked
	// recursively, so that a malformed or cyclic tree ends in an error
	// result instead of a fatal stack overflow (which recover cannot
	// catch). The compiler keeps real bodies far below it.
	MaxDepth = 10000
)

// toolError is a runtime error of a body: a known, unsuccessful outcome.
type toolError struct {
	line int
	msg  string
}

func (e *toolError) Error() string { return e.msg }

// cancelled wraps the context error that stopped a body between
// statements.
type cancelled struct{ err error }

func (c *cancelled) Error() string { return c.err.Error() }
func (c *cancelled) Unwrap() error { return c.err }

// machine is the state of one call.
type machine struct {
	ctx   context.Context
	vars  map[string]any
	log   io.Writer
	line  int
	depth int
}

// fail makes a tool error at the current statement's line.
func (m *machine) fail(format string, args ...any) error {
	return &toolError{line: m.line, msg: fmt.Sprintf(format, args...)}
}

// wrap turns a plain error from a value helper into a tool error at the
// current line.
func (m *machine) wrap(err error) error {
	var te *toolError
	if errors.As(err, &te) {
		return err
	}
	var c *cancelled
	if errors.As(err, &c) {
		return err
	}
	return &toolError{line: m.line, msg: err.Error()}
}

func (m *machine) enter() error {
	m.depth++
	if m.depth > MaxDepth {
		return m.fail("the body is nested more than %d levels deep", MaxDepth)
	}
	return nil
}

func (m *machine) leave() { m.depth-- }

// block runs statements in order; done reports that a return ended the
// call with value v.
func (m *machine) block(stmts []ir.Stmt) (done bool, v any, err error) {
	if err := m.enter(); err != nil {
		return false, nil, err
	}
	defer m.leave()
	for _, s := range stmts {
		if err := m.ctx.Err(); err != nil {
			return false, nil, &cancelled{err}
		}
		done, v, err := m.stmt(s)
		if err != nil || done {
			return done, v, err
		}
	}
	return false, nil, nil
}

func (m *machine) stmt(s ir.Stmt) (bool, any, error) {
	switch s := s.(type) {
	case *ir.ReturnStmt:
		if s == nil {
			break
		}
		m.line = s.Line
		if s.Value == nil {
			return true, nil, nil
		}
		v, err := m.eval(s.Value)
		return err == nil, v, err
	case *ir.PrintStmt:
		if s == nil {
			break
		}
		m.line = s.Line
		v, err := m.eval(s.Value)
		if err != nil {
			return false, nil, err
		}
		text, err := formatText(v)
		if err != nil {
			return false, nil, m.wrap(err)
		}
		if len(text) > MaxText {
			return false, nil, m.fail("text longer than %d bytes", MaxText)
		}
		// The log is best effort: a failing log writer must not change
		// the tool's result. One Write keeps the line whole.
		_, _ = m.log.Write([]byte(text + "\n"))
		return false, nil, nil
	case *ir.AssignStmt:
		if s == nil {
			break
		}
		m.line = s.Line
		v, err := m.eval(s.Value)
		if err != nil {
			return false, nil, err
		}
		m.vars[s.Name] = v
		return false, nil, nil
	case *ir.IfStmt:
		if s == nil {
			break
		}
		m.line = s.Line
		c, err := m.eval(s.Cond)
		if err != nil {
			return false, nil, err
		}
		if truthy(c) {
			return m.block(s.Then)
		}
		return m.block(s.Else)
	}
	return false, nil, m.fail("internal error: nil or unsupported statement %T", s)
}

func (m *machine) eval(e ir.Expr) (any, error) {
	if err := m.enter(); err != nil {
		return nil, err
	}
	defer m.leave()
	switch e := e.(type) {
	case *ir.Literal:
		if e == nil {
			break
		}
		v, err := normalize(e.Value)
		if err != nil {
			return nil, m.fail("internal error: bad literal: %v", err)
		}
		return v, nil
	case *ir.Interp:
		if e == nil {
			break
		}
		var b strings.Builder
		for _, p := range e.Parts {
			text := p.Text
			if p.Expr != nil {
				v, err := m.eval(p.Expr)
				if err != nil {
					return nil, err
				}
				if text, err = formatText(v); err != nil {
					return nil, m.wrap(err)
				}
			}
			if b.Len()+len(text) > MaxText {
				return nil, m.fail("text longer than %d bytes", MaxText)
			}
			b.WriteString(text)
		}
		return b.String(), nil
	case *ir.Name:
		if e == nil {
			break
		}
		v, ok := m.vars[e.Name]
		if !ok {
			return nil, m.fail("unknown name `%s` (not a parameter, and not assigned before this line)", e.Name)
		}
		return v, nil
	case *ir.Member:
		if e == nil {
			break
		}
		x, err := m.eval(e.X)
		if err != nil {
			return nil, err
		}
		if obj, ok := x.(map[string]any); ok {
			return obj[e.Name], nil // nil when absent
		}
		return nil, nil
	case *ir.Unary:
		if e == nil {
			break
		}
		x, err := m.eval(e.X)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case "!", "not":
			return !truthy(x), nil
		case "-":
			v, err := negate(x)
			if err != nil {
				return nil, m.wrap(err)
			}
			return v, nil
		}
		return nil, m.fail("unsupported unary operator `%s`", e.Op)
	case *ir.Binary:
		if e == nil {
			break
		}
		return m.binary(e)
	}
	if e == nil {
		return nil, m.fail("internal error: missing expression")
	}
	return nil, m.fail("internal error: nil or unsupported expression %T", e)
}

func (m *machine) binary(e *ir.Binary) (any, error) {
	l, err := m.eval(e.L)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case "&&", "and":
		if !truthy(l) {
			return false, nil
		}
		r, err := m.eval(e.R)
		if err != nil {
			return nil, err
		}
		return truthy(r), nil
	case "||", "or":
		if truthy(l) {
			return true, nil
		}
		r, err := m.eval(e.R)
		if err != nil {
			return nil, err
		}
		return truthy(r), nil
	}
	r, err := m.eval(e.R)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case "+":
		if isNumber(l) && isNumber(r) {
			v, err := arith("+", l, r)
			if err != nil {
				return nil, m.wrap(err)
			}
			return v, nil
		}
		return m.concat(l, r)
	case "-", "*", "/", "%":
		v, err := arith(e.Op, l, r)
		if err != nil {
			return nil, m.wrap(err)
		}
		return v, nil
	case "==":
		return deepEqual(l, r), nil
	case "!=":
		return !deepEqual(l, r), nil
	case "<", "<=", ">", ">=":
		v, err := compare(e.Op, l, r)
		if err != nil {
			return nil, m.wrap(err)
		}
		return v, nil
	}
	return nil, m.fail("unsupported operator `%s`", e.Op)
}

// concat is `+` when either side is not a number: both sides as text.
func (m *machine) concat(l, r any) (any, error) {
	a, err := formatText(l)
	if err != nil {
		return nil, m.wrap(err)
	}
	b, err := formatText(r)
	if err != nil {
		return nil, m.wrap(err)
	}
	if len(a)+len(b) > MaxText {
		return nil, m.fail("text longer than %d bytes", MaxText)
	}
	return a + b, nil
}

package native

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"math"
	"strings"
	"testing"

	"github.com/nexa-run/nexa/internal/ir"
)

// Tree builders: the tests build lowered bodies directly, without the
// parser.

func lit(v any) ir.Expr               { return &ir.Literal{Value: v} }
func name(n string) ir.Expr           { return &ir.Name{Name: n} }
func mem(x ir.Expr, f string) ir.Expr { return &ir.Member{X: x, Name: f} }
func un(op string, x ir.Expr) ir.Expr { return &ir.Unary{Op: op, X: x} }
func bin(op string, l, r ir.Expr) ir.Expr {
	return &ir.Binary{Op: op, L: l, R: r}
}

// interp builds an interpolated string: string parts are text, Expr parts
// are expressions.
func interp(parts ...any) ir.Expr {
	out := &ir.Interp{}
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out.Parts = append(out.Parts, ir.InterpPart{Text: p})
		case ir.Expr:
			out.Parts = append(out.Parts, ir.InterpPart{Expr: p})
		}
	}
	return out
}

func ret(e ir.Expr, line int) ir.Stmt { return &ir.ReturnStmt{Value: e, Line: line} }
func prt(e ir.Expr, line int) ir.Stmt { return &ir.PrintStmt{Value: e, Line: line} }
func set(n string, e ir.Expr, line int) ir.Stmt {
	return &ir.AssignStmt{Name: n, Value: e, Line: line}
}
func ifs(c ir.Expr, then, els []ir.Stmt, line int) ir.Stmt {
	return &ir.IfStmt{Cond: c, Then: then, Else: els, Line: line}
}
func body(s ...ir.Stmt) []ir.Stmt { return s }

// nativeTool is a native tool named "t" declared in tools.nx.
func nativeTool(params string, stmts ...ir.Stmt) *ir.Tool {
	if params == "" {
		params = `{"type":"object","properties":{},"additionalProperties":false}`
	}
	list, err := ir.ParamsFromSchema(json.RawMessage(params))
	if err != nil {
		panic(fmt.Sprintf("test schema %s: %v", params, err))
	}
	return &ir.Tool{
		Name:       "t",
		Parameters: json.RawMessage(params),
		Params:     list,
		Body:       ir.Body{Kind: ir.BodyNative, Native: stmts},
		File:       "/src/tools.nx",
	}
}

func run(t *testing.T, decl *ir.Tool, args string) tool.Outcome {
	t.Helper()
	out, err := New().Execute(context.Background(), tool.Invocation{Tool: decl, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("Execute: unexpected error %v", err)
	}
	if out.Sandboxed {
		t.Fatalf("Sandboxed = true, want false")
	}
	return out
}

// expectOK runs a body and wants a successful result.
func expectOK(t *testing.T, decl *ir.Tool, args, want string) {
	t.Helper()
	out := run(t, decl, args)
	if !out.Success || out.Output != want {
		t.Fatalf("got %+v, want success with %q", out, want)
	}
}

// expectFail runs a body and wants an error result containing every
// fragment.
func expectFail(t *testing.T, decl *ir.Tool, args string, fragments ...string) {
	t.Helper()
	out := run(t, decl, args)
	if out.Success {
		t.Fatalf("got success %q, want an error result", out.Output)
	}
	for _, f := range fragments {
		if !strings.Contains(out.Output, f) {
			t.Fatalf("error result %q lacks %q", out.Output, f)
		}
	}
}

const anyParams = `{"type":"object","properties":{"x":{},"y":{},"s":{},"user":{}},"additionalProperties":false}`

func TestReturnValues(t *testing.T) {
	cases := []struct {
		name string
		e    ir.Expr
		args string
		want string
	}{
		{"string", lit("hello"), "", "hello"},
		{"html stays raw", lit("<a & b>"), "", "<a & b>"},
		{"int", lit(int64(42)), "", "42"},
		{"negative int", lit(int64(-7)), "", "-7"},
		{"float", lit(2.5), "", "2.5"},
		{"whole float", lit(3.0), "", "3"},
		{"negative zero", lit(math.Copysign(0, -1)), "", "0"},
		{"big whole float", lit(1e20), "", "100000000000000000000"},
		{"huge float", lit(1e21), "", "1e+21"},
		{"true", lit(true), "", "true"},
		{"false", lit(false), "", "false"},
		{"nil", lit(nil), "", ""},
		{"go int literal", lit(5), "", "5"},
		{"object argument", name("x"), `{"x":{"b":[1,2.5,"<"],"a":null}}`, `{"a":null,"b":[1,2.5,"<"]}`},
		{"list argument", name("x"), `{"x":[true,{"k":3.0}]}`, `[true,{"k":3}]`},
		{"string argument", name("x"), `{"x":"as is"}`, "as is"},
		{"int argument stays exact", name("x"), `{"x":9007199254740993}`, "9007199254740993"},
		{"whole float argument", name("x"), `{"x":3.0}`, "3"},
		{"nil argument", name("x"), `{"x":null}`, ""},
		{"missing argument is nil", name("x"), `{}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectOK(t, nativeTool(anyParams, ret(c.e, 1)), c.args, c.want)
		})
	}
}

func TestReturnEndsCallAndFallOff(t *testing.T) {
	expectOK(t, nativeTool("", ret(lit("first"), 1), ret(lit("second"), 2)), "", "first")
	expectOK(t, nativeTool("", set("a", lit(int64(1)), 1)), "", "")
	expectOK(t, nativeTool(""), "", "")
	expectOK(t, nativeTool("", ret(nil, 1), ret(lit("no"), 2)), "", "")
	// A return inside an if ends the whole call.
	expectOK(t, nativeTool("",
		ifs(lit(true), body(ret(lit("inner"), 2)), nil, 1),
		ret(lit("outer"), 3)), "", "inner")
}

func TestInterpolation(t *testing.T) {
	decl := nativeTool(anyParams, ret(interp("Results for: ", name("s"), " by ", mem(name("user"), "name"),
		" (", mem(mem(name("user"), "meta"), "age"), ")", mem(name("user"), "missing")), 1))
	expectOK(t, decl, `{"s":"go","user":{"name":"ann","meta":{"age":30.0}}}`, "Results for: go by ann (30)")
	// Objects and nil inside interpolation.
	decl = nativeTool(anyParams, ret(interp("[", name("x"), "|", name("y"), "]"), 1))
	expectOK(t, decl, `{"x":{"k":[1]},"y":null}`, `[{"k":[1]}|]`)
}

func TestPlus(t *testing.T) {
	cases := []struct {
		name string
		l, r ir.Expr
		want string
	}{
		{"text and int", lit("n="), lit(int64(3)), "n=3"},
		{"int and text", lit(int64(3)), lit(" items"), "3 items"},
		{"text and whole float", lit("v"), lit(2.0), "v2"},
		{"int and float", lit(int64(1)), lit(2.5), "3.5"},
		{"ints", lit(int64(1)), lit(int64(2)), "3"},
		{"floats to whole", lit(0.5), lit(0.5), "1"},
		{"texts", lit("a"), lit("b"), "ab"},
		{"bool and nil as text", lit(true), lit(nil), "true"},
		{"text and object", lit("o="), name("x"), `o={"a":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectOK(t, nativeTool(anyParams, ret(bin("+", c.l, c.r), 1)), `{"x":{"a":1}}`, c.want)
		})
	}
}

func TestArithmetic(t *testing.T) {
	ok := []struct {
		op   string
		l, r any
		want string
	}{
		{"-", int64(10), int64(4), "6"},
		{"-", 1.5, int64(1), "0.5"},
		{"*", int64(6), int64(7), "42"},
		{"*", 1.5, int64(2), "3"},
		{"/", int64(7), int64(2), "3.5"},
		{"/", int64(6), int64(3), "2"},
		{"/", int64(-9223372036854775808), int64(-1), "9223372036854776000"},
		{"/", 1.0, 4.0, "0.25"},
		{"%", int64(7), int64(3), "1"},
		{"%", int64(-7), int64(3), "2"},
		{"%", int64(7), int64(-3), "-2"},
		{"%", 7.5, int64(2), "1.5"},
		{"%", -7.5, int64(2), "0.5"},
	}
	for _, c := range ok {
		expectOK(t, nativeTool("", ret(bin(c.op, lit(c.l), lit(c.r)), 1)), "", c.want)
	}
	bad := []struct {
		op   string
		l, r any
		frag string
	}{
		{"/", int64(1), int64(0), "division by zero"},
		{"/", 1.5, 0.0, "division by zero"},
		{"%", int64(1), int64(0), "modulo by zero"},
		{"-", "a", int64(1), "needs two numbers, got string and number"},
		{"*", true, int64(2), "got bool and number"},
		{"/", nil, int64(2), "got null and number"},
		{"+", int64(9223372036854775807), int64(1), "integer overflow"},
		{"-", int64(-9223372036854775808), int64(1), "integer overflow"},
		{"*", int64(1) << 62, int64(4), "integer overflow"},
		{"*", 1e308, 10.0, "numeric overflow"},
	}
	for _, c := range bad {
		expectFail(t, nativeTool("", ret(bin(c.op, lit(c.l), lit(c.r)), 7)), "", "tool t", "line 7", c.frag)
	}
	expectOK(t, nativeTool("", ret(un("-", lit(int64(5))), 1)), "", "-5")
	expectOK(t, nativeTool("", ret(un("-", lit(2.5)), 1)), "", "-2.5")
	expectFail(t, nativeTool("", ret(un("-", lit("x")), 2)), "", "line 2", "unary `-` needs a number, got string")
	expectFail(t, nativeTool("", ret(un("-", lit(int64(-9223372036854775808))), 2)), "", "integer overflow")
}

func TestDivisionByZeroMessage(t *testing.T) {
	decl := nativeTool(`{"type":"object","properties":{"n":{"type":"integer"}}}`,
		set("half", bin("/", name("n"), lit(int64(0))), 12))
	out := run(t, decl, `{"n":4}`)
	want := "error: tool t failed at line 12 of tools.nx: division by zero"
	if out.Success || out.Output != want {
		t.Fatalf("got %+v, want error %q", out, want)
	}
}

func TestIfChains(t *testing.T) {
	// if (score >= 90) "A" else if (score >= 80) "B" else if (score > 0) "C" else "none"
	grade := nativeTool(`{"type":"object","properties":{"score":{"type":"number"}}}`,
		ifs(bin(">=", name("score"), lit(int64(90))), body(ret(lit("A"), 2)),
			body(ifs(bin(">=", name("score"), lit(int64(80))), body(ret(lit("B"), 4)),
				body(ifs(bin(">", name("score"), lit(int64(0))), body(ret(lit("C"), 6)),
					body(ret(lit("none"), 8)), 5)), 3)), 1))
	for args, want := range map[string]string{
		`{"score":95}`: "A", `{"score":90.0}`: "A", `{"score":85.5}`: "B",
		`{"score":1}`: "C", `{"score":0}`: "none", `{"score":-3}`: "none",
	} {
		expectOK(t, grade, args, want)
	}
	// No else: falls through; an assignment inside a branch is visible
	// after it (one flat scope).
	flat := nativeTool(anyParams,
		set("msg", lit("default"), 1),
		ifs(name("x"), body(set("msg", lit("set in branch"), 3)), nil, 2),
		ret(name("msg"), 5))
	expectOK(t, flat, `{"x":true}`, "set in branch")
	expectOK(t, flat, `{"x":false}`, "default")
	// A name assigned only in a branch that did not run is unknown.
	expectFail(t, nativeTool(anyParams,
		ifs(name("x"), body(set("late", lit(int64(1)), 2)), nil, 1),
		ret(name("late"), 4)), `{"x":false}`, "line 4", "unknown name `late`")
	// An error in a condition reports the if's line.
	expectFail(t, nativeTool("", ifs(bin("<", lit(int64(1)), lit("2")), nil, nil, 9)), "", "line 9", "cannot compare")
}

func TestComparisons(t *testing.T) {
	ok := []struct {
		op   string
		l, r any
		want bool
	}{
		{"<", int64(1), int64(2), true},
		{"<", int64(2), int64(2), false},
		{"<=", int64(2), int64(2), true},
		{">", int64(3), 2.5, true},
		{">=", 2.5, int64(3), false},
		{"<", 0.1, 0.2, true},
		{">", int64(9007199254740993), 9007199254740992.0, true},
		{"==", int64(9007199254740993), 9007199254740992.0, false},
		{"<", "apple", "banana", true},
		{">=", "b", "a", true},
		{"<=", "", "", true},
		{">", "a", "B", true},
	}
	for _, c := range ok {
		want := "false"
		if c.want {
			want = "true"
		}
		expectOK(t, nativeTool("", ret(bin(c.op, lit(c.l), lit(c.r)), 1)), "", want)
	}
	bad := []struct {
		op   string
		l, r any
	}{
		{"<", int64(1), "2"},
		{">", "a", 1.5},
		{"<=", true, false},
		{">=", nil, int64(0)},
		{"<", nil, nil},
	}
	for _, c := range bad {
		expectFail(t, nativeTool("", ret(bin(c.op, lit(c.l), lit(c.r)), 3)), "", "line 3", "cannot compare", c.op)
	}
	// Lists and objects cannot be ordered either.
	expectFail(t, nativeTool(anyParams, ret(bin("<", name("x"), name("y")), 3)), `{"x":[1],"y":[2]}`,
		"cannot compare list with list")
}

func TestDeepEquality(t *testing.T) {
	cases := []struct {
		x, y string
		eq   bool
	}{
		{`1`, `1.0`, true},
		{`1`, `2`, false},
		{`"1"`, `1`, false},
		{`null`, `null`, true},
		{`null`, `false`, false},
		{`0`, `false`, false},
		{`""`, `null`, false},
		{`true`, `true`, true},
		{`"a"`, `"a"`, true},
		{`[1,"a",null]`, `[1.0,"a",null]`, true},
		{`[1,2]`, `[2,1]`, false},
		{`[1]`, `[1,1]`, false},
		{`{"a":{"b":[1]},"c":2}`, `{"c":2.0,"a":{"b":[1]}}`, true},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`{"a":null}`, `{"b":null}`, false},
		{`{}`, `[]`, false},
	}
	for _, c := range cases {
		args := `{"x":` + c.x + `,"y":` + c.y + `}`
		want, notWant := "true", "false"
		if !c.eq {
			want, notWant = notWant, want
		}
		expectOK(t, nativeTool(anyParams, ret(bin("==", name("x"), name("y")), 1)), args, want)
		expectOK(t, nativeTool(anyParams, ret(bin("!=", name("x"), name("y")), 1)), args, notWant)
	}
	// Literal vs argument, across number kinds.
	expectOK(t, nativeTool(anyParams, ret(bin("==", name("x"), lit(int64(2))), 1)), `{"x":2.0}`, "true")
}

func TestTruthiness(t *testing.T) {
	cases := []struct {
		x      string
		truthy bool
	}{
		{`false`, false}, {`null`, false}, {`0`, false}, {`0.0`, false}, {`-0.0`, false},
		{`""`, false}, {`[]`, false}, {`{}`, false},
		{`true`, true}, {`1`, true}, {`-1`, true}, {`0.5`, true}, {`"0"`, true},
		{`"false"`, true}, {`" "`, true}, {`[0]`, true}, {`{"a":null}`, true},
	}
	for _, c := range cases {
		args := `{"x":` + c.x + `}`
		want := map[bool]string{true: "T", false: "F"}[c.truthy]
		expectOK(t, nativeTool(anyParams, ifs(name("x"), body(ret(lit("T"), 2)), body(ret(lit("F"), 3)), 1)), args, want)
		expectOK(t, nativeTool(anyParams, ret(un("!", name("x")), 1)), args, map[bool]string{true: "false", false: "true"}[c.truthy])
		expectOK(t, nativeTool(anyParams, ret(bin("&&", name("x"), lit("yes")), 1)), args, map[bool]string{true: "true", false: "false"}[c.truthy])
		expectOK(t, nativeTool(anyParams, ret(bin("||", name("x"), lit(int64(0))), 1)), args, map[bool]string{true: "true", false: "false"}[c.truthy])
	}
}

func TestLogicalShortCircuit(t *testing.T) {
	// The right side is not evaluated, so its unknown name is no error.
	expectOK(t, nativeTool("", ret(bin("&&", lit(false), name("nope")), 1)), "", "false")
	expectOK(t, nativeTool("", ret(bin("||", lit("x"), name("nope")), 1)), "", "true")
	expectOK(t, nativeTool("", ret(bin("and", lit(int64(1)), lit(int64(2))), 1)), "", "true")
	expectOK(t, nativeTool("", ret(bin("or", lit(nil), lit("")), 1)), "", "false")
	expectOK(t, nativeTool("", ret(un("not", lit("")), 1)), "", "true")
	expectFail(t, nativeTool("", ret(bin("&&", lit(true), name("nope")), 4)), "", "line 4", "unknown name `nope`")
}

func TestPrintGoesToLog(t *testing.T) {
	var log bytes.Buffer
	decl := nativeTool(anyParams,
		prt(lit("hello"), 1),
		prt(lit(3.0), 2),
		prt(name("x"), 3),
		prt(lit(nil), 4),
		prt(interp("x.a=", mem(name("x"), "a")), 5),
		ret(lit("result"), 6))
	out, err := New().Execute(context.Background(), tool.Invocation{
		Tool: decl, Arguments: json.RawMessage(`{"x":{"a":1,"b":"<>"}}`), Log: &log})
	if err != nil || !out.Success || out.Output != "result" {
		t.Fatalf("got %+v, %v", out, err)
	}
	want := "hello\n3\n{\"a\":1,\"b\":\"<>\"}\n\nx.a=1\n"
	if log.String() != want {
		t.Fatalf("log = %q, want %q", log.String(), want)
	}
	// A nil log discards; a failing log does not change the result.
	expectOK(t, decl, `{"x":1}`, "result")
	out, err = New().Execute(context.Background(), tool.Invocation{Tool: decl, Log: failingWriter{}})
	if err != nil || !out.Success || out.Output != "result" {
		t.Fatalf("failing log: got %+v, %v", out, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestUnknownName(t *testing.T) {
	decl := nativeTool(anyParams, set("a", lit(int64(1)), 3), ret(bin("+", name("a"), name("usr")), 4))
	out := run(t, decl, `{}`)
	if out.Success {
		t.Fatalf("want error, got %+v", out)
	}
	want := "error: tool t failed at line 4 of tools.nx: unknown name `usr`"
	if !strings.HasPrefix(out.Output, want) {
		t.Fatalf("got %q, want prefix %q", out.Output, want)
	}
	// Without a file or a line the message still names the tool.
	decl = nativeTool("", ret(name("q"), 0))
	decl.File = ""
	expectFail(t, decl, "", "error: tool t failed: unknown name `q`")
	decl = nativeTool("", ret(name("q"), 2))
	decl.File = ""
	expectFail(t, decl, "", "error: tool t failed at line 2: unknown name `q`")
}

func TestMemberOnNonObject(t *testing.T) {
	for _, x := range []string{`"str"`, `null`, `3`, `[1]`, `true`, `{}`, `{"other":1}`} {
		expectOK(t, nativeTool(anyParams, ret(mem(name("x"), "f"), 1)), `{"x":`+x+`}`, "")
		expectOK(t, nativeTool(anyParams, ret(mem(mem(name("x"), "f"), "g"), 1)), `{"x":`+x+`}`, "")
		expectOK(t, nativeTool(anyParams, ret(bin("==", mem(name("x"), "f"), lit(nil)), 1)), `{"x":`+x+`}`, "true")
	}
	expectOK(t, nativeTool(anyParams, ret(mem(name("x"), "f"), 1)), `{"x":{"f":[1,{"g":2}]}}`, `[1,{"g":2}]`)
}

func TestAssignmentAndParameters(t *testing.T) {
	// Parameters can be rebound; later reads see the new value.
	decl := nativeTool(`{"type":"object","properties":{"n":{"type":"integer"}}}`,
		set("n", bin("+", name("n"), lit(int64(1))), 1),
		set("m", bin("*", name("n"), lit(int64(2))), 2),
		ret(interp(name("n"), ",", name("m")), 3))
	expectOK(t, decl, `{"n":4}`, "5,10")
	// A missing parameter is nil, default or not: the runtime fills
	// defaults once, before the call (ir.Tool.FillDefaults).
	decl = nativeTool(`{"type":"object","properties":{"a":{"type":"integer","default":3},"b":{"type":"string"},"c":{"default":null}}}`,
		ret(interp(name("a"), "|", name("b"), "|", name("c")), 1))
	expectOK(t, decl, `{}`, "||")
	expectOK(t, decl, ``, "||")
	expectOK(t, decl, `null`, "||")
	expectOK(t, decl, `{"a":7,"b":"x"}`, "7|x|")
	filled := map[string]any{}
	decl.FillDefaults(filled)
	args, _ := json.Marshal(filled)
	expectOK(t, decl, string(args), "3||")
	// Integers stay integers, other numbers are floats.
	decl = nativeTool(`{"type":"object","properties":{"n":{}}}`, ret(bin("%", name("n"), lit(int64(4))), 1))
	expectOK(t, decl, `{"n":10}`, "2")
	expectOK(t, decl, `{"n":10.5}`, "2.5")
	expectOK(t, decl, `{"n":1e2}`, "0")
	// Arguments that are not an object are an error result.
	expectFail(t, decl, `[1,2]`, "invalid arguments", "not a JSON object")
	expectFail(t, decl, `{"n":`, "invalid arguments")
	expectFail(t, decl, `{"n":1e999}`, "invalid arguments", "out of range")
}

func TestConcatenationCap(t *testing.T) {
	params := `{"type":"object","properties":{"s":{"type":"string"}}}`
	mib := strings.Repeat("a", 1<<20)
	args, _ := json.Marshal(map[string]string{"s": mib})
	// 1 MiB doubled four times is exactly 16 MiB: allowed.
	double := func(line int) ir.Stmt { return set("s", bin("+", name("s"), name("s")), line) }
	decl := nativeTool(params, double(1), double(2), double(3), double(4), ret(lit("ok"), 5))
	expectOK(t, decl, string(args), "ok")
	// Once more is over the cap.
	decl = nativeTool(params, double(1), double(2), double(3), double(4), double(5), ret(lit("ok"), 6))
	expectFail(t, decl, string(args), "line 5", "text longer than 16777216 bytes")
	// Interpolation is capped too.
	decl = nativeTool(params, double(1), double(2), double(3), double(4),
		ret(interp(name("s"), "!"), 7))
	expectFail(t, decl, string(args), "line 7", "text longer than")
}

func TestCancelledContext(t *testing.T) {
	decl := nativeTool("", ret(lit("x"), 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := New().Execute(ctx, tool.Invocation{Tool: decl})
	checkNotRun(t, out, err, context.Canceled)

	// Cancelled between statements: the print's log writer cancels, the
	// next statement does not run.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var log bytes.Buffer
	decl = nativeTool("", prt(lit("one"), 1), prt(lit("two"), 2), ret(lit("x"), 3))
	out, err = New().Execute(ctx, tool.Invocation{Tool: decl, Log: &cancelWriter{w: &log, cancel: cancel}})
	checkNotRun(t, out, err, context.Canceled)
	if log.String() != "one\n" {
		t.Fatalf("log = %q, want only the first line", log.String())
	}

	// An expired deadline is the same.
	dctx, dcancel := context.WithTimeout(context.Background(), 0)
	defer dcancel()
	out, err = New().Execute(dctx, tool.Invocation{Tool: decl})
	checkNotRun(t, out, err, context.DeadlineExceeded)
}

func checkNotRun(t *testing.T, out tool.Outcome, err error, cause error) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error, got outcome %+v", out)
	}
	if !errors.Is(err, tool.ErrNotExecuted) || !errors.Is(err, cause) {
		t.Fatalf("error %v does not wrap ErrNotExecuted and %v", err, cause)
	}
	if errors.Is(err, tool.ErrUnknownOutcome) {
		t.Fatalf("a pure body must never have an unknown outcome: %v", err)
	}
}

type cancelWriter struct {
	w      *bytes.Buffer
	cancel context.CancelFunc
}

func (c *cancelWriter) Write(p []byte) (int, error) {
	c.cancel()
	return c.w.Write(p)
}

func TestWrongInvocation(t *testing.T) {
	_, err := New().Execute(context.Background(), tool.Invocation{})
	if !errors.Is(err, tool.ErrNotExecuted) {
		t.Fatalf("nil decl: %v", err)
	}
	decl := nativeTool("")
	decl.Body = ir.Body{Kind: ir.BodyPython, Python: "return 1"}
	_, err = New().Execute(context.Background(), tool.Invocation{Tool: decl})
	if !errors.Is(err, tool.ErrNotExecuted) || !strings.Contains(err.Error(), "not a native one") {
		t.Fatalf("python body: %v", err)
	}
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("boom") }

func TestPanicBecomesErrorResult(t *testing.T) {
	decl := nativeTool("", prt(lit("x"), 1), ret(lit("y"), 2))
	out, err := New().Execute(context.Background(), tool.Invocation{Tool: decl, Log: panicWriter{}})
	if err != nil || out.Success || !strings.Contains(out.Output, "internal error") || !strings.Contains(out.Output, "boom") {
		t.Fatalf("got %+v, %v", out, err)
	}
}

func TestMalformedTrees(t *testing.T) {
	// Nil pieces of hand-built IR are error results, never panics.
	expectFail(t, nativeTool("", set("a", nil, 1)), "", "line 1", "internal error: missing expression")
	expectFail(t, nativeTool("", ret(bin("+", nil, lit(int64(1))), 2)), "", "line 2", "internal error")
	expectFail(t, nativeTool("", nil), "", "internal error")
	expectFail(t, nativeTool("", ret((*ir.Literal)(nil), 1)), "", "internal error")
	expectFail(t, nativeTool("", (*ir.ReturnStmt)(nil)), "", "internal error")
	expectFail(t, nativeTool("", ret(lit(struct{}{}), 1)), "", "bad literal")
	expectFail(t, nativeTool("", ret(bin("**", lit(int64(1)), lit(int64(2))), 1)), "", "unsupported operator `**`")
	expectFail(t, nativeTool("", ret(un("~", lit(int64(1))), 1)), "", "unsupported unary operator `~`")
	// A cyclic expression ends at MaxDepth.
	cyc := &ir.Binary{Op: "+", R: lit(int64(1))}
	cyc.L = cyc
	expectFail(t, nativeTool("", ret(cyc, 3)), "", "line 3", "nested more than")
	// So does a cyclic statement tree.
	loop := &ir.IfStmt{Cond: lit(true), Line: 5}
	loop.Then = []ir.Stmt{loop}
	expectFail(t, nativeTool("", loop), "", "nested more than")
	// A deep but legal chain (as the compiler may produce) works.
	var e ir.Expr = lit(int64(0))
	for i := 0; i < 1000; i++ {
		e = bin("+", e, lit(int64(1)))
	}
	expectOK(t, nativeTool("", ret(e, 1)), "", "1000")
}

func TestConcurrentCalls(t *testing.T) {
	ex := New()
	decl := nativeTool(`{"type":"object","properties":{"n":{}}}`,
		set("r", bin("*", name("n"), name("n")), 1), ret(name("r"), 2))
	done := make(chan string, 16)
	for i := 0; i < 16; i++ {
		go func() {
			out, err := ex.Execute(context.Background(), tool.Invocation{Tool: decl, Arguments: json.RawMessage(`{"n":12}`)})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- out.Output
		}()
	}
	for i := 0; i < 16; i++ {
		if got := <-done; got != "144" {
			t.Fatalf("got %q", got)
		}
	}
}

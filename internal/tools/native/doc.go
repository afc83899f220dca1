// Package native interprets native tool bodies (docs/reference/language.md#native-bodies, docs/reference/runtime.md#tool-execution): the statements of ir.Body.Native, lowered by the compiler, run
// in-process by a small tree-walking interpreter. It implements
// runtime.Executor for ir.BodyNative.
//
// # Purity and outcomes
//
// A native body is pure: it can read its arguments, compute, write lines to
// the tool log (print) and return a value; it has no other I/O, no calls and
// no loops. So its outcome is always known:
//
//   - A body that returns (or falls off the end) is Outcome{Success: true}
//     with the formatted result.
//   - A runtime error (an unknown name, arithmetic on a non-number, division
//     or modulo by zero, an integer overflow, comparing a number with a
//     string, text over MaxText, nesting over MaxDepth, …) is
//     Outcome{Success: false} whose Output names the tool, the statement's
//     line (and the declaring file's base name) and the problem, e.g.
//     "error: tool greet failed at line 4 of tools.nx: unknown name `usr` …".
//     The error return is nil: a tool error is a known outcome.
//   - A panic inside the interpreter is recovered and becomes an
//     unsuccessful Outcome mentioning an internal error.
//   - Outcome.Sandboxed is always false: no isolation backend is involved.
//     A tool declared with `sandbox: true` is still interpreted: it can
//     reach nothing a sandbox would fence off, so refusing it would protect
//     nothing (the journal honestly records sandboxed: false).
//
// The only non-nil errors mean the body did not run to completion and so
// had no effect: no tool or a body of another kind, or a context that was
// done before the call or between two statements (the context is checked
// before every statement). Those errors wrap runtime.ErrNotExecuted (and
// the context's error), never runtime.ErrUnknownOutcome: stopping a pure
// body part-way leaves nothing behind but the log lines it printed, so
// running it again is always safe.
//
// # Values
//
// Values are JSON values: string, int64 or float64, bool, nil, []any and
// map[string]any. Arguments (a JSON object) are decoded so that a number
// written as a whole number that fits stays int64 and any other number is
// float64, exactly like number literals. Every argument is bound as a name;
// a parameter of the tool (ir.Tool.Params) missing from the arguments is
// bound to nil (the runtime has already filled in defaults). Arguments that
// are not a JSON object are an unsuccessful outcome.
//
// # Statements
//
// Statements run in order in one flat scope per call (an assignment inside
// an if branch is visible after it, like Python; assigning to a parameter
// rebinds it). `return` ends the call; falling off the end returns "";
// `return` without a value returns "". `print(x)` writes text(x) and "\n"
// in one Write to Invocation.Log (nil: discarded); a failing log writer does
// not change the result. `if` runs Then when the condition is truthy, else
// Else (else-if chains are nested IfStmts).
//
// # Expressions
//
//   - text(v): a string as is, nil as "", a whole float below 1e21 without
//     a fraction ("3", never "3.0"; -0 is "0"), anything else JSON without
//     HTML escaping (objects with sorted keys).
//   - Truthiness: false, nil, 0, 0.0, "", [] and {} are false.
//   - `+`: two numbers add; otherwise text(l) + text(r) (so "n=" + 3 is
//     "n=3", and true + nil is "true").
//   - `-`, `*`, `/`, `%`: numbers only. Two int64s give an int64, except
//     `/` with a remainder, which gives the float64 quotient (7 / 2 is 3.5,
//     6 / 3 is 2). An int64 overflow is an error, not a silent float. Any
//     float64 operand makes a float64; a non-finite result is an error
//     (it has no JSON form). `%` is floored like Python's: the result has
//     the sign of the divisor (-7 % 3 is 2). Division and modulo by zero are
//     errors.
//   - `==`, `!=`: deep equality of JSON values; numbers by value across
//     int64 and float64 (1 == 1.0); values of different types are unequal
//     ("1" != 1), never an error.
//   - `<`, `<=`, `>`, `>=`: two numbers (compared exactly, even past 2^53)
//     or two strings (byte order, i.e. code point order); anything else is
//     an error.
//   - `&&`, `||` (also spelled and/or): short-circuit on truthiness; the
//     result is a bool. `!` (or not) is the negated truthiness; unary `-`
//     negates a number.
//   - Member access x.f: the field of an object, nil when it is absent or
//     when x is not an object (including nil), never an error.
//   - Interpolation: the parts concatenated, each expression as text.
//
// # Bounds
//
// Without loops, a body's running time is linear in its size, but it can
// still double a string once per statement: any string built by `+`,
// interpolation or formatting is capped at MaxText bytes (an error result
// past it). Recursive walks are bounded by MaxDepth so that a malformed or
// cyclic tree ends in an error result rather than a fatal stack overflow.
package native

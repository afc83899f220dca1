package cli

import (
	"fmt"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/ir"
)

// compileForRun compiles FILE for nexa agent, printing its errors to stderr.
// On errors it returns a nil program and the first error as
// "file:line:col: message", for the one JSON object. Warnings are left to
// nexa validate so that a run's stderr shows the run.
func compileForRun(e *env, file string) (*ir.Program, string) {
	prog, diags := compile.Compile(file, compile.Options{NexaPath: e.getenv("NEXA_PATH")})
	if diags.HasErrors() || prog == nil {
		errs := diags.Errors()
		renderDiagnostics(e.stderr, errs, newDiagStyle(colorEnabled(e, e.stderr)))
		if len(errs) == 0 {
			return nil, "the compiler reported no diagnostic"
		}
		d := errs[0]
		return nil, fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Column, d.Message)
	}
	return prog, ""
}

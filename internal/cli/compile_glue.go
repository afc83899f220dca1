package cli

import (
	"fmt"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/ir"
)

// compileForRun compiles FILE for nexa agent. Every warning is printed to
// stderr, one line each (a run must never hide that part of its program is
// ignored), and returned in the shape of the `warnings` array of the one
// JSON object. On errors it prints them as nexa validate does and returns a
// nil program and the first error as "file:line:col: message", for that
// object.
func compileForRun(e *env, file string) (*ir.Program, string, []diagJSON) {
	prog, diags := compile.Compile(file, compile.Options{NexaPath: e.getenv("NEXA_PATH")})
	warnings := diagsJSON(diags.Warnings())
	renderDiagnosticLines(e.stderr, diags.Warnings(), newDiagStyle(colorEnabled(e, e.stderr)))
	if diags.HasErrors() || prog == nil {
		errs := diags.Errors()
		renderDiagnostics(e.stderr, errs, newDiagStyle(colorEnabled(e, e.stderr)))
		if len(errs) == 0 {
			return nil, "the compiler reported no diagnostic", warnings
		}
		d := errs[0]
		return nil, fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Column, d.Message), warnings
	}
	return prog, "", warnings
}

package cli

import (
	"github.com/nexa-run/nexa/internal/compile"
)

// compileForRun compiles FILE for nexa agent, printing its errors to stderr;
// it reports false when there are errors. Warnings are left to nexa validate
// so that a run's stderr shows the run.
func compileForRun(e *env, file string) (*compile.Program, bool) {
	prog, diags := compile.Compile(file, compile.Options{NexaPath: e.getenv("NEXA_PATH")})
	if diags.HasErrors() || prog == nil {
		renderDiagnostics(e.stderr, diags.Errors(), newDiagStyle(colorEnabled(e, e.stderr)))
		return nil, false
	}
	return prog, true
}

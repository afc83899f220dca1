package cli

import (
	"github.com/nexa-run/nexa/internal/compile"
)

// compileForRun compiles FILE for nexa agent, printing diagnostics to
// stderr; it reports false when there are errors.
func compileForRun(e *env, file string) (*compile.Program, bool) {
	return nil, false
}

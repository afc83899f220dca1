package session

import (
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"path/filepath"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/tools/builtin"
)

// EditChecker returns what checks a person's edited arguments for a run
// before they are recorded (nexa runs approve --args, nexa serve): the
// run's program compiled again from its source in its working directory
// (it must still have the run's hash), its agent, the built-in tools'
// confinement checks, and the run's policy (the file must still have the
// run's hash). The resume checks the same again before the call runs.
func EditChecker(e Env, s Store) func(*state.RunState) (engine.EditChecker, error) {
	return func(st *state.RunState) (engine.EditChecker, error) {
		src := st.Config.SourceFile
		if !filepath.IsAbs(src) {
			src = filepath.Join(st.Config.WorkDir, src)
		}
		refuse := func(format string, a ...any) error {
			return &engine.Error{Code: engine.CodeInvalidEdit, Refusal: true, Message: fmt.Sprintf(format, a...) + "; edited arguments are checked against the run's program, so nothing was recorded"}
		}
		prog, diags := compile.Compile(src, compile.Options{NexaPath: e.getenv("NEXA_PATH")})
		if prog == nil || diags.HasErrors() {
			return nil, refuse("the program of run %s (%s) does not compile here", st.ID, src)
		}
		if prog.Hash != st.Config.SourceHash {
			return nil, refuse("the program of run %s (%s) changed since the run started", st.ID, src)
		}
		agent := prog.Agent(st.Config.Agent)
		if agent == nil {
			return nil, refuse("the program of run %s declares no agent %s", st.ID, st.Config.Agent)
		}
		var rules engine.Rules
		if ref := st.Config.Policy; ref != nil {
			r, err := LoadPolicy(ref.Path)
			if err != nil {
				return nil, refuse("the policy of run %s cannot be read: %v", st.ID, err)
			}
			if r.Ref().Hash != ref.Hash {
				return nil, refuse("the policy %s of run %s changed since the run started", ref.Path, st.ID)
			}
			rules = r
		}
		prot := protectedFiles(e, localStorePath(s), prog)
		execs := map[ir.BodyKind]tool.Executor{
			ir.BodyBuiltin: builtin.New(builtin.Options{Env: toolEnv(), Protected: prot.Hidden()}),
		}
		return engine.NewEditChecker(engine.Config{Program: prog, Agent: agent, Executors: execs, Rules: rules})
	}
}

package session

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/sandbox"
	"github.com/nexa-run/nexa/internal/store/sqlite"
	"github.com/nexa-run/nexa/internal/tool"
	"github.com/nexa-run/nexa/internal/toolenv"
	"github.com/nexa-run/nexa/internal/tools/builtin"
	"github.com/nexa-run/nexa/internal/tools/native"
	"github.com/nexa-run/nexa/internal/tools/pytool"
)

// executors are the tool executors of this build, by body kind.
// The Python executor is returned too: it keeps warm interpreters that the
// caller stops with Close when the run stops.
// prot are the files tools must not reach (protectedFiles).
func executors(e Env, detect func() (*sandbox.Bwrap, error), prot sandbox.Protected) (map[ir.BodyKind]tool.Executor, *pytool.Executor) {
	py := pytool.New(pytool.Options{Python: e.getenv("NEXA_PYTHON"), Env: toolEnv(), Sandbox: detect, Protected: prot})
	return map[ir.BodyKind]tool.Executor{
		ir.BodyPython:  py,
		ir.BodyNative:  native.New(),
		ir.BodyBuiltin: builtin.New(builtin.Options{Env: toolEnv(), Protected: prot.Hidden()}),
	}, py
}

// protectedFiles lists nexa's own files, which no tool may read or change
// (sandboxed tools cannot see them, std.fs refuses them): the store at
// storePath with its SQLite siblings, the logs and locks kept beside it (the
// whole directory when it is .nexa), and the secrets files. The program and
// its legacy tool files stay readable but cannot be changed from the
// sandbox: they run later outside it.
func protectedFiles(e Env, storePath string, prog *ir.Program) sandbox.Protected {
	var p sandbox.Protected
	dir := filepath.Dir(storePath)
	if filepath.Base(dir) == sqlite.DirName {
		p.Dirs = append(p.Dirs, dir)
	}
	p.Dirs = append(p.Dirs, filepath.Join(dir, "logs"), filepath.Join(dir, "locks"))
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		p.Files = append(p.Files, storePath+suffix)
	}
	secretFiles := append([]string(nil), prog.SecretFiles...)
	if s := e.getenv("NEXA_SECRETS"); s != "" {
		secretFiles = append(secretFiles, s)
	}
	for _, f := range secretFiles {
		if abs, err := filepath.Abs(f); err == nil {
			p.Files = append(p.Files, abs)
		}
	}
	readOnly := append([]string(nil), prog.Files...)
	for _, t := range prog.Tools {
		if t.Body.PythonFile != "" {
			readOnly = append(readOnly, t.Body.PythonFile)
		}
	}
	for _, f := range readOnly {
		if abs, err := filepath.Abs(f); err == nil {
			p.ReadOnly = append(p.ReadOnly, abs)
		}
	}
	return p
}

// toolEnv is the environment Python and shell tools start with: the least
// environment of toolenv.Tool, never nexa's whole one (provider keys,
// credentials) — see docs/tools.md.
func toolEnv() []string {
	return toolenv.Tool(os.Environ())
}

// sandboxDetector finds the isolation backend: NEXA_BWRAP names the
// bubblewrap binary when it is not bwrap in PATH. The check runs once.
func sandboxDetector(e Env) func() (*sandbox.Bwrap, error) {
	bin := e.getenv("NEXA_BWRAP")
	if bin == "" {
		return sandbox.Detect
	}
	var (
		once sync.Once
		bw   *sandbox.Bwrap
		err  error
	)
	return func() (*sandbox.Bwrap, error) {
		once.Do(func() { bw, err = sandbox.Probe(bin) })
		return bw, err
	}
}

// sandboxAvailable is the runtime's check before a sandboxed call.
func sandboxAvailable(detect func() (*sandbox.Bwrap, error)) func() error {
	return func() error {
		_, err := detect()
		return err
	}
}

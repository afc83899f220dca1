package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/runtime"
	"github.com/nexa-run/nexa/internal/runtime/builtin"
	"github.com/nexa-run/nexa/internal/runtime/native"
	"github.com/nexa-run/nexa/internal/runtime/pytool"
	"github.com/nexa-run/nexa/internal/runtime/sandbox"
	"github.com/nexa-run/nexa/internal/runtime/state"
	"github.com/nexa-run/nexa/internal/store"
)

// storeHandle is a run store that can say where it lives (for messages)
// and where it keeps a run's log files (it deletes them with the run).
type storeHandle interface {
	state.Store
	Path() string
	LogFile(runID string, kind store.LogKind) (string, error)
}

// storePath resolves --store, then NEXA_STORE, then .nexa/runs.sqlite3 under
// the working directory.
func storePath(e *env, flag, wd string) string {
	p := flag
	if p == "" {
		p = e.getenv("NEXA_STORE")
	}
	if p == "" {
		return store.DefaultPath(wd)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(wd, p)
	}
	return p
}

func openStore(e *env, flag, wd string) (storeHandle, error) {
	path := storePath(e, flag, wd)
	s, err := store.Open(context.Background(), path)
	if err != nil {
		return nil, fmt.Errorf("open run store %s: %w", path, err)
	}
	return s, nil
}

// executors are the tool executors of this build, by body kind.
// The Python executor is returned too: it keeps warm interpreters that the
// caller stops with Close when the run stops.
func executors(e *env, detect func() (*sandbox.Bwrap, error)) (map[compile.BodyKind]runtime.Executor, *pytool.Executor) {
	py := pytool.New(pytool.Options{Python: e.getenv("NEXA_PYTHON"), Env: toolEnv(), Sandbox: detect})
	return map[compile.BodyKind]runtime.Executor{
		compile.BodyPython:  py,
		compile.BodyNative:  native.New(),
		compile.BodyBuiltin: builtin.New(builtin.Options{Env: toolEnv()}),
	}, py
}

// toolEnv is the environment tools start with: this process's, without
// nexa's own provider key, which is for the model and not for tools.
func toolEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NEXA_API_KEY=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// sandboxDetector finds the isolation backend: NEXA_BWRAP names the
// bubblewrap binary when it is not bwrap in PATH. The check runs once.
func sandboxDetector(e *env) func() (*sandbox.Bwrap, error) {
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

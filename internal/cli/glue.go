package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/runtime"
	"github.com/nexa-run/nexa/internal/runtime/native"
	"github.com/nexa-run/nexa/internal/runtime/pytool"
	"github.com/nexa-run/nexa/internal/runtime/state"
	"github.com/nexa-run/nexa/internal/store"
)

// storeHandle is a run store that can say where it lives (for messages and
// the tool logs kept beside it).
type storeHandle interface {
	state.Store
	Path() string
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
func executors(e *env) map[compile.BodyKind]runtime.Executor {
	py := pytool.New(pytool.Options{Python: e.getenv("NEXA_PYTHON"), Env: toolEnv()})
	return map[compile.BodyKind]runtime.Executor{
		compile.BodyPython: py,
		compile.BodyNative: native.New(),
	}
}

// sandboxAvailable reports whether a sandbox backend works; this build has
// none yet, so sandboxed tools are refused rather than run unisolated.
func sandboxAvailable() error {
	return fmt.Errorf("no sandbox backend is built in yet")
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

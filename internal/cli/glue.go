package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/sandbox"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres"
	"github.com/nexa-run/nexa/internal/store/sqlite"
	"github.com/nexa-run/nexa/internal/toolenv"
	"github.com/nexa-run/nexa/internal/tools/builtin"
	"github.com/nexa-run/nexa/internal/tools/native"
	"github.com/nexa-run/nexa/internal/tools/pytool"
)

// storeHandle is a run store that can say where it lives (for messages)
// and where it keeps a run's log files (it deletes them with the run).
type storeHandle interface {
	state.Store
	Path() string
	LogFile(runID string, kind sqlite.LogKind) (string, error)
}

// storePath resolves --store, then NEXA_STORE, then .nexa/runs.sqlite3 under
// the working directory.
func storePath(e *env, flag, wd string) string {
	return sqlite.Locate(storeName(e, flag), wd)
}

// storeOpenError is a store that could not be opened, with the exit code
// and JSON error code the cause deserves: a path that can never be a store
// (a directory) or a store that does not exist for a command that only reads
// is the user's input (exit 2); anything else is operational (exit 1).
type storeOpenError struct {
	exit int
	code string
	msg  string
}

func (e *storeOpenError) Error() string { return e.msg }

// openStoreForCommand opens the run store for a command that reports
// failures only as an exit code and a message (runs, serve): the working
// directory is the one the process runs in.
func openStoreForCommand(e *env, flag string, create bool) (storeHandle, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, &exitError{code: ExitFailed, msg: fmt.Sprintf("working directory: %v", err)}
	}
	s, err := openStore(e, flag, wd, create)
	if err != nil {
		var se *storeOpenError
		if errors.As(err, &se) {
			return nil, &exitError{code: se.exit, msg: se.msg}
		}
		return nil, &exitError{code: ExitFailed, msg: err.Error()}
	}
	return s, nil
}

// openStore opens the run store. create says whether a missing store may be
// created: only a command that starts a run creates one, so that looking at
// runs (nexa runs list, show, …) never leaves a .nexa directory behind.
func openStore(e *env, flag, wd string, create bool) (storeHandle, error) {
	if name := storeName(e, flag); postgres.IsURL(name) {
		return openPostgres(name, wd, create)
	}
	path := storePath(e, flag, wd)
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return nil, &storeOpenError{exit: ExitUsage, code: engine.CodeUsage, msg: fmt.Sprintf(
			"the run store %s is a directory; name a database file, such as %s", path, filepath.Join(path, sqlite.FileName))}
	case err != nil && errors.Is(err, fs.ErrNotExist) && !create:
		return nil, &storeOpenError{exit: ExitUsage, code: engine.CodeNoStore, msg: fmt.Sprintf(
			"no store at %s: no run was started here yet (nexa agent creates it), or give the store with --store or NEXA_STORE", path)}
	}
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		msg := fmt.Sprintf("open run store %s: %v", path, err)
		if dir := filepath.Dir(path); readOnly(dir) {
			msg = fmt.Sprintf("the run store %s cannot be written: its directory %s is read-only (%v); make it writable or choose another store with --store", path, dir, err)
		}
		return nil, &storeOpenError{exit: ExitFailed, code: engine.CodeStoreError, msg: msg}
	}
	return s, nil
}

// openingStore is a resume's store being opened in the background, and
// the run to resume being read from it.
type openingStore struct {
	done  chan struct{}
	st    storeHandle
	pre   *engine.Preloaded
	err   error
	taken bool
}

// openStoreAhead starts opening an existing store (never creating one) and
// reading run runID from it, so that a resume can do independent work,
// such as compiling, meanwhile.
func openStoreAhead(e *env, flag, wd, runID string) *openingStore {
	o := &openingStore{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.st, o.err = openStore(e, flag, wd, false)
		if o.err == nil {
			o.pre = engine.Preload(context.Background(), o.st, runID)
		}
	}()
	return o
}

// take waits for the store and hands it, or the error opening it, to the
// caller, who closes it from then on (after pre.Wait), with the run being
// read for Resume.
func (o *openingStore) take() (storeHandle, *engine.Preloaded, error) {
	<-o.done
	o.taken = true
	return o.st, o.pre, o.err
}

// discard closes the store, once its read has ended, if the command
// returned before taking it.
func (o *openingStore) discard() {
	if o.taken {
		return
	}
	<-o.done
	if o.st != nil {
		o.pre.Wait()
		o.st.Close()
	}
}

// storeName is --store, else NEXA_STORE, as given.
func storeName(e *env, flag string) string {
	if flag != "" {
		return flag
	}
	return e.getenv("NEXA_STORE")
}

// pgOpenTimeout bounds connecting to PostgreSQL and migrating its schema,
// so an unreachable server fails the command instead of hanging it.
const pgOpenTimeout = time.Minute

// pgHandle is the PostgreSQL store as the CLI uses it. Its run logs are
// local diagnostics kept in WORKDIR/.nexa/logs (docs/store.md): nothing a
// run needs to continue is in them.
type pgHandle struct {
	*postgres.Store
	wd string
}

// LogFile names the run's local log of the given kind.
func (h pgHandle) LogFile(runID string, kind sqlite.LogKind) (string, error) {
	return h.Store.LogFile(runID, string(kind))
}

// openPostgres opens the PostgreSQL store a postgres:// URL names; unless
// create is set, a database without nexa's tables is left untouched and
// reported as no store (exit 2), as for SQLite. Any other failure is
// operational (exit 1); its message never holds the password.
func openPostgres(rawURL, wd string, create bool) (storeHandle, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgOpenTimeout)
	defer cancel()
	opts := []postgres.Option{postgres.WithLogDir(filepath.Join(wd, sqlite.DirName, "logs"))}
	if !create {
		opts = append(opts, postgres.WithoutCreate())
	}
	s, err := postgres.Open(ctx, rawURL, opts...)
	if errors.Is(err, postgres.ErrNoStore) {
		return nil, &storeOpenError{exit: ExitUsage, code: engine.CodeNoStore, msg: fmt.Sprintf(
			"no store at %s: no run was stored in this database yet (nexa agent creates the tables)", postgres.Redact(rawURL))}
	}
	if err != nil {
		return nil, &storeOpenError{exit: ExitFailed, code: engine.CodeStoreError, msg: err.Error()}
	}
	return pgHandle{Store: s, wd: wd}, nil
}

// localStorePath is the local file whose directory holds the store's
// logs (and, for SQLite, the store): tools are kept away from it.
func localStorePath(st storeHandle) string {
	if h, ok := st.(pgHandle); ok {
		return sqlite.DefaultPath(h.wd)
	}
	return st.Path()
}

// readOnly reports whether dir exists and this process may not write to it
// (its permissions, or a read-only file system).
func readOnly(dir string) bool {
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	err := syscall.Access(dir, 2) // W_OK
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EPERM)
}

// executors are the tool executors of this build, by body kind.
// The Python executor is returned too: it keeps warm interpreters that the
// caller stops with Close when the run stops.
// prot are the files tools must not reach (protectedFiles).
func executors(e *env, detect func() (*sandbox.Bwrap, error), prot sandbox.Protected) (map[ir.BodyKind]tool.Executor, *pytool.Executor) {
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
func protectedFiles(e *env, storePath string, prog *ir.Program) sandbox.Protected {
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

package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/postgres"
	"github.com/nexa-run/nexa/internal/store/sqlite"
)

// Store is a run store that can say where it lives (for messages) and
// where it keeps a run's log files (it deletes them with the run).
type Store interface {
	state.Store
	Path() string
	LogFile(runID string, kind sqlite.LogKind) (string, error)
}

// StoreName is the store a command names: its --store flag, else
// NEXA_STORE, as given.
func StoreName(e Env, flag string) string {
	if flag != "" {
		return flag
	}
	return e.getenv("NEXA_STORE")
}

// StorePath resolves the SQLite store of --store, NEXA_STORE or
// .nexa/runs.sqlite3 under wd.
func StorePath(e Env, flag, wd string) string {
	return sqlite.Locate(StoreName(e, flag), wd)
}

// StoreError is a store that could not be opened, with the error code the
// cause deserves. Usage marks the user's input (a path that can never be a
// store, or no store for a command that only reads: exit 2); anything else
// is operational (exit 1).
type StoreError struct {
	Code  string
	Usage bool
	Msg   string
}

func (e *StoreError) Error() string { return e.Msg }

// OpenStore opens the run store named by flag (or NEXA_STORE, else the
// default under wd). create says whether a missing store may be created:
// only starting a run creates one, so that looking at runs never leaves a
// .nexa directory behind.
func OpenStore(e Env, flag, wd string, create bool) (Store, error) {
	if name := StoreName(e, flag); postgres.IsURL(name) {
		return openPostgres(name, wd, create)
	}
	path := StorePath(e, flag, wd)
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return nil, &StoreError{Usage: true, Code: engine.CodeUsage, Msg: fmt.Sprintf(
			"the run store %s is a directory; name a database file, such as %s", path, filepath.Join(path, sqlite.FileName))}
	case err != nil && errors.Is(err, fs.ErrNotExist) && !create:
		return nil, &StoreError{Usage: true, Code: engine.CodeNoStore, Msg: fmt.Sprintf(
			"no store at %s: no run was started here yet (nexa agent creates it), or give the store with --store or NEXA_STORE", path)}
	}
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		msg := fmt.Sprintf("open run store %s: %v", path, err)
		if dir := filepath.Dir(path); readOnly(dir) {
			msg = fmt.Sprintf("the run store %s cannot be written: its directory %s is read-only (%v); make it writable or choose another store with --store", path, dir, err)
		}
		return nil, &StoreError{Code: engine.CodeStoreError, Msg: msg}
	}
	return s, nil
}

// Opening is a resume's store being opened in the background, and the run
// to resume being read from it, so that the command can compile meanwhile.
type Opening struct {
	done  chan struct{}
	st    Store
	pre   *engine.Preloaded
	err   error
	taken bool
}

// OpenAhead starts opening an existing store (never creating one) and
// reading run runID from it.
func OpenAhead(e Env, flag, wd, runID string) *Opening {
	o := &Opening{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.st, o.err = OpenStore(e, flag, wd, false)
		if o.err == nil {
			o.pre = engine.Preload(context.Background(), o.st, runID)
		}
	}()
	return o
}

// Take waits for the store and hands it, or the error opening it, to the
// caller, who closes it from then on (after the read's Wait), with the run
// being read for Resume.
func (o *Opening) Take() (Store, *engine.Preloaded, error) {
	<-o.done
	o.taken = true
	return o.st, o.pre, o.err
}

// Discard closes the store, once its read has ended, if it was not taken.
func (o *Opening) Discard() {
	if o.taken {
		return
	}
	<-o.done
	if o.st != nil {
		o.pre.Wait()
		o.st.Close()
	}
}

// pgOpenTimeout bounds connecting to PostgreSQL and migrating its schema,
// so an unreachable server fails the command instead of hanging it.
const pgOpenTimeout = time.Minute

// pgStore is the PostgreSQL store with its run logs kept locally, in
// WORKDIR/.nexa/logs (docs/store.md): nothing a run needs to continue is
// in them.
type pgStore struct {
	*postgres.Store
	wd string
}

// LogFile names the run's local log of the given kind.
func (h pgStore) LogFile(runID string, kind sqlite.LogKind) (string, error) {
	return h.Store.LogFile(runID, string(kind))
}

// openPostgres opens the PostgreSQL store a postgres:// URL names; unless
// create is set, a database without nexa's tables is left untouched and
// reported as no store (exit 2), as for SQLite. Any other failure is
// operational (exit 1); its message never holds the password.
func openPostgres(rawURL, wd string, create bool) (Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgOpenTimeout)
	defer cancel()
	opts := []postgres.Option{postgres.WithLogDir(filepath.Join(wd, sqlite.DirName, "logs"))}
	if !create {
		opts = append(opts, postgres.WithoutCreate())
	}
	s, err := postgres.Open(ctx, rawURL, opts...)
	if errors.Is(err, postgres.ErrNoStore) {
		return nil, &StoreError{Usage: true, Code: engine.CodeNoStore, Msg: fmt.Sprintf(
			"no store at %s: no run was stored in this database yet (nexa agent creates the tables)", postgres.Redact(rawURL))}
	}
	if err != nil {
		return nil, &StoreError{Code: engine.CodeStoreError, Msg: err.Error()}
	}
	return pgStore{Store: s, wd: wd}, nil
}

// localStorePath is the local file whose directory holds the store's logs
// (and, for SQLite, the store): tools are kept away from it.
func localStorePath(st Store) string {
	if h, ok := st.(pgStore); ok {
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

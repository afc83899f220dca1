package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/runrow"
)

// DirName is the directory, under the working directory, that holds the
// default store; Open gives it a .gitignore so runs are never committed.
const DirName = ".nexa"

// FileName is the default store's file name inside DirName.
const FileName = "runs.sqlite3"

// DefaultBusyTimeout is how long one attempt of a write waits for another
// process's transaction inside SQLite. A write whose context has no
// deadline then tries again until the store is free; one whose context has
// a deadline gives up with ErrLocked when it passes.
const DefaultBusyTimeout = 5 * time.Second

// Errors a caller may want to tell apart; each is wrapped with the operation
// and the cause, so test them with errors.Is.
var (
	// ErrLocked: other processes held the database's write lock for as
	// long as the caller's context allowed. It is state.ErrBusy.
	ErrLocked = state.ErrBusy
	// ErrCorrupt: the file is not a SQLite database, or SQLite found it
	// damaged. The file is left as it is.
	ErrCorrupt = errors.New("store file is not a valid SQLite database or is corrupt")
	// ErrNotRunStore: the file is a SQLite database of another application;
	// Open refuses to add tables to it.
	ErrNotRunStore = errors.New("file is a SQLite database but not a nexa run store")
	// ErrNewerSchema: the store was written by a newer nexa whose schema this
	// binary does not know; it is left untouched.
	ErrNewerSchema = errors.New("store schema is newer than this nexa supports")
	// ErrRunExists: Create was given an id that is already stored.
	ErrRunExists = state.ErrExists
)

// SQLite is the SQLite implementation of state.Store. It is safe for
// concurrent use; several handles, in one process or many, may share a file.
type SQLite struct {
	db   *sql.DB
	path string
	// id is the identity of the file Open verified; every write checks
	// that it is still the file at path (see guard).
	id fileID
	// headFD is the store file, open read-only for the life of the
	// handle: guard reads the header through it, so a save's check
	// costs a stat and a pread rather than an open and a close (and
	// closing a descriptor of the file would also drop the POSIX locks
	// SQLite's connections hold on it).
	headFD int
	now    func() time.Time
	// busyTimeout bounds one attempt of a write whose context has no
	// deadline (see inTx).
	busyTimeout time.Duration

	// onBusy, set by tests, is called each time a write found the
	// store locked for a whole busy timeout and is about to retry.
	onBusy func()

	mu   sync.Mutex
	held map[string]*os.File // run id → its locked lock file, while this handle holds the lease

	// stmts are the statements of every step's write, prepared once on
	// the database (and by database/sql once per pooled connection), so
	// a save does not compile its SQL again. They are prepared before
	// the handle's first write, not by Open: a command that only reads
	// (runs list, runs show) never pays for them. Nil until then.
	stmts atomic.Pointer[map[string]*sql.Stmt]
	// prepareMu serialises the preparation of stmts.
	prepareMu sync.Mutex
	// saved is each run's header as this handle last wrote it, so that
	// a save whose header differs only in usage and updated_at writes
	// only those (see writeRun).
	saved runrow.Saved
}

var _ state.Store = (*SQLite)(nil)

// Option adjusts Open; the zero set of options is what the CLI uses.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	now         func() time.Time
}

// WithClock sets the clock of lease expiry and of the timestamps the store
// writes (default time.Now), so tests can expire a lease without waiting.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithBusyTimeout sets how long a write waits for another process's lock
// before failing with ErrLocked (default DefaultBusyTimeout). Tests use a
// short one; a value <= 0 keeps the default.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.busyTimeout = d
		}
	}
}

// DefaultPath is where the store of a working directory lives unless the user
// names another file: WORKDIR/.nexa/runs.sqlite3.
func DefaultPath(workDir string) string {
	return filepath.Join(workDir, DirName, FileName)
}

// Locate is the database file that a store name (--store, else
// NEXA_STORE, as given; "" for neither) means in working directory wd: the
// name, made absolute against wd, or DefaultPath(wd) for no name.
func Locate(name, wd string) string {
	switch {
	case name == "":
		return DefaultPath(wd)
	case filepath.IsAbs(name):
		return name
	}
	return filepath.Join(wd, name)
}

// useFdatasync makes SQLite commit with fdatasync(2) instead of fsync(2),
// once per process, before the first store opens. fdatasync writes a
// file's data and what is needed to read it back (its size included), but
// not its timestamps, so a commit is exactly as durable and waits for less
// (the inode's timestamp update). It is what SQLite does on Linux when
// built by its own configure script; the transpiled library keeps fsync
// unless told (modernc.org/sqlite's Fdatasync). A platform without it
// keeps fsync.
var useFdatasync = sync.OnceFunc(func() { _, _ = sqlite.Fdatasync(true) })

// sqliteDriver opens every store's connections.
var sqliteDriver = &sqlite.Driver{}

// connector opens the store's connections with its DSN through
// sqliteDriver, so that no driver name is registered for it.
type connector struct {
	dsn string
	drv *sqlite.Driver
}

// Connect opens one connection; database/sql calls it for each connection
// of the pool.
func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }

// Driver is the driver the connections come from.
func (c connector) Driver() driver.Driver { return c.drv }

// maxConns bounds the pool. WAL lets readers run beside the one writer, so a
// few connections let List or Load proceed while a Save waits for its lock.
const maxConns = 4

// Open opens the store at path, creating it (and a missing parent directory)
// if needed, and migrates its schema forward. See the package documentation
// for what it creates, refuses and guarantees.
func Open(ctx context.Context, path string, opts ...Option) (*SQLite, error) {
	o := options{busyTimeout: DefaultBusyTimeout, now: time.Now}
	for _, fn := range opts {
		if fn != nil {
			fn(&o)
		}
	}
	if path == "" {
		return nil, errors.New("open run store: empty path")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open run store %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open run store %s: %w", path, err)
	}
	if err := prepareFiles(abs); err != nil {
		return nil, fmt.Errorf("open run store %s: %w", path, err)
	}
	useFdatasync()

	db := sql.OpenDB(connector{dsn: dsn(abs, o), drv: sqliteDriver})
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	s := &SQLite{db: db, path: abs, now: o.now, busyTimeout: o.busyTimeout, held: map[string]*os.File{}}
	// The identity is the open descriptor's, so the file guard reads is
	// the file it compares against; init reads the header through it too.
	if s.headFD, err = syscall.Open(abs, syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != nil {
		db.Close()
		return nil, fmt.Errorf("open run store %s: %w", path, err)
	}
	if err := s.init(ctx); err != nil {
		db.Close()
		syscall.Close(s.headFD)
		return nil, fmt.Errorf("open run store %s: %w", path, err)
	}
	tightenMode(abs)
	var fst syscall.Stat_t
	if err := syscall.Fstat(s.headFD, &fst); err != nil {
		db.Close()
		syscall.Close(s.headFD)
		return nil, fmt.Errorf("open run store %s: %w", path, err)
	}
	s.id = fileID{dev: uint64(fst.Dev), ino: uint64(fst.Ino)}
	return s, nil
}

// init checks what the file is, switches it to WAL and migrates it. Nothing is
// written before the file is known to be empty or a run store.
func (s *SQLite) init(ctx context.Context) error {
	id, err := readIdentity(ctx, s.db)
	if err != nil {
		return dbErr(ctx, err)
	}
	if err := id.check(len(migrations)); err != nil {
		return err
	}
	if id.version == len(migrations) && headerProblem(s.headFD) == "" {
		// A current store in WAL mode (the mode is persistent, and set
		// by the Open that created the store): nothing to set or migrate.
		return nil
	}
	mode, err := s.switchToWAL(ctx)
	if err != nil {
		return fmt.Errorf("set WAL journal mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("set WAL journal mode: SQLite kept journal mode %q (is the file on a filesystem without shared-memory support?)", mode)
	}
	if id.version == len(migrations) {
		return nil // current: migrate would only read the identity again
	}
	return migrate(ctx, s.db, migrations)
}

// switchToWAL sets the journal mode to WAL. The switch needs the file to
// itself; when other processes open a new store at the same moment SQLite
// can answer SQLITE_BUSY at once, without waiting through its busy
// timeout, so a busy answer is tried again, for as long as that timeout.
func (s *SQLite) switchToWAL(ctx context.Context) (string, error) {
	giveUp := time.Now().Add(s.busyTimeout)
	pause := 2 * time.Millisecond
	for {
		var mode string
		err := dbErr(ctx, s.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode))
		if err == nil || !errors.Is(err, ErrLocked) || time.Now().Add(pause).After(giveUp) {
			return mode, err
		}
		select {
		case <-ctx.Done():
			return "", dbErr(ctx, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// cachePages is each connection's page cache, in pages. SQLite's default
// (2 MB) is grown page by page as a read goes, and in a fresh process each
// new page is fresh memory the kernel must fault in: reading a 3 MB run
// through it cost more than reading the file. A read of a run is one pass
// in key order and a save touches a few dozen pages (the b-trees' upper
// levels, the leaves it appends to), so a small cache keeps what is reused
// and recycles the rest (docs/benchmarks.md#resume).
const cachePages = 128

// dsn is the connection string: a file: URI, so that any character of the
// path is escaped, with the pragmas every pooled connection runs when it is
// opened and BEGIN IMMEDIATE for every read-write transaction.
func dsn(abs string, o options) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(o.busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "cache_size("+strconv.Itoa(cachePages)+")")
	q.Set("_txlock", "immediate")
	// url.URL would render file:///abs; SQLite accepts both, keep it short.
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// prepareFiles creates a missing parent directory (0700), the .gitignore of a
// .nexa directory, and a missing database file (0600), so that SQLite never
// creates either with the process's default mode.
func prepareFiles(abs string) error {
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create store directory: %w", err)
		}
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if filepath.Base(dir) == DirName {
		if err := ensureGitignore(dir); err != nil {
			return err
		}
	}

	fi, err := os.Stat(abs)
	switch {
	case err == nil:
		if fi.IsDir() {
			return errors.New("path is a directory")
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // another process was quicker
			return nil
		}
		return fmt.Errorf("create store file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create store file: %w", err)
	}
	return nil
}

// prepared reports whether prepareFiles would leave abs as it is: the
// database file exists (a regular file) and, in a .nexa directory, the

// ensureGitignore writes "*" to DIR/.gitignore unless the file exists, so
// that a .nexa directory (made by us or anyone) keeps runs out of git. The
// file is written aside and hard-linked into place, so a crash never leaves
// an empty .gitignore and an existing one is never replaced.
func ensureGitignore(dir string) error {
	dst := filepath.Join(dir, ".gitignore")
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	f, err := os.CreateTemp(dir, ".gitignore.tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.WriteString("*\n")
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, 0o644)); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	err = os.Link(tmp, dst)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	// A filesystem without hard links: create it in place, still never
	// replacing an existing file.
	g, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("write %s: %w", dst, err)
	}
	_, werr = g.WriteString("*\n")
	if err := errors.Join(werr, g.Close()); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}

// tightenMode removes group and other permissions from the store and its WAL
// files, best effort: runs hold conversations and tool output. It is called
// only once the file is known to be a run store.
func tightenMode(abs string) {
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			_ = os.Chmod(p, perm&^0o077)
		}
	}
}

// Path is the absolute path of the database file, for messages.
func (s *SQLite) Path() string { return s.path }

// Close releases the database; it waits for no transaction because every
// method finishes its own before returning. Leases this handle holds stay
// in the database but their lock files are unlocked, as when the process
// dies: another process may take those runs over at once. SQLite copies
// the write-ahead log into the database file as the last connection
// closes.
func (s *SQLite) Close() error {
	s.mu.Lock()
	for id, f := range s.held {
		f.Close()
		delete(s.held, id)
	}
	s.mu.Unlock()
	if m := s.stmts.Load(); m != nil {
		for _, st := range *m {
			st.Close()
		}
	}
	err := s.db.Close()
	// After SQLite's connections: closing it releases this process's
	// POSIX locks on the file.
	syscall.Close(s.headFD)
	if err != nil {
		return fmt.Errorf("close run store %s: %w", s.path, err)
	}
	return nil
}

// dbErr turns a driver error into one a user can act on: a busy database
// becomes ErrLocked, a damaged file ErrCorrupt, and an error caused by a
// cancelled context says so (errors.Is(err, context.Canceled) holds).
func dbErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY:
			return fmt.Errorf("%w: %w", ErrLocked, err)
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	return err
}

// isConstraint reports a UNIQUE / PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

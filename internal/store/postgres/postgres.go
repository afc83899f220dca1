// Package pgstore keeps runs in PostgreSQL, so that the processes driving,
// approving and resuming one run may live on different hosts. *Store
// implements state.Store with the same guarantees as the SQLite store
// (package store): every write is one transaction conditioned on the
// revision the caller read and, for an executor, on its lease.
//
// # Connection
//
// Open takes a postgres:// or postgresql:// URL and parses it with pgx's own
// parser, so the libpq conventions apply: PGHOST, PGPORT, PGUSER,
// PGPASSWORD, PGDATABASE, PGSERVICE (pg_service.conf), ~/.pgpass and
// sslmode. Any other query parameter is a run-time setting sent at
// connection time; search_path=SCHEMA keeps nexa's tables in a schema of
// their own. The password never appears in an error or in Path.
//
// # Schema
//
// Tables are named nexa_*: nexa_schema (one row: the schema version),
// nexa_runs (the header, the revision and the lease), nexa_messages,
// nexa_provider_items and nexa_journal (one row per entry, keyed by run and
// seq or call id). A save writes the header and the rows of its
// state.Delta: it costs what changed, not the length of the run. Open
// applies the missing migrations in one transaction; several processes may
// open a new database at once (the version row is locked FOR UPDATE, and a
// process that loses the race to create the tables rolls back and reads
// again). A database stamped with a newer version is refused with
// ErrNewerSchema before anything is written.
//
// # Leases and fencing
//
// A run's lease is three columns of nexa_runs: owner, epoch and expiry. The
// expiry is computed by the database (now() + ttl), never by the host, so
// hosts with skewed clocks agree on it. Acquire succeeds only when the
// stored lease is free or expired and increments the epoch in the same
// UPDATE; Save and Renew commit only while owner and epoch are still the
// caller's. An executor that was paused or cut off past its expiry, and
// whose run another executor has taken since, can therefore never write
// again: its epoch is stale. Unlike the SQLite store, no kernel lock stands
// behind the lease: the run of a dead holder can be taken when its lease
// expires (runtime.LeaseTTL), not at once.
//
// # Retries
//
// # Workers
//
// Claim takes a runnable run (state.Runnable, a column of nexa_runs
// written with every save) with SELECT … FOR UPDATE SKIP LOCKED and takes
// its lease in the same transaction. A commit that leaves a run runnable
// (a save, a release, a queued run's creation) sends pg_notify on the
// channel nexa_runnable inside its transaction, and WakeUps listens on a
// connection of its own, so a waiting worker claims at once. A server
// without pg_notify (CockroachDB) is detected once and sends nothing: its
// workers find runs by polling.
//
// A handle that has reached the server once rides out a restart or a
// failover: a transaction whose connection was refused or lost before its
// COMMIT was sent cannot have committed, so it is run again from the start
// on a new connection, for up to reconnectWindow (and as long as the
// caller's context allows). A COMMIT cut off after it was sent is never run again:
// whether it landed is unknown, and the caller's error says so. A handle
// that never reached the server (a wrong host or port) fails at once.
//
// No advisory locks are used. A transaction that fails
// with a serialization failure (SQLSTATE 40001) or a deadlock (40P01) is
// run again from the start for as long as the caller's context allows, as
// CockroachDB and YugabyteDB require of their clients.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/runrow"
)

// Errors a caller may want to tell apart (with errors.Is).
var (
	// ErrNewerSchema: the database was written by a newer nexa whose schema
	// this binary does not know; nothing was written to it.
	ErrNewerSchema = errors.New("store schema is newer than this nexa supports")
	// ErrNoStore: Open was asked not to create the tables (WithoutCreate)
	// and the database has none: no run was ever stored there.
	ErrNoStore = errors.New("the database holds no nexa run store yet")
	// ErrNotURL: the store name is not a postgres:// or postgresql:// URL.
	ErrNotURL = errors.New("not a PostgreSQL URL (postgres://… or postgresql://…)")
)

// IsURL reports whether name selects this store: a postgres:// or
// postgresql:// URL. The CLI uses it to choose between the stores.
func IsURL(name string) bool {
	l := strings.ToLower(name)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Store is the PostgreSQL implementation of state.Store. It is safe for
// concurrent use; any number of handles, on any hosts, may share a
// database.
type Store struct {
	pool     *pgxpool.Pool
	redacted string // the URL with its password masked, for messages
	secret   string // the password, scrubbed from every error
	logDir   string
	noCreate bool
	// beforeCommit, set by tests, runs inside a write transaction just
	// before its COMMIT is sent.
	beforeCommit func(ctx context.Context, tx pgx.Tx) error

	// saved is each run's header as this handle last wrote it, by run
	// id, so that a save whose header differs only in usage writes
	// only usage and updated_at (see writeRun). Statements need no
	// cache here: pgx prepares each query once per connection.
	saved runrow.Saved

	// notify says whether the server has pg_notify: 0 not asked yet, 1
	// yes, 2 no (see canNotify).
	notify atomic.Int32
	// worked is set once the handle has reached the server (Open
	// migrated): from then on a lost connection is retried (see inTx).
	worked atomic.Bool
}

var _ state.Store = (*Store)(nil)

// Option adjusts Open.
type Option func(*Store)

// WithLogDir sets the local directory of the run logs LogFile names (see
// LogFile); the CLI passes WORKDIR/.nexa/logs.
func WithLogDir(dir string) Option {
	return func(s *Store) { s.logDir = dir }
}

// WithoutCreate makes Open fail with ErrNoStore, writing nothing, when the
// database has no nexa tables yet: commands that only look at runs never
// create a store (an older schema is still migrated forward).
func WithoutCreate() Option {
	return func(s *Store) { s.noCreate = true }
}

// maxConns bounds the pool: one executor needs a connection for its saves
// and one for the renewals of its lease.
const maxConns = 4

// Open connects to the database the URL names and migrates its schema
// forward. See the package documentation for what the URL may say.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	if !IsURL(rawURL) {
		return nil, fmt.Errorf("open run store: %w", ErrNotURL)
	}
	s := &Store{redacted: Redact(rawURL)}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx masks the password of the URL it quotes; scrub anyway.
		s.secret = urlPassword(rawURL)
		return nil, s.wrap(fmt.Errorf("open run store %s: %w", s.redacted, err))
	}
	s.secret = cfg.ConnConfig.Password
	if s.secret == "" {
		s.secret = urlPassword(rawURL)
	}
	cfg.MaxConns = maxConns
	cfg.MinConns = 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.wrap(fmt.Errorf("open run store %s: %w", s.redacted, err))
	}
	s.pool = pool
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, s.wrap(fmt.Errorf("open run store %s: %w", s.redacted, err))
	}
	s.worked.Store(true)
	return s, nil
}

// Redact returns the URL with its password replaced by xxxxx, for messages;
// a string that does not parse as a URL is reduced to its scheme.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i >= 0 {
			return rawURL[:i+3] + "…"
		}
		return "(unparsable store URL)"
	}
	return u.Redacted()
}

// Password returns the password a connection to rawURL would use, from
// the URL, PGPASSWORD, the service file or ~/.pgpass ("" when none or when
// rawURL does not parse), so that a caller can redact it from everything it
// prints, even when the URL itself holds none.
func Password(rawURL string) string {
	if !IsURL(rawURL) {
		return ""
	}
	cfg, err := pgconn.ParseConfig(rawURL)
	if err != nil {
		return urlPassword(rawURL)
	}
	return cfg.Password
}

func urlPassword(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// Path names the store in messages: its URL without the password.
func (s *Store) Path() string { return s.redacted }

// Close closes the connections. Leases this handle holds stay in the
// database until they expire, as when the process dies.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// LogFile returns the path of a run's local log (suffix is ".log" for
// what tools print, ".mcp.log" for what MCP servers print), creating the
// directory (0700) if needed. Logs are diagnostics of the host that ran
// the tools: nothing needed to continue a run is in them, so a run moves
// between hosts without them. Prune removes the logs of a pruned run from
// this directory only.
func (s *Store) LogFile(runID, suffix string) (string, error) {
	if s.logDir == "" {
		return "", fmt.Errorf("log of run %s: no log directory configured", runID)
	}
	if !runrow.FileSafe(runID) {
		return "", fmt.Errorf("log of run %q: not a run id", runID)
	}
	if err := os.MkdirAll(s.logDir, 0o700); err != nil {
		return "", fmt.Errorf("log of run %s: %w", runID, err)
	}
	return filepath.Join(s.logDir, runID+suffix), nil
}

// scrubbed is an error whose text had the password removed; Unwrap keeps
// errors.Is and errors.As working on the cause.
type scrubbed struct {
	msg   string
	cause error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.cause }

// wrap scrubs the password from err's text. Every error leaving the
// package goes through it. Passwords shorter than three characters are not
// searched for (they would mangle every message and protect nothing).
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	var ce *state.ConflictError
	if errors.As(err, &ce) && err == error(ce) {
		return err
	}
	if len(s.secret) < 3 || !strings.Contains(err.Error(), s.secret) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), s.secret, "xxxxx"), cause: err}
}

// sqlState is the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// retryable: a serialization failure or a deadlock; the transaction is
// rolled back and may be run again from the start.
func retryable(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01":
		return true
	}
	return false
}

// reconnectWindow bounds how long a handle retries a transaction whose
// connection was refused or lost before COMMIT: long enough for a server
// to restart or fail over; past it the error is the caller's.
const reconnectWindow = time.Minute

// connLost reports whether err says the connection to the server failed or
// was lost (refused, reset, closed, the server shutting down or starting
// up), rather than that the server refused a statement.
func connLost(err error) bool {
	if pgconn.SafeToRetry(err) {
		return true // failed before anything was sent
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P01-03: the server shut down,
		// crashed, or is starting up.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// reconnect decides whether a transaction that failed with err, its
// COMMIT not sent, is run again: its connection was lost, the handle
// worked before, and the window that began at *since (set on the first
// loss) is still open. It waits before the next attempt.
func (s *Store) reconnect(ctx context.Context, err error, since *time.Time, attempt int) bool {
	if ctx.Err() != nil || !s.worked.Load() || !connLost(err) {
		return false
	}
	if since.IsZero() {
		*since = time.Now()
	}
	if time.Since(*since) > reconnectWindow {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(min(10<<min(attempt, 6), 500)) * time.Millisecond):
		return true
	}
}

// inTx runs fn in a read-write transaction and commits it, running it all
// again after a serialization failure or a deadlock for as long as ctx
// allows, and after a connection lost before COMMIT was sent for up to
// reconnectWindow. fn must only touch tx and values it recomputes.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var lost time.Time
	for attempt := 0; ; attempt++ {
		committing, err := s.tryTx(ctx, fn)
		if err == nil {
			return nil
		}
		// A COMMIT that never left (the connection was found closed
		// first) did not commit either.
		if (!committing || pgconn.SafeToRetry(err)) && s.reconnect(ctx, err, &lost, attempt) {
			continue
		}
		if !retryable(err) {
			return err
		}
		pause := time.Duration(1+rand.IntN(5*min(attempt+1, 20))) * time.Millisecond
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", state.ErrBusy, err)
		case <-time.After(pause):
		}
	}
}

// tryTx runs fn in one transaction; committing reports that the error
// came from the COMMIT, whose fate is then unknown unless nothing was sent.
func (s *Store) tryTx(ctx context.Context, fn func(tx pgx.Tx) error) (committing bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return false, err
	}
	if s.beforeCommit != nil {
		if err := s.beforeCommit(ctx, tx); err != nil {
			return false, err
		}
	}
	return true, tx.Commit(ctx)
}

// readTx runs fn in a read-only REPEATABLE READ transaction: one snapshot
// for all of fn's queries. A read cut off by a lost connection is run
// again like a write (see inTx): it changed nothing.
func (s *Store) readTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var lost time.Time
	for attempt := 0; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
		if err == nil {
			return nil
		}
		if s.reconnect(ctx, err, &lost, attempt) {
			continue
		}
		if !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
}

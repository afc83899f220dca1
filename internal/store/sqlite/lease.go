package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/runrow"
)

// Every file of a run besides its rows lives beside the database, named by
// the run id, and Prune removes them with the run:
//
//	locks/RUN.lock     the kernel lock backing the run's lease
//	logs/RUN.log       what the run's tools printed
//	logs/RUN.mcp.log   what the run's MCP servers printed
const (
	locksDir = "locks"
	logsDir  = "logs"
)

// LogKind names one of a run's log files.
type LogKind string

// The log files of a run.
const (
	LogTools LogKind = ".log"
	LogMCP   LogKind = ".mcp.log"
)

// errLockHeld: another open file description holds the run's lock file.
var errLockHeld = errors.New("lock file held")

func (s *SQLite) runFile(dir, id, suffix string) string {
	return filepath.Join(filepath.Dir(s.path), dir, id+suffix)
}

// LogFile returns the path of a run's log of the given kind, creating the
// logs directory (0700) if needed. Prune deletes the file with the run.
func (s *SQLite) LogFile(runID string, kind LogKind) (string, error) {
	if !runrow.FileSafe(runID) {
		return "", fmt.Errorf("log of run %q: not a run id", runID)
	}
	p := s.runFile(logsDir, runID, string(kind))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("log of run %s: %w", runID, err)
	}
	return p, nil
}

// lock opens and locks (flock, exclusive, non-blocking) the lock file of a
// run; errLockHeld when another process, or another handle of this one,
// holds it. The kernel releases the lock when the process dies.
func (s *SQLite) lock(id string) (*os.File, error) {
	if !runrow.FileSafe(id) {
		return nil, fmt.Errorf("run id %q cannot name a lock file", id)
	}
	p := s.runFile(locksDir, id, ".lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("lock run %s: %w", id, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock run %s: %w", id, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLockHeld
		}
		return nil, fmt.Errorf("lock run %s: %w", id, err)
	}
	return f, nil
}

// lockedElsewhere reports whether a live process (or another handle) holds
// the run's lock file, without creating it.
func (s *SQLite) lockedElsewhere(id string) bool {
	if !runrow.FileSafe(id) {
		return false
	}
	f, err := os.OpenFile(s.runFile(locksDir, id, ".lock"), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}

func (s *SQLite) keep(id string, f *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.held[id]; old != nil {
		old.Close()
	}
	s.held[id] = f
}

func (s *SQLite) unkeep(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.held[id]; f != nil {
		f.Close()
		delete(s.held, id)
	}
}

// holds reports whether the stored lease cur is held by a living executor.
// The lease is backed by the lock file: its holder keeps the file locked
// for as long as it lives, and the kernel unlocks it when the process dies.
// So on this store a lease is held exactly while its lock file is locked,
// before and after its expiry (a SQLite store in WAL mode is only ever
// shared by processes of one host, so the lock file is authoritative).
func (s *SQLite) holds(id string, cur state.Lease) bool {
	if cur.Owner == "" {
		return false
	}
	s.mu.Lock()
	_, mine := s.held[id]
	s.mu.Unlock()
	return mine || s.lockedElsewhere(id)
}

// Acquire takes the lease on run id: first the run's lock file, then, in
// one transaction, the stored lease with a new epoch. A stored lease whose
// lock file was free belonged to a process that died: it is taken over at
// once, without waiting for its expiry.
func (s *SQLite) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (*state.Lease, error) {
	if owner == "" || ttl <= 0 {
		return nil, fmt.Errorf("acquire run %s: a lease needs an owner and a positive duration", id)
	}
	f, err := s.lock(id)
	if errors.Is(err, errLockHeld) {
		cur, lerr := s.storedLease(ctx, id)
		if lerr != nil {
			return nil, fmt.Errorf("acquire run %s: %w", id, lerr)
		}
		return nil, &state.HeldError{RunID: id, Holder: cur}
	}
	if err != nil {
		return nil, fmt.Errorf("acquire run %s: %w", id, err)
	}
	var l *state.Lease
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now().UTC()
		l = &state.Lease{Owner: owner, TTL: ttl, Expires: now.Add(ttl)}
		err := tx.QueryRowContext(ctx, `UPDATE runs SET lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires = ?
			WHERE id = ? RETURNING lease_epoch, revision`, owner, l.Expires.UnixNano(), id).Scan(&l.Epoch, &l.Revision)
		if errors.Is(err, sql.ErrNoRows) {
			return state.ErrNotFound
		}
		return dbErr(ctx, err)
	})
	if err != nil {
		if errors.Is(err, state.ErrNotFound) {
			// Leave no lock file for a run that does not exist.
			os.Remove(f.Name())
		}
		f.Close()
		return nil, fmt.Errorf("acquire run %s: %w", id, err)
	}
	s.keep(id, f)
	return l, nil
}

// storedLease reads a run's lease outside any write transaction.
func (s *SQLite) storedLease(ctx context.Context, id string) (state.Lease, error) {
	return readLease(ctx, s.db, id, nil)
}

// Renew extends l by l.TTL from now, provided it is still the run's lease.
func (s *SQLite) Renew(ctx context.Context, id string, l *state.Lease) error {
	if l == nil {
		return fmt.Errorf("renew run %s: no lease", id)
	}
	expires := s.now().UTC().Add(l.TTL)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET lease_expires = ?
			WHERE id = ? AND lease_owner = ? AND lease_epoch = ?`, expires.UnixNano(), id, l.Owner, l.Epoch)
		if err != nil {
			return dbErr(ctx, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(state.ErrLeaseLost, dbErr(ctx, err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("renew lease on run %s: %w", id, err)
	}
	l.Expires = expires
	return nil
}

// Release clears the stored lease if it is still l, then unlocks the lock
// file. A lease already lost, or a run already gone, is not an error.
//
// The clearing is written without an fsync of its own (inLazyTx): on this
// store the lock file decides who holds a run (holds), so the run is free
// the moment the lock file is unlocked whatever the row says, and a
// release that a power cut loses leaves what a holder that died after its
// last save leaves, a case every reader already handles. The run's own
// saves before it are on disk as always. That takes one fsync off every
// run a process drives (docs/benchmarks.md#start-up).
func (s *SQLite) Release(ctx context.Context, id string, l *state.Lease) error {
	defer s.unkeep(id)
	if l == nil {
		return nil
	}
	err := s.inLazyTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE runs SET lease_owner = NULL, lease_expires = 0
			WHERE id = ? AND lease_owner = ? AND lease_epoch = ?`, id, l.Owner, l.Epoch)
		return dbErr(ctx, err)
	})
	if err != nil {
		return fmt.Errorf("release lease on run %s: %w", id, err)
	}
	return nil
}

// Prune deletes exactly the runs List(f) would return (so Limit bounds it
// too) that nobody holds, with all their rows and files. It locks the lock
// file of each candidate first, so no executor can take one between the
// check and the delete; a candidate whose lock file is locked is reported
// as held and left alone. A zero Filter matches every run: the CLI insists
// on OlderThan.
func (s *SQLite) Prune(ctx context.Context, f state.Filter) (state.PruneReport, error) {
	rep := state.PruneReport{Deleted: []string{}, Held: []string{}}
	sums, err := s.List(ctx, f)
	if err != nil {
		return rep, fmt.Errorf("prune runs: %w", err)
	}
	locks := map[string]*os.File{}
	defer func() {
		for _, l := range locks {
			l.Close()
		}
	}()
	var ids []string
	for _, sum := range sums {
		lf, err := s.lock(sum.ID)
		if errors.Is(err, errLockHeld) {
			rep.Held = append(rep.Held, sum.ID)
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("prune runs: %w", err)
		}
		locks[sum.ID] = lf
		ids = append(ids, sum.ID)
	}
	var deleted []string
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		deleted = deleted[:0]
		for _, id := range ids {
			res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, id)
			if err != nil {
				return dbErr(ctx, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return dbErr(ctx, err)
			} else if n == 1 {
				deleted = append(deleted, id)
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("prune runs: %w", err)
	}
	// The rows are gone: remove the files, the lock file last and while
	// still locked (an executor that opens it afterwards finds no run).
	var ferr error
	for _, id := range deleted {
		for _, p := range []string{s.runFile(logsDir, id, string(LogTools)), s.runFile(logsDir, id, string(LogMCP)), s.runFile(locksDir, id, ".lock")} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				ferr = errors.Join(ferr, err)
			}
		}
	}
	rep.Deleted = append(rep.Deleted, deleted...)
	slices.Sort(rep.Deleted)
	slices.Sort(rep.Held)
	if ferr != nil {
		return rep, fmt.Errorf("prune runs: rows deleted, but some files remain: %w", ferr)
	}
	return rep, nil
}

package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/runrow"
)

// nullString is a header column that may be SQL NULL as database/sql
// binds it.
func nullString(s string, ok bool) sql.NullString { return sql.NullString{String: s, Valid: ok} }

// Create inserts st at revision 1 with all its messages, provider items and
// journal entries, in one transaction. Zero CreatedAt/UpdatedAt are set to
// now. On success st.Revision is 1; a stored id fails with ErrRunExists.
func (s *SQLite) Create(ctx context.Context, st *state.RunState) error {
	if st == nil || st.ID == "" {
		return errors.New("create run: missing run id")
	}
	now := s.now().UTC()
	created, updated := st.CreatedAt, st.UpdatedAt
	if created.IsZero() {
		created = now
	}
	if updated.IsZero() {
		updated = now
	}
	h, err := runrow.Encode(st)
	if err != nil {
		return fmt.Errorf("create run %s: %w", st.ID, err)
	}
	createdNs, err := runrow.Nanos(created)
	if err != nil {
		return fmt.Errorf("create run %s: created_at: %w", st.ID, err)
	}
	updatedNs, err := runrow.Nanos(updated)
	if err != nil {
		return fmt.Errorf("create run %s: updated_at: %w", st.ID, err)
	}

	if err := s.guard(ctx, false); err != nil {
		return fmt.Errorf("create run %s: %w", st.ID, err)
	}
	var (
		lease *state.Lease
		lock  *os.File
	)
	if l := st.Lease; l != nil && l.Owner != "" && l.TTL > 0 {
		// Lock first, as Acquire does: the lock file of a run that does
		// not exist yet is free unless someone else creates it now.
		if lock, err = s.lock(st.ID); err != nil {
			return fmt.Errorf("create run %s: %w", st.ID, err)
		}
		lease = &state.Lease{Owner: l.Owner, Epoch: 1, TTL: l.TTL, Expires: now.Add(l.TTL)}
	}
	var owner sql.NullString
	var expires int64
	if lease != nil {
		owner = sql.NullString{String: lease.Owner, Valid: true}
		expires = lease.Expires.UnixNano()
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs
			(id, revision, status, agent, file, created_at, updated_at, config, task, usage, output, error,
			 lease_owner, lease_epoch, lease_expires, source_hash, runnable, wake_at)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			st.ID, h.Status, h.Agent, h.File, createdNs, updatedNs, h.Config, h.Task, h.Usage,
			nullString(h.Output, h.HasOutput), nullString(h.Error, h.HasError),
			owner, boolInt(lease != nil), expires, h.SourceHash, boolInt(h.Runnable), wakeAt(h))
		if err != nil {
			if isConstraint(err) {
				return ErrRunExists
			}
			return dbErr(ctx, err)
		}
		return s.writeRows(ctx, tx, st.ID, state.Delta{
			Messages:      st.Messages,
			ProviderItems: st.ProviderItems,
			Journal:       st.Journal,
		})
	})
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return fmt.Errorf("create run %s: %w", st.ID, err)
	}
	if lock != nil {
		s.keep(st.ID, lock)
		st.Lease = lease
	}
	s.saved.Remember(st.ID, 1, h)
	st.Revision = 1
	st.CreatedAt = runrow.Time(createdNs)
	st.UpdatedAt = runrow.Time(updatedNs)
	return nil
}

// wakeAt is the wake_at column of h: its Unix nanoseconds, or NULL.
func wakeAt(h runrow.Header) sql.NullInt64 {
	return sql.NullInt64{Int64: h.WakeAt, Valid: h.HasWakeAt}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Load reads a whole run in one read transaction (a consistent snapshot, even
// while another process saves it): messages and provider items ordered by
// seq, journal entries by seq then call id. A missing run is
// state.ErrNotFound.
func (s *SQLite) Load(ctx context.Context, id string) (*state.RunState, error) {
	return s.readRun(ctx, id, func(tx *sql.Tx) (*state.RunState, error) { return loadRun(ctx, tx, id) })
}

// LoadForDrive reads run id as Load does, with provider items that carry
// only their Seq and the completed journal entries of earlier replies as
// stubs (state.DriveLoader): the items' seqs come from the primary key's
// index alone, and the stubs from the journal's index on (run_id, seq,
// call_id, stage, turn), so two thirds of a long run's pages are never
// read nor decoded.
func (s *SQLite) LoadForDrive(ctx context.Context, id string) (*state.RunState, error) {
	return s.readRun(ctx, id, func(tx *sql.Tx) (*state.RunState, error) { return loadRunRows(ctx, tx, id, 0, true) })
}

// LoadTail reads run id as Load does, with only the last n messages,
// provider items and journal entries and every journal entry that is not
// completed (state.TailLoader), in one read transaction; n <= 0 is Load.
func (s *SQLite) LoadTail(ctx context.Context, id string, n int) (*state.RunState, state.Omitted, error) {
	var om state.Omitted
	if n <= 0 {
		st, err := s.Load(ctx, id)
		return st, om, err
	}
	st, err := s.readRun(ctx, id, func(tx *sql.Tx) (*state.RunState, error) {
		st, err := loadRunRows(ctx, tx, id, n, false)
		if err != nil {
			return nil, err
		}
		var msgs, items, journal int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM messages WHERE run_id = ?),
		(SELECT count(*) FROM provider_items WHERE run_id = ?), (SELECT count(*) FROM journal WHERE run_id = ?)`, id, id, id).
			Scan(&msgs, &items, &journal); err != nil {
			return nil, dbErr(ctx, err)
		}
		om = state.Omitted{Messages: msgs - len(st.Messages), ProviderItems: items - len(st.ProviderItems), Journal: journal - len(st.Journal)}
		return st, nil
	})
	return st, om, err
}

// readRun runs load in one read transaction (readMapped) and adds the
// run's holder, so that every way of reading a run sees one snapshot and
// reports who drives it.
func (s *SQLite) readRun(ctx context.Context, id string, load func(*sql.Tx) (*state.RunState, error)) (st *state.RunState, err error) {
	err = s.readMapped(ctx, func(tx *sql.Tx) error {
		if st, err = load(tx); err != nil {
			return err
		}
		cur, err := readLease(ctx, tx, id, nil)
		if err != nil {
			return err
		}
		if s.holds(id, cur) {
			st.Holder = &cur
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", id, err)
	}
	return st, nil
}

func loadRun(ctx context.Context, q querier, id string) (*state.RunState, error) {
	return loadRunRows(ctx, q, id, 0, false)
}

// LoadHeader reads run id's header alone, with its holder, and none of
// its rows (state.HeaderLoader): what a resume needs before it takes the
// run (its deadline) costs the same for a run of any length.
func (s *SQLite) LoadHeader(ctx context.Context, id string) (*state.RunState, error) {
	return s.readRun(ctx, id, func(tx *sql.Tx) (*state.RunState, error) { return loadHeader(ctx, tx, id) })
}

// loadHeader reads the header columns of run id into a RunState with
// empty rows.
func loadHeader(ctx context.Context, q querier, id string) (*state.RunState, error) {
	st := &state.RunState{
		ID:            id,
		Messages:      []state.Message{},
		ProviderItems: []state.ProviderItem{},
		Journal:       []state.JournalEntry{},
	}
	var (
		status, config, usage string
		task                  string
		output, runErr        sql.NullString
		created, updated      int64
	)
	err := q.QueryRowContext(ctx, `SELECT revision, status, created_at, updated_at, config, task, usage, output, error
		FROM runs WHERE id = ?`, id).
		Scan(&st.Revision, &status, &created, &updated, &config, &task, &usage, &output, &runErr)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	st.CreatedAt = runrow.Time(created)
	st.UpdatedAt = runrow.Time(updated)
	h := runrow.Header{Status: status, Config: config, Task: task, Usage: usage,
		Output: output.String, HasOutput: output.Valid, Error: runErr.String, HasError: runErr.Valid}
	if err := h.Decode(st); err != nil {
		return nil, err
	}
	return st, nil
}

// The child-row queries of a whole run and of its tail (?2: how many rows).
// The tail of the journal keeps every entry not completed, found by its
// stage in the body.
const (
	messagesAll  = `SELECT seq, body FROM messages WHERE run_id = ?1 ORDER BY seq`
	messagesTail = `SELECT seq, body FROM (SELECT seq, body FROM messages WHERE run_id = ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq`
	itemsAll     = `SELECT seq, body FROM provider_items WHERE run_id = ?1 ORDER BY seq`
	itemsTail    = `SELECT seq, body FROM (SELECT seq, body FROM provider_items WHERE run_id = ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq`
	// The journal is read in seq order alone, which its index on
	// (run_id, seq) gives without sorting the bodies; sortJournal puts
	// entries of one seq (none in a run the runtime wrote) in call id
	// order afterwards.
	journalAll  = `SELECT seq, call_id, body FROM journal WHERE run_id = ?1 ORDER BY seq`
	itemSeqs    = `SELECT seq FROM provider_items WHERE run_id = ?1 ORDER BY seq`
	journalTail = `SELECT seq, call_id, body FROM journal WHERE run_id = ?1 AND (call_id IN (SELECT call_id FROM journal WHERE run_id = ?1 ORDER BY seq DESC, call_id DESC LIMIT ?2) OR stage <> 'completed') ORDER BY seq, call_id`
	// journalDrive reads every entry's seq, call id, stage and turn from
	// the index journal_drive, and the body only of an entry not
	// completed or of the latest turn: SQLite seeks the table row (a
	// deferred seek) only when the CASE reads the body, so the bodies of
	// earlier replies' completed calls are never read.
	journalDrive = `SELECT seq, call_id, stage, turn,
		CASE WHEN stage <> 'completed' OR turn >= (SELECT max(turn) FROM journal WHERE run_id = ?1) THEN body END
		FROM journal WHERE run_id = ?1 ORDER BY seq`
	// rowCounts estimates the rows of each child table from the largest
	// seq, for the capacity of the slices (a hint: a gap only wastes).
	rowCounts = `SELECT (SELECT coalesce(max(seq) + 1, 0) FROM messages WHERE run_id = ?1),
		(SELECT coalesce(max(seq) + 1, 0) FROM provider_items WHERE run_id = ?1),
		(SELECT coalesce(max(seq) + 1, 0) FROM journal WHERE run_id = ?1)`
)

// driveRoom is the spare capacity, in rows, of each slice a drive loads.
const driveRoom = 16

// loadRunRows reads a run, with only the tail of its rows when tail > 0
// and with provider items reduced to their seqs when seqsOnly.
func loadRunRows(ctx context.Context, q querier, id string, tail int, seqsOnly bool) (*state.RunState, error) {
	st, err := loadHeader(ctx, q, id)
	if err != nil {
		return nil, err
	}

	mq, iq, jq := messagesAll, itemsAll, journalAll
	if tail > 0 {
		mq, iq, jq = messagesTail, itemsTail, journalTail
	}
	args := []any{id}
	if tail > 0 {
		args = append(args, tail)
	}
	// Size the slices once: a run's seqs count from 0, so the largest
	// seq of each table (read from its primary key, not by a scan) says
	// how many rows follow. Growing by doubling instead copied a long
	// run's journal about twice over.
	var nm, ni, nj int
	if err := q.QueryRowContext(ctx, rowCounts, id).Scan(&nm, &ni, &nj); err != nil {
		return nil, dbErr(ctx, err)
	}
	if tail > 0 {
		nm, ni, nj = min(nm, tail), min(ni, tail), min(nj, tail)
	}
	room := 0
	if seqsOnly {
		// A drive appends to all three at once: room for a few rounds
		// keeps its first append from copying the whole history into
		// fresh memory.
		room = driveRoom
	}
	st.Messages = make([]state.Message, 0, nm+room)
	st.ProviderItems = make([]state.ProviderItem, 0, ni+room)
	st.Journal = make([]state.JournalEntry, 0, nj+room)
	err = eachRow(ctx, q, mq, args,
		func(seq int, _ string, body []byte) error {
			m, err := runrow.Message(seq, body)
			st.Messages = append(st.Messages, m)
			return err
		})
	if err != nil {
		return nil, err
	}
	if seqsOnly {
		err = itemStubs(ctx, q, id, ni, func(seq int) {
			st.ProviderItems = append(st.ProviderItems, state.ProviderItem{Seq: seq})
		})
	} else {
		err = eachRow(ctx, q, iq, args,
			func(seq int, _ string, body []byte) error {
				it, err := runrow.ProviderItem(seq, body)
				st.ProviderItems = append(st.ProviderItems, it)
				return err
			})
	}
	if err != nil {
		return nil, err
	}
	if seqsOnly {
		err = eachDriveEntry(ctx, q, id, func(e state.JournalEntry) { st.Journal = append(st.Journal, e) })
	} else {
		err = eachRow(ctx, q, jq, args,
			func(seq int, callID string, body []byte) error {
				e, err := runrow.JournalEntry(seq, callID, body)
				st.Journal = append(st.Journal, e)
				return err
			})
	}
	if err != nil {
		return nil, err
	}
	sortJournal(st.Journal)
	return st, nil
}

// sortJournal orders entries of equal seq by call id, the journal's order
// (the queries order by seq alone). It leaves a journal already in order,
// as every journal the runtime writes is, without sorting.
func sortJournal(j []state.JournalEntry) {
	for i := 1; i < len(j); i++ {
		if j[i].Seq < j[i-1].Seq || j[i].Seq == j[i-1].Seq && j[i].CallID < j[i-1].CallID {
			slices.SortStableFunc(j, func(a, b state.JournalEntry) int {
				return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.CallID, b.CallID))
			})
			return
		}
	}
}

// eachDriveEntry reads the journal of run id for a drive (journalDrive):
// whole entries where the body was read, stubs elsewhere.
func eachDriveEntry(ctx context.Context, q querier, id string, fn func(state.JournalEntry)) error {
	rows, err := q.QueryContext(ctx, journalDrive, id)
	if err != nil {
		return dbErr(ctx, err)
	}
	defer rows.Close()
	var (
		seq, turn     int64 // not int: database/sql converts an int64 to an int through a string
		callID, stage string
		body          sql.RawBytes // valid until Next; decoded at once
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &callID, &stage, &turn, &body); err != nil {
			return dbErr(ctx, err)
		}
		if body == nil {
			fn(state.JournalEntry{CallID: callID, Seq: int(seq), Turn: int(turn), Stage: state.Stage(stage), Stub: true})
			continue
		}
		e, err := runrow.JournalEntry(int(seq), callID, body)
		if err != nil {
			return err
		}
		fn(e)
	}
	if err := rows.Err(); err != nil {
		return dbErr(ctx, err)
	}
	return nil
}

// itemStubs gives the seqs of run id's provider items, n being the
// largest plus one. When the items number n, their seqs (distinct, none
// above n-1) are 0..n-1 and are given without reading them one by one;
// else they are read from the primary key's index.
func itemStubs(ctx context.Context, q querier, id string, n int, fn func(seq int)) error {
	var count int64
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM provider_items WHERE run_id = ?`, id).Scan(&count); err != nil {
		return dbErr(ctx, err)
	}
	if count == int64(n) {
		for seq := range n {
			fn(seq)
		}
		return nil
	}
	return eachSeq(ctx, q, itemSeqs, []any{id}, fn)
}

// eachSeq runs a query whose one column is seq.
func eachSeq(ctx context.Context, q querier, query string, args []any, fn func(seq int)) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return dbErr(ctx, err)
	}
	defer rows.Close()
	var seq int64 // not int: database/sql converts an int64 to an int through a string
	for rows.Next() {
		if err := rows.Scan(&seq); err != nil {
			return dbErr(ctx, err)
		}
		fn(int(seq))
	}
	if err := rows.Err(); err != nil {
		return dbErr(ctx, err)
	}
	return nil
}

// eachRow runs a child-table query whose columns are seq, [call_id,] body.
func eachRow(ctx context.Context, q querier, query string, args []any, fn func(seq int, callID string, body []byte) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return dbErr(ctx, err)
	}
	defer rows.Close()
	withCallID := strings.Contains(query, "call_id")
	var (
		seq    int64 // not int: database/sql converts an int64 to an int through a string
		callID string
		body   sql.RawBytes // valid until Next; fn decodes it at once, so one buffer serves every row
	)
	for rows.Next() {
		if withCallID {
			err = rows.Scan(&seq, &callID, &body)
		} else {
			err = rows.Scan(&seq, &body)
		}
		if err != nil {
			return dbErr(ctx, err)
		}
		if err := fn(int(seq), callID, body); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return dbErr(ctx, err)
	}
	return nil
}

// Save writes st's header and the rows of d in one transaction, provided the
// stored revision still equals st.Revision. On success st.Revision is
// incremented and st.UpdatedAt set to the commit time; on a stale revision
// nothing is written and the result is a *state.ConflictError (not wrapped).
// When Save returns nil the write is durable.
func (s *SQLite) Save(ctx context.Context, st *state.RunState, d state.Delta) error {
	if st == nil || st.ID == "" {
		return errors.New("save run: missing run id")
	}
	// The runtime asks for the whole file's check (d.Verify) on the save
	// that stops a run after a tool that could reach the file ran; every
	// save checks the file's identity.
	if err := s.guard(ctx, d.Verify); err != nil {
		return fmt.Errorf("save run %s: %w", st.ID, err)
	}
	now := s.now().UTC()
	var written runrow.Header
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		written, err = s.writeRun(ctx, tx, st, st.Revision, now, d)
		return err
	})
	if err != nil {
		var ce *state.ConflictError
		if errors.As(err, &ce) {
			return ce
		}
		return fmt.Errorf("save run %s: %w", st.ID, err)
	}
	s.saved.Remember(st.ID, st.Revision+1, written)
	st.Revision++
	st.UpdatedAt = now
	return nil
}

// Update loads run id, calls fn with it and writes fn's changes, all in one
// IMMEDIATE transaction, so nothing can write the run between the read and
// the write. fn must change st and describe the new rows in the Delta it
// returns, as for Save; it must not call the store. An error from fn rolls
// back and is returned unchanged.
func (s *SQLite) Update(ctx context.Context, id string, fn func(st *state.RunState) (state.Delta, error)) (*state.RunState, error) {
	if fn == nil {
		return nil, fmt.Errorf("update run %s: nil function", id)
	}
	if err := s.guard(ctx, false); err != nil {
		return nil, fmt.Errorf("update run %s: %w", id, err)
	}
	var (
		st      *state.RunState
		fnErr   error
		now     time.Time
		readRev int64
		written runrow.Header
	)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if st, err = loadRun(ctx, tx, id); err != nil {
			return err
		}
		readRev = st.Revision
		d, err := fn(st)
		if err != nil {
			fnErr = err
			return err
		}
		st.ID = id
		st.Lease = nil // an operator's write: refused while someone holds the run
		now = s.now().UTC()
		written, err = s.writeRun(ctx, tx, st, readRev, now, d)
		return err
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		var ce *state.ConflictError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, fmt.Errorf("update run %s: %w", id, err)
	}
	s.saved.Remember(id, readRev+1, written)
	st.Revision = readRev + 1
	st.UpdatedAt = now
	return st, nil
}

// inTx runs fn in a read-write (BEGIN IMMEDIATE) transaction and commits it
// if fn succeeds. While the database is locked by other writers it tries
// again, for as long as ctx allows: a context without deadline waits until
// the store is free, one with a deadline fails with ErrLocked when it
// passes. fn may therefore run more than once and must only touch tx and
// values it recomputes.
func (s *SQLite) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.retryTx(ctx, false, fn)
}

// inLazyTx is inTx for a write that need not be on disk when it returns:
// its commit is not fsynced (synchronous=NORMAL for this transaction) and
// reaches the disk with the next commit of any process, or a checkpoint.
// A kill -9 loses nothing (the write is in the kernel's page cache); a
// power cut may lose it, and the store is then as it was before it, still
// consistent. Only Release uses it: see there why losing one is harmless.
func (s *SQLite) inLazyTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.retryTx(ctx, true, fn)
}

// retryTx runs fn in a transaction (tryLazyTx if lazy, else tryTx) until
// it succeeds, fails with something other than a locked database, or ctx
// ends (see inTx). The two are called directly, not through a function
// value, so that fn and what it captures stay on the caller's stack.
func (s *SQLite) retryTx(ctx context.Context, lazy bool, fn func(tx *sql.Tx) error) error {
	busy := false
	for {
		var err error
		if lazy {
			err = s.tryLazyTx(ctx, fn)
		} else {
			err = s.tryTx(ctx, fn)
		}
		if busy && ctx.Err() != nil && !errors.Is(err, ErrLocked) {
			err = fmt.Errorf("%w: %w", ErrLocked, err)
		}
		if err == nil || !errors.Is(err, ErrLocked) || ctx.Err() != nil {
			return err
		}
		busy = true
		if s.onBusy != nil {
			s.onBusy()
		}
		// Another writer held the lock for a whole busy timeout: back
		// off a little (jittered, so waiting processes do not all
		// retry at once) and try again.
		pause := time.Duration(1+rand.IntN(20)) * time.Millisecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

func (s *SQLite) tryTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	s.prepare(ctx) // before BeginTx, on the idle connection the transaction takes
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(ctx, err)
	}
	return runTx(ctx, tx, fn)
}

// runTx runs fn in tx and commits, or rolls back when fn fails.
func runTx(ctx context.Context, tx *sql.Tx, fn func(tx *sql.Tx) error) error {
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return dbErr(ctx, err)
	}
	return nil
}

// tryLazyTx is tryTx on a connection of its own whose synchronous setting
// is NORMAL for this one transaction, then FULL again; a connection whose
// setting cannot be restored is closed rather than returned to the pool.
func (s *SQLite) tryLazyTx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return dbErr(ctx, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return dbErr(ctx, err)
	}
	defer func() {
		if _, rerr := c.ExecContext(context.Background(), "PRAGMA synchronous = FULL"); rerr != nil {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
			err = errors.Join(err, dbErr(ctx, rerr))
		}
	}()
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(ctx, err)
	}
	return runTx(ctx, tx, fn)
}

// The statements of a save, prepared by Open.
const (
	sqlInsertMessage = `INSERT INTO messages (run_id, seq, body) VALUES (?, ?, ?)`
	sqlUpsertItem    = `INSERT INTO provider_items (run_id, seq, body) VALUES (?, ?, ?)
			ON CONFLICT (run_id, seq) DO UPDATE SET body = excluded.body`
	sqlUpsertEntry = `INSERT INTO journal (run_id, call_id, seq, stage, turn, body) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id, call_id) DO UPDATE SET seq = excluded.seq, stage = excluded.stage, turn = excluded.turn, body = excluded.body`
	// The header update sets every column, or, when only the usage
	// changed (most steps), only usage and updated_at: the indexes on
	// status and agent are then left alone. Each comes fenced by the
	// caller's lease or by the absence of a live one.
	sqlSetAll = `UPDATE runs SET
			revision = revision + 1, updated_at = ?, usage = ?, status = ?, agent = ?, file = ?,
			config = ?, task = ?, output = ?, error = ?, source_hash = ?, runnable = ?, wake_at = ?
		WHERE id = ? AND revision = ? AND `
	sqlSetUsage = `UPDATE runs SET revision = revision + 1, updated_at = ?, usage = ?
		WHERE id = ? AND revision = ? AND `
	fenceLease = `(lease_owner = ? AND lease_epoch = ?)`
	fenceFree  = `(lease_owner IS NULL OR lease_expires <= ?)`
)

// prepare prepares the statements of a save (s.stmts) if no write of this
// handle did yet. A failure leaves them unprepared, to be tried again by
// the next write: exec runs the SQL unprepared meanwhile, and reports the
// error if the SQL itself is at fault.
func (s *SQLite) prepare(ctx context.Context) {
	if s.stmts.Load() != nil {
		return
	}
	s.prepareMu.Lock()
	defer s.prepareMu.Unlock()
	if s.stmts.Load() != nil {
		return
	}
	m := map[string]*sql.Stmt{}
	for _, q := range []string{sqlInsertMessage, sqlUpsertItem, sqlUpsertEntry,
		sqlSetAll + fenceLease, sqlSetAll + fenceFree, sqlSetUsage + fenceLease, sqlSetUsage + fenceFree} {
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			for _, p := range m {
				p.Close()
			}
			return
		}
		m[q] = st
	}
	s.stmts.Store(&m)
}

// exec runs one of the prepared statements in tx. The statement is
// prepared on tx's connection the first time that connection runs it and
// reused after.
func (s *SQLite) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	var p *sql.Stmt
	if m := s.stmts.Load(); m != nil {
		p = (*m)[query]
	}
	if p == nil {
		return tx.ExecContext(ctx, query, args...)
	}
	return tx.StmtContext(ctx, p).ExecContext(ctx, args...)
}

// writeRun is the compare-and-set: the header update matches only the
// revision that was read and, fenced by st.Lease, only that lease (without
// one, only a run no live lease holds); then the delta's rows. When this
// handle wrote the header at readRev and only the usage changed since,
// only usage and updated_at are written.
func (s *SQLite) writeRun(ctx context.Context, tx *sql.Tx, st *state.RunState, readRev int64, now time.Time, d state.Delta) (runrow.Header, error) {
	h, err := runrow.Encode(st)
	if err != nil {
		return runrow.Header{}, err
	}
	fence, fargs := fenceFree, []any{now.UnixNano()}
	if l := st.Lease; l != nil {
		fence, fargs = fenceLease, []any{l.Owner, l.Epoch}
	}
	var res sql.Result
	if s.saved.UsageOnly(st.ID, readRev, h) {
		res, err = s.exec(ctx, tx, sqlSetUsage+fence, append([]any{now.UnixNano(), h.Usage, st.ID, readRev}, fargs...)...)
	} else {
		res, err = s.exec(ctx, tx, sqlSetAll+fence, append([]any{now.UnixNano(), h.Usage, h.Status, h.Agent, h.File,
			h.Config, h.Task, nullString(h.Output, h.HasOutput), nullString(h.Error, h.HasError), h.SourceHash, boolInt(h.Runnable), wakeAt(h),
			st.ID, readRev}, fargs...)...)
	}
	if err != nil {
		return runrow.Header{}, dbErr(ctx, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return runrow.Header{}, dbErr(ctx, err)
	}
	if n == 0 {
		return runrow.Header{}, whyNotWritten(ctx, tx, st, readRev)
	}
	return h, s.writeRows(ctx, tx, st.ID, d)
}

// whyNotWritten names the condition of writeRun that failed.
func whyNotWritten(ctx context.Context, q querier, st *state.RunState, readRev int64) error {
	var actual int64
	cur, err := readLease(ctx, q, st.ID, &actual)
	if err != nil {
		return err
	}
	if actual != readRev {
		return &state.ConflictError{RunID: st.ID, Expected: readRev, Actual: actual}
	}
	if l := st.Lease; l != nil {
		if cur.Owner == "" {
			return fmt.Errorf("%w: run %s was released or taken over (this executor held epoch %d)", state.ErrLeaseLost, st.ID, l.Epoch)
		}
		return fmt.Errorf("%w: run %s is now held by %s at epoch %d (this executor held epoch %d)", state.ErrLeaseLost, st.ID, cur.Owner, cur.Epoch, l.Epoch)
	}
	return &state.HeldError{RunID: st.ID, Holder: cur}
}

// readLease reads the stored lease of a run (Owner empty when free) and, if
// rev is not nil, its revision; state.ErrNotFound when there is no run.
func readLease(ctx context.Context, q querier, id string, rev *int64) (state.Lease, error) {
	var (
		l       state.Lease
		owner   sql.NullString
		expires int64
		r       int64
	)
	err := q.QueryRowContext(ctx, `SELECT revision, lease_owner, lease_epoch, lease_expires FROM runs WHERE id = ?`, id).
		Scan(&r, &owner, &l.Epoch, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return l, state.ErrNotFound
	}
	if err != nil {
		return l, dbErr(ctx, err)
	}
	if rev != nil {
		*rev = r
	}
	if owner.Valid {
		l.Owner = owner.String
		l.Expires = runrow.Time(expires)
	}
	return l, nil
}

// writeRows appends messages and upserts provider items (by seq) and journal
// entries (by call id).
func (s *SQLite) writeRows(ctx context.Context, tx *sql.Tx, id string, d state.Delta) error {
	for i := range d.Messages {
		m := &d.Messages[i]
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode message %d: %w", m.Seq, err)
		}
		if _, err := s.exec(ctx, tx, sqlInsertMessage, id, m.Seq, string(b)); err != nil {
			if isConstraint(err) {
				return fmt.Errorf("append message %d: seq already stored (messages are append-only): %w", m.Seq, err)
			}
			return fmt.Errorf("append message %d: %w", m.Seq, dbErr(ctx, err))
		}
	}
	for i := range d.ProviderItems {
		it := &d.ProviderItems[i]
		b, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("encode provider item %d: %w", it.Seq, err)
		}
		if _, err := s.exec(ctx, tx, sqlUpsertItem, id, it.Seq, string(b)); err != nil {
			return fmt.Errorf("write provider item %d: %w", it.Seq, dbErr(ctx, err))
		}
	}
	for i := range d.Journal {
		e := &d.Journal[i]
		if e.CallID == "" {
			return fmt.Errorf("write journal entry %d: empty call id", e.Seq)
		}
		if e.Stub {
			return fmt.Errorf("write journal entry %s: it was loaded without its body and would replace the stored one", e.CallID)
		}
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode journal entry %s: %w", e.CallID, err)
		}
		if _, err := s.exec(ctx, tx, sqlUpsertEntry, id, e.CallID, e.Seq, string(e.Stage), e.Turn, string(b)); err != nil {
			return fmt.Errorf("write journal entry %s: %w", e.CallID, dbErr(ctx, err))
		}
	}
	return nil
}

// where builds the WHERE clause of a filter; now anchors OlderThan.
func where(f state.Filter, now time.Time) (string, []any) {
	var (
		conds []string
		args  []any
	)
	if f.Status != "" {
		conds = append(conds, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.Agent != "" {
		conds = append(conds, "agent = ?")
		args = append(args, f.Agent)
	}
	if f.OlderThan > 0 {
		conds = append(conds, "updated_at < ?")
		args = append(args, now.Add(-f.OlderThan).UnixNano())
	}
	if f.After != nil {
		// A row value: the indexes on (…, created_at, id) serve it as a
		// range, so a page costs its rows whatever its position.
		conds = append(conds, "(created_at, id) < (?, ?)")
		args = append(args, f.After.CreatedAt.UnixNano(), f.After.ID)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// limit is SQLite's LIMIT argument: -1 means none.
func limit(f state.Filter) int {
	if f.Limit > 0 {
		return f.Limit
	}
	return -1
}

// List returns the runs matching f, newest first (created_at, then id,
// descending), at most f.Limit of them and only those after f.After; a
// zero Filter lists every run.
// CountByStatus counts the runs by status in one query over the status
// index (state.StatusCounter).
func (s *SQLite) CountByStatus(ctx context.Context) (map[state.Status]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, count(*) FROM runs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", dbErr(ctx, err))
	}
	defer rows.Close()
	out := map[state.Status]int{}
	for rows.Next() {
		var (
			status string
			n      int
		)
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("count runs: %w", dbErr(ctx, err))
		}
		out[state.Status(status)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count runs: %w", dbErr(ctx, err))
	}
	return out, nil
}

func (s *SQLite) List(ctx context.Context, f state.Filter) ([]state.Summary, error) {
	w, args := where(f, s.now())
	rows, err := s.db.QueryContext(ctx, `SELECT `+runrow.SummaryColumns+`
		FROM runs`+w+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit(f))...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", dbErr(ctx, err))
	}
	defer rows.Close()
	out := []state.Summary{}
	for rows.Next() {
		sum, err := runrow.ScanSummary(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", dbErr(ctx, err))
		}
		out = append(out, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", dbErr(ctx, err))
	}
	return out, nil
}

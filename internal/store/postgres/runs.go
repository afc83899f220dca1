package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/store/runrow"
)

// nowNanos is the database clock as Unix nanoseconds (exact: extract
// returns numeric on PostgreSQL 14 and later).
const nowNanos = `(extract(epoch from now())::numeric * 1000000000)::bigint`

// live is the condition "a live lease holds the run".
const live = `(lease_owner IS NOT NULL AND lease_expires > now())`

// nanosOrNil stores a caller's time as Unix nanoseconds; zero means "the
// database's now".
func nanosOrNil(t time.Time) (*int64, error) {
	if t.IsZero() {
		return nil, nil
	}
	n, err := runrow.Nanos(t)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// columns gives the header columns that may be NULL as pgx binds them:
// task as bytes (bytea), output as bytes, error as a nullable string.
func columns(h runrow.Header) (task, output []byte, runErr *string) {
	task = []byte(h.Task)
	if h.HasOutput {
		output = []byte(h.Output)
	}
	if h.HasError {
		e := h.Error
		runErr = &e
	}
	return task, output, runErr
}

// wakeAt is the wake_at column of h (timestamptz), or NULL.
func wakeAt(h runrow.Header) *time.Time {
	if !h.HasWakeAt {
		return nil
	}
	t := runrow.Time(h.WakeAt)
	return &t
}

func micros(d time.Duration) int64 {
	if us := d.Microseconds(); us > 0 {
		return us
	}
	return 1
}

// Create inserts st at revision 1 with all its rows in one transaction.
// Zero CreatedAt/UpdatedAt are set to the database's now. A run created
// with st.Lease (Owner and TTL) is held by it at epoch 1 from its first
// revision. An id that is stored already fails with an error wrapping
// state.ErrExists, and nothing is written.
func (s *Store) Create(ctx context.Context, st *state.RunState) error {
	if st == nil || st.ID == "" {
		return errors.New("create run: missing run id")
	}
	h, err := runrow.Encode(st)
	if err != nil {
		return fmt.Errorf("create run %s: %w", st.ID, err)
	}
	task, output, runErr := columns(h)
	created, err := nanosOrNil(st.CreatedAt)
	if err != nil {
		return fmt.Errorf("create run %s: created_at: %w", st.ID, err)
	}
	updated, err := nanosOrNil(st.UpdatedAt)
	if err != nil {
		return fmt.Errorf("create run %s: updated_at: %w", st.ID, err)
	}
	var (
		owner *string
		ttl   int64
		lease *state.Lease
	)
	if l := st.Lease; l != nil && l.Owner != "" && l.TTL > 0 {
		owner, ttl = &l.Owner, micros(l.TTL)
		lease = &state.Lease{Owner: l.Owner, Epoch: 1, TTL: l.TTL}
	}
	var c, u int64
	var expires *time.Time
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO nexa_runs
			(id, revision, status, agent, file, created_at, updated_at, config, task, usage, output, error,
			 lease_owner, lease_epoch, lease_expires, source_hash, runnable, wake_at)
			VALUES ($1, 1, $2, $3, $4, coalesce($5, `+nowNanos+`), coalesce($6, `+nowNanos+`), $7, $8, $9, $10, $11,
			 $12::text, CASE WHEN $12::text IS NULL THEN 0 ELSE 1 END,
			 CASE WHEN $12::text IS NULL THEN NULL ELSE now() + $13::bigint * interval '1 microsecond' END, $14, $15, $16)
			ON CONFLICT (id) DO NOTHING
			RETURNING created_at, updated_at, lease_expires`,
			st.ID, h.Status, h.Agent, h.File, created, updated, h.Config, task, h.Usage, output, runErr,
			owner, ttl, h.SourceHash, h.Runnable, wakeAt(h)).Scan(&c, &u, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", state.ErrExists, st.ID)
		}
		if err != nil {
			return err
		}
		if err := writeRows(ctx, tx, st.ID, state.Delta{Messages: st.Messages, ProviderItems: st.ProviderItems, Journal: st.Journal}); err != nil {
			return err
		}
		if h.Runnable {
			return s.wake(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return s.wrap(fmt.Errorf("create run %s: %w", st.ID, err))
	}
	if lease != nil && expires != nil {
		lease.Expires = expires.UTC()
		st.Lease = lease
	}
	s.saved.Remember(st.ID, 1, h)
	st.Revision = 1
	st.CreatedAt, st.UpdatedAt = runrow.Time(c), runrow.Time(u)
	return nil
}

// Load reads a whole run from one snapshot: messages and provider items
// ordered by seq, journal entries by seq then call id. Holder is the live
// lease, if any. A missing run is state.ErrNotFound.
func (s *Store) Load(ctx context.Context, id string) (*state.RunState, error) {
	var st *state.RunState
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		st, err = loadRun(ctx, tx, id, false)
		return err
	})
	if err != nil {
		return nil, s.wrap(fmt.Errorf("load run %s: %w", id, err))
	}
	return st, nil
}

// LoadTail reads run id as Load does, with only the last n messages,
// provider items and journal entries and every journal entry that is not
// completed (state.TailLoader), in one read transaction; n <= 0 is Load.
func (s *Store) LoadTail(ctx context.Context, id string, n int) (*state.RunState, state.Omitted, error) {
	var om state.Omitted
	if n <= 0 {
		st, err := s.Load(ctx, id)
		return st, om, err
	}
	var st *state.RunState
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		if st, err = loadRunTail(ctx, tx, id, false, n); err != nil {
			return err
		}
		var msgs, items, journal int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM nexa_messages WHERE run_id = $1),
			(SELECT count(*) FROM nexa_provider_items WHERE run_id = $1), (SELECT count(*) FROM nexa_journal WHERE run_id = $1)`, id).
			Scan(&msgs, &items, &journal); err != nil {
			return err
		}
		om = state.Omitted{Messages: msgs - len(st.Messages), ProviderItems: items - len(st.ProviderItems), Journal: journal - len(st.Journal)}
		return nil
	})
	if err != nil {
		return nil, om, s.wrap(fmt.Errorf("load run %s: %w", id, err))
	}
	return st, om, nil
}

// The child-row queries of a whole run and of its tail ($2: how many
// rows). The tail of the journal keeps every entry not completed, found by
// its stage in the body.
const (
	messagesAll  = `SELECT seq, body FROM nexa_messages WHERE run_id = $1 ORDER BY seq`
	messagesTail = `SELECT seq, body FROM (SELECT seq, body FROM nexa_messages WHERE run_id = $1 ORDER BY seq DESC LIMIT $2) t ORDER BY seq`
	itemsAll     = `SELECT seq, body FROM nexa_provider_items WHERE run_id = $1 ORDER BY seq`
	itemsTail    = `SELECT seq, body FROM (SELECT seq, body FROM nexa_provider_items WHERE run_id = $1 ORDER BY seq DESC LIMIT $2) t ORDER BY seq`
	journalAll   = `SELECT seq, call_id, body FROM nexa_journal WHERE run_id = $1 ORDER BY seq, call_id`
	journalTail  = `SELECT seq, call_id, body FROM nexa_journal WHERE run_id = $1 AND (call_id IN (SELECT call_id FROM nexa_journal WHERE run_id = $1 ORDER BY seq DESC, call_id DESC LIMIT $2) OR body::json->>'stage' <> 'completed') ORDER BY seq, call_id`
)

// loadRun reads a run (locking its header row when forUpdate).
func loadRun(ctx context.Context, tx pgx.Tx, id string, forUpdate bool) (*state.RunState, error) {
	return loadRunTail(ctx, tx, id, forUpdate, 0)
}

// loadRunTail reads a run, with only the tail of its rows when tail > 0.
func loadRunTail(ctx context.Context, tx pgx.Tx, id string, forUpdate bool, tail int) (*state.RunState, error) {
	st := &state.RunState{ID: id, Messages: []state.Message{}, ProviderItems: []state.ProviderItem{}, Journal: []state.JournalEntry{}}
	var (
		status, config, usage string
		task, output          []byte
		runErr, owner         *string
		created, updated      int64
		epoch                 int64
		expires               *time.Time
		isLive                bool
	)
	q := `SELECT revision, status, created_at, updated_at, config, task, usage, output, error,
			lease_owner, lease_epoch, lease_expires, ` + live + `
		FROM nexa_runs WHERE id = $1`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	err := tx.QueryRow(ctx, q, id).Scan(&st.Revision, &status, &created, &updated, &config, &task, &usage, &output, &runErr,
		&owner, &epoch, &expires, &isLive)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, state.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	st.CreatedAt, st.UpdatedAt = runrow.Time(created), runrow.Time(updated)
	h := runrow.Header{Status: status, Config: config, Task: string(task), Usage: usage,
		Output: string(output), HasOutput: len(output) > 0}
	if runErr != nil {
		h.Error, h.HasError = *runErr, true
	}
	if err := h.Decode(st); err != nil {
		return nil, err
	}
	if isLive && owner != nil && expires != nil {
		st.Holder = &state.Lease{Owner: *owner, Epoch: epoch, Expires: expires.UTC()}
	}

	mq, iq, jq := messagesAll, itemsAll, journalAll
	args := []any{id}
	if tail > 0 {
		mq, iq, jq = messagesTail, itemsTail, journalTail
		args = append(args, tail)
	}
	rows, _ := tx.Query(ctx, mq, args...)
	err = eachRow(rows, func(seq int, _ string, body string) error {
		m, err := runrow.Message(seq, []byte(body))
		st.Messages = append(st.Messages, m)
		return err
	})
	if err != nil {
		return nil, err
	}
	rows, _ = tx.Query(ctx, iq, args...)
	err = eachRow(rows, func(seq int, _ string, body string) error {
		it, err := runrow.ProviderItem(seq, []byte(body))
		st.ProviderItems = append(st.ProviderItems, it)
		return err
	})
	if err != nil {
		return nil, err
	}
	rows, _ = tx.Query(ctx, jq, args...)
	err = eachRow(rows, func(seq int, callID string, body string) error {
		e, err := runrow.JournalEntry(seq, callID, []byte(body))
		st.Journal = append(st.Journal, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// eachRow reads child rows whose columns are seq, [call_id,] body.
func eachRow(rows pgx.Rows, fn func(seq int, callID, body string) error) error {
	defer rows.Close()
	withCallID := len(rows.FieldDescriptions()) == 3
	for rows.Next() {
		var (
			seq          int
			callID, body string
			err          error
		)
		if withCallID {
			err = rows.Scan(&seq, &callID, &body)
		} else {
			err = rows.Scan(&seq, &body)
		}
		if err != nil {
			return err
		}
		if err := fn(seq, callID, body); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Save writes st's header and the rows of d in one transaction, provided
// the stored revision is still st.Revision and, fenced by st.Lease, that
// lease is still the run's (without one: no live lease holds the run). On
// success st.Revision is incremented and st.UpdatedAt set from the
// database clock; otherwise nothing is written and the error is a
// *state.ConflictError (not wrapped), an error wrapping
// state.ErrLeaseLost, a *state.HeldError or state.ErrNotFound.
func (s *Store) Save(ctx context.Context, st *state.RunState, d state.Delta) error {
	if st == nil || st.ID == "" {
		return errors.New("save run: missing run id")
	}
	var (
		updated int64
		written runrow.Header
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		updated, written, err = s.writeRun(ctx, tx, st, st.Revision, d)
		return err
	})
	if errors.Is(err, errNotWritten) {
		err = s.whyNotWritten(ctx, st, st.Revision)
	}
	if err != nil {
		var ce *state.ConflictError
		if errors.As(err, &ce) {
			return ce
		}
		return s.wrap(fmt.Errorf("save run %s: %w", st.ID, err))
	}
	s.saved.Remember(st.ID, st.Revision+1, written)
	st.Revision++
	st.UpdatedAt = runrow.Time(updated)
	return nil
}

// Update loads run id with its header row locked, lets fn change it, and
// writes the change, in one transaction; a run a live lease holds is
// refused with *state.HeldError. fn may run more than once when the
// database asks for a retry (a serialization failure); an error from fn
// aborts with no write and is returned as is.
func (s *Store) Update(ctx context.Context, id string, fn func(st *state.RunState) (state.Delta, error)) (*state.RunState, error) {
	if fn == nil {
		return nil, fmt.Errorf("update run %s: nil function", id)
	}
	var (
		st      *state.RunState
		fnErr   error
		readRev int64
		updated int64
		written runrow.Header
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		fnErr = nil
		if st, err = loadRun(ctx, tx, id, true); err != nil {
			return err
		}
		readRev = st.Revision
		if st.Holder != nil {
			return &state.HeldError{RunID: id, Holder: *st.Holder}
		}
		d, err := fn(st)
		if err != nil {
			fnErr = err
			return err
		}
		st.ID, st.Lease = id, nil
		updated, written, err = s.writeRun(ctx, tx, st, readRev, d)
		return err
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if errors.Is(err, errNotWritten) {
		err = s.whyNotWritten(ctx, st, readRev)
	}
	if err != nil {
		var ce *state.ConflictError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, s.wrap(fmt.Errorf("update run %s: %w", id, err))
	}
	s.saved.Remember(id, readRev+1, written)
	st.Revision = readRev + 1
	st.UpdatedAt = runrow.Time(updated)
	st.Holder = nil
	return st, nil
}

// errNotWritten: the conditional header update matched no row.
var errNotWritten = errors.New("conditional update matched no row")

// writeRun is the compare-and-set: one batch (one round trip) with the
// header update, conditioned on the revision read and on the lease, and
// the delta's rows. When the update matches nothing the caller's
// transaction is rolled back, so the rows sent with it are never kept.
// When this handle wrote the header at readRev and only the usage changed
// since, only usage and updated_at are written (the indexes on status and
// agent are left alone). It returns the new updated_at and the header
// written.
func (s *Store) writeRun(ctx context.Context, tx pgx.Tx, st *state.RunState, readRev int64, d state.Delta) (int64, runrow.Header, error) {
	h, err := runrow.Encode(st)
	if err != nil {
		return 0, runrow.Header{}, err
	}
	var args []any
	var set string
	if s.saved.UsageOnly(st.ID, readRev, h) {
		set = `usage = $1`
		args = []any{h.Usage}
	} else {
		task, output, runErr := columns(h)
		set = `usage = $1, status = $2, agent = $3, file = $4, config = $5, task = $6, output = $7, error = $8, source_hash = $9, runnable = $10, wake_at = $11`
		args = []any{h.Usage, h.Status, h.Agent, h.File, h.Config, task, output, runErr, h.SourceHash, h.Runnable, wakeAt(h)}
	}
	n := len(args)
	args = append(args, st.ID, readRev)
	where := fmt.Sprintf(`id = $%d AND revision = $%d`, n+1, n+2)
	fence := `NOT ` + live
	if l := st.Lease; l != nil {
		fence = fmt.Sprintf(`lease_owner = $%d AND lease_epoch = $%d`, n+3, n+4)
		args = append(args, l.Owner, l.Epoch)
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE nexa_runs SET revision = revision + 1, updated_at = `+nowNanos+`, `+set+`
		WHERE `+where+` AND (`+fence+`)
		RETURNING updated_at`, args...)
	names, err := queueRows(b, st.ID, d)
	if err != nil {
		return 0, runrow.Header{}, err
	}
	if h.Runnable && s.canNotify(ctx) {
		b.Queue(wakeSQL)
		names = append(names, "wake the workers")
	}
	br := tx.SendBatch(ctx, b)
	var updated int64
	err = br.QueryRow().Scan(&updated)
	if errors.Is(err, pgx.ErrNoRows) {
		_ = br.Close()
		return 0, runrow.Header{}, errNotWritten
	}
	if err != nil {
		_ = br.Close()
		return 0, runrow.Header{}, err
	}
	for _, name := range names {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if sqlState(err) == "23505" {
				return 0, runrow.Header{}, fmt.Errorf("%s: already stored (messages are append-only): %w", name, err)
			}
			return 0, runrow.Header{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return updated, h, br.Close()
}

// whyNotWritten names the condition of writeRun that failed, read after
// its transaction was rolled back (a row of the batch may have failed
// after the UPDATE matched nothing, which aborts the transaction).
func (s *Store) whyNotWritten(ctx context.Context, st *state.RunState, readRev int64) error {
	var (
		rev, epoch int64
		owner      *string
		expires    *time.Time
		isLive     bool
	)
	err := s.pool.QueryRow(ctx, `SELECT revision, lease_owner, lease_epoch, lease_expires, `+live+` FROM nexa_runs WHERE id = $1`, st.ID).
		Scan(&rev, &owner, &epoch, &expires, &isLive)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.ErrNotFound
	}
	if err != nil {
		return err
	}
	if rev != readRev {
		return &state.ConflictError{RunID: st.ID, Expected: readRev, Actual: rev}
	}
	if l := st.Lease; l != nil {
		if owner == nil {
			return fmt.Errorf("%w: run %s was released or taken over (this executor held epoch %d)", state.ErrLeaseLost, st.ID, l.Epoch)
		}
		return fmt.Errorf("%w: run %s is now held by %s at epoch %d (this executor held epoch %d)", state.ErrLeaseLost, st.ID, *owner, epoch, l.Epoch)
	}
	he := &state.HeldError{RunID: st.ID}
	if owner != nil && expires != nil {
		he.Holder = state.Lease{Owner: *owner, Epoch: epoch, Expires: expires.UTC()}
	}
	return he
}

// writeRows sends the rows of d in one batch and checks each result.
func writeRows(ctx context.Context, tx pgx.Tx, id string, d state.Delta) error {
	b := &pgx.Batch{}
	names, err := queueRows(b, id, d)
	if err != nil || len(names) == 0 {
		return err
	}
	br := tx.SendBatch(ctx, b)
	for _, name := range names {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return br.Close()
}

// queueRows queues the appends of messages and the upserts of provider
// items (by seq) and journal entries (by call id); it returns a name per
// queued statement for errors.
func queueRows(b *pgx.Batch, id string, d state.Delta) ([]string, error) {
	var names []string
	for i := range d.Messages {
		m := &d.Messages[i]
		body, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode message %d: %w", m.Seq, err)
		}
		b.Queue(`INSERT INTO nexa_messages (run_id, seq, body) VALUES ($1, $2, $3)`, id, m.Seq, string(body))
		names = append(names, "append message "+strconv.Itoa(m.Seq))
	}
	for i := range d.ProviderItems {
		it := &d.ProviderItems[i]
		body, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("encode provider item %d: %w", it.Seq, err)
		}
		b.Queue(`INSERT INTO nexa_provider_items (run_id, seq, body) VALUES ($1, $2, $3)
			ON CONFLICT (run_id, seq) DO UPDATE SET body = excluded.body`, id, it.Seq, string(body))
		names = append(names, "write provider item "+strconv.Itoa(it.Seq))
	}
	for i := range d.Journal {
		e := &d.Journal[i]
		if e.CallID == "" {
			return nil, fmt.Errorf("write journal entry %d: empty call id", e.Seq)
		}
		if e.Stub {
			return nil, fmt.Errorf("write journal entry %s: it was loaded without its body and would replace the stored one", e.CallID)
		}
		body, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("encode journal entry %s: %w", e.CallID, err)
		}
		b.Queue(`INSERT INTO nexa_journal (run_id, call_id, seq, body) VALUES ($1, $2, $3, $4)
			ON CONFLICT (run_id, call_id) DO UPDATE SET seq = excluded.seq, body = excluded.body`, id, e.CallID, e.Seq, string(body))
		names = append(names, "write journal entry "+e.CallID)
	}
	return names, nil
}

// Acquire takes the lease on run id for owner: it succeeds only when no
// live lease holds the run, and increments the epoch in the same UPDATE;
// the expiry is the database's now() + ttl.
func (s *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (*state.Lease, error) {
	if owner == "" || ttl <= 0 {
		return nil, fmt.Errorf("acquire run %s: a lease needs an owner and a positive duration", id)
	}
	l := &state.Lease{Owner: owner, TTL: ttl}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var expires time.Time
		err := tx.QueryRow(ctx, `UPDATE nexa_runs
			SET lease_owner = $2, lease_epoch = lease_epoch + 1, lease_expires = now() + $3::bigint * interval '1 microsecond'
			WHERE id = $1 AND NOT `+live+`
			RETURNING lease_epoch, lease_expires, revision`, id, owner, micros(ttl)).Scan(&l.Epoch, &expires, &l.Revision)
		if err == nil {
			l.Expires = expires.UTC()
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var (
			cur   *string
			epoch int64
			exp   *time.Time
		)
		err = tx.QueryRow(ctx, `SELECT lease_owner, lease_epoch, lease_expires FROM nexa_runs WHERE id = $1`, id).Scan(&cur, &epoch, &exp)
		if errors.Is(err, pgx.ErrNoRows) {
			return state.ErrNotFound
		}
		if err != nil {
			return err
		}
		he := &state.HeldError{RunID: id}
		if cur != nil && exp != nil {
			he.Holder = state.Lease{Owner: *cur, Epoch: epoch, Expires: exp.UTC()}
		}
		return he
	})
	if err != nil {
		var he *state.HeldError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, s.wrap(fmt.Errorf("acquire run %s: %w", id, err))
	}
	return l, nil
}

// Renew extends l by l.TTL from the database's now, provided owner and
// epoch are still the run's; state.ErrLeaseLost otherwise.
func (s *Store) Renew(ctx context.Context, id string, l *state.Lease) error {
	if l == nil {
		return fmt.Errorf("renew run %s: no lease", id)
	}
	var expires time.Time
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE nexa_runs SET lease_expires = now() + $4::bigint * interval '1 microsecond'
			WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 RETURNING lease_expires`,
			id, l.Owner, l.Epoch, micros(l.TTL)).Scan(&expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return state.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return s.wrap(fmt.Errorf("renew lease on run %s: %w", id, err))
	}
	l.Expires = expires.UTC()
	return nil
}

// Release clears the stored lease if it is still l; a lost lease or a
// missing run is not an error.
func (s *Store) Release(ctx context.Context, id string, l *state.Lease) error {
	if l == nil {
		return nil
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var runnable bool
		err := tx.QueryRow(ctx, `UPDATE nexa_runs SET lease_owner = NULL, lease_expires = NULL
			WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 RETURNING runnable`, id, l.Owner, l.Epoch).Scan(&runnable)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if runnable {
			// The run was saved runnable under this lease (a decision,
			// a drained run): the workers were told while it was still
			// held, so they are told again now that it is free.
			return s.wake(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return s.wrap(fmt.Errorf("release lease on run %s: %w", id, err))
	}
	return nil
}

// where builds the WHERE clause of a filter; OlderThan is measured on the
// database clock.
func where(f state.Filter) (string, []any) {
	var (
		conds []string
		args  []any
	)
	if f.Status != "" {
		args = append(args, string(f.Status))
		conds = append(conds, "status = $"+strconv.Itoa(len(args)))
	}
	if f.Agent != "" {
		args = append(args, f.Agent)
		conds = append(conds, "agent = $"+strconv.Itoa(len(args)))
	}
	if f.OlderThan > 0 {
		args = append(args, f.OlderThan.Nanoseconds())
		conds = append(conds, "updated_at < "+nowNanos+" - $"+strconv.Itoa(len(args))+"::bigint")
	}
	if f.After != nil {
		// A row comparison, which the btree indexes on (…, created_at, id)
		// serve as a range.
		args = append(args, f.After.CreatedAt.UnixNano(), f.After.ID)
		conds = append(conds, "(created_at, id) < ($"+strconv.Itoa(len(args)-1)+"::bigint, $"+strconv.Itoa(len(args))+"::text)")
	}
	var lim *int
	if f.Limit > 0 {
		lim = &f.Limit
	}
	args = append(args, lim)
	w := ""
	if len(conds) > 0 {
		w = " WHERE " + strings.Join(conds, " AND ")
	}
	return w + " ORDER BY created_at DESC, id DESC LIMIT $" + strconv.Itoa(len(args)) + "::bigint", args
}

// List returns the runs matching f, newest first (created_at, then id,
// descending), at most f.Limit of them and only those after f.After.
// CountByStatus counts the runs by status in one query over the status
// index (state.StatusCounter).
func (s *Store) CountByStatus(ctx context.Context) (map[state.Status]int, error) {
	out := map[state.Status]int{}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		clear(out)
		rows, _ := tx.Query(ctx, `SELECT status, count(*) FROM nexa_runs GROUP BY status`)
		defer rows.Close()
		for rows.Next() {
			var (
				status string
				n      int
			)
			if err := rows.Scan(&status, &n); err != nil {
				return err
			}
			out[state.Status(status)] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(fmt.Errorf("count runs: %w", err))
	}
	return out, nil
}

func (s *Store) List(ctx context.Context, f state.Filter) ([]state.Summary, error) {
	w, args := where(f)
	var out []state.Summary
	// One snapshot, read again whole if a restart of the server cut it
	// off (readTx), like every other read of the store.
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		out = []state.Summary{}
		rows, _ := tx.Query(ctx, `SELECT `+runrow.SummaryColumns+` FROM nexa_runs`+w, args...)
		defer rows.Close()
		for rows.Next() {
			sum, err := runrow.ScanSummary(rows.Scan)
			if err != nil {
				return err
			}
			out = append(out, sum)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(fmt.Errorf("list runs: %w", err))
	}
	return out, nil
}

// Prune deletes exactly the runs List(f) would return that no live lease
// holds, in one transaction that locks the candidates' rows first (so no
// executor can take one between the check and the delete), and then this
// host's logs of the deleted runs. Held runs are reported and kept whole.
func (s *Store) Prune(ctx context.Context, f state.Filter) (state.PruneReport, error) {
	rep := state.PruneReport{Deleted: []string{}, Held: []string{}}
	w, args := where(f)
	var deleted, held []string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		deleted, held = nil, nil
		rows, _ := tx.Query(ctx, `SELECT id, `+live+` FROM nexa_runs`+w+` FOR UPDATE`, args...)
		var free []string
		for rows.Next() {
			var (
				id     string
				isLive bool
			)
			if err := rows.Scan(&id, &isLive); err != nil {
				rows.Close()
				return err
			}
			if isLive {
				held = append(held, id)
			} else {
				free = append(free, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(free) == 0 {
			return nil
		}
		rows, _ = tx.Query(ctx, `DELETE FROM nexa_runs WHERE id = ANY($1) RETURNING id`, free)
		var err error
		deleted, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return rep, s.wrap(fmt.Errorf("prune runs: %w", err))
	}
	var ferr error
	if s.logDir != "" {
		for _, id := range deleted {
			if !runrow.FileSafe(id) {
				continue
			}
			for _, suffix := range []string{".log", ".mcp.log"} {
				if err := os.Remove(filepath.Join(s.logDir, id+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
					ferr = errors.Join(ferr, err)
				}
			}
		}
	}
	rep.Deleted = append(rep.Deleted, deleted...)
	rep.Held = append(rep.Held, held...)
	slices.Sort(rep.Deleted)
	slices.Sort(rep.Held)
	if ferr != nil {
		return rep, fmt.Errorf("prune runs: rows deleted, but some local logs remain: %w", ferr)
	}
	return rep, nil
}

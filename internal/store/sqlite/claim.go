package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/nexa-run/nexa/internal/state"
)

var _ state.Claimer = (*SQLite)(nil)

// claimBatch is how many candidates one Claim reads before it tries their
// lock files; a claim that finds them all held reads no further (the
// worker asks again at its next poll, by which time runs have moved).
const claimBatch = 64

// claimable is the condition "a worker may take the run" (its one
// argument is the store's now in Unix nanoseconds): runnable, or waiting
// for a decision whose wait has run out (wake_at, state.WakeAt), which the
// resume records as expired.
const claimable = `(runnable = 1 OR wake_at <= ?)`

// candidates is claimable for the read of many rows: the two terms as a
// union, so that each reads its own partial index (SQLite scans the whole
// table for the OR).
const candidates = `rowid IN (SELECT rowid FROM runs WHERE runnable = 1
	UNION ALL SELECT rowid FROM runs WHERE wake_at <= ?)`

// Claim takes the lease of the oldest runnable run of an offered program
// (state.Claimer), or of a waiting one whose approval's wait has run out
// by the store's clock. On this store the run's lock file says whether a
// lease is live, as for Acquire: candidates are read from the partial
// indexes of runnable runs and of wake-ups, free ones first, and the
// first whose lock file this handle can lock is taken in one write
// transaction that checks again that the run is still claimable (it may
// have been driven to its end between the read and the lock). A dead holder's run is free at once.
func (s *SQLite) Claim(ctx context.Context, req state.ClaimRequest) (string, *state.Lease, error) {
	if req.Owner == "" || req.TTL <= 0 {
		return "", nil, errors.New("claim a run: a lease needs an owner and a positive duration")
	}
	if len(req.SourceHashes) == 0 {
		return "", nil, nil
	}
	now := s.now().UTC().UnixNano()
	q := `SELECT id FROM runs WHERE ` + candidates + ` AND source_hash IN (?` + strings.Repeat(",?", len(req.SourceHashes)-1) + `)`
	args := []any{now}
	for _, h := range req.SourceHashes {
		args = append(args, h)
	}
	if len(req.SkipAgents) > 0 {
		q += ` AND agent NOT IN (?` + strings.Repeat(",?", len(req.SkipAgents)-1) + `)`
		for _, a := range req.SkipAgents {
			args = append(args, a)
		}
	}
	q += fmt.Sprintf(` ORDER BY lease_owner IS NOT NULL, created_at, id LIMIT %d`, claimBatch)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return "", nil, fmt.Errorf("claim a run: %w", dbErr(ctx, err))
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return "", nil, fmt.Errorf("claim a run: %w", dbErr(ctx, err))
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", nil, fmt.Errorf("claim a run: %w", dbErr(ctx, err))
	}
	for _, id := range ids {
		f, err := s.lock(id)
		if errors.Is(err, errLockHeld) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("claim run %s: %w", id, err)
		}
		var l *state.Lease
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			l = &state.Lease{Owner: req.Owner, TTL: req.TTL, Expires: s.now().UTC().Add(req.TTL)}
			err := tx.QueryRowContext(ctx, `UPDATE runs SET lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires = ?
				WHERE id = ? AND `+claimable+` RETURNING lease_epoch, revision`, req.Owner, l.Expires.UnixNano(), id, s.now().UTC().UnixNano()).Scan(&l.Epoch, &l.Revision)
			if errors.Is(err, sql.ErrNoRows) {
				l = nil
				return nil
			}
			return dbErr(ctx, err)
		})
		if err != nil || l == nil {
			f.Close()
			if err != nil {
				return "", nil, fmt.Errorf("claim run %s: %w", id, err)
			}
			continue
		}
		s.keep(id, f)
		return id, l, nil
	}
	return "", nil, nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nexa-run/nexa/internal/state"
)

var (
	_ state.Claimer = (*Store)(nil)
	_ state.Waker   = (*Store)(nil)
)

// wakeChannel is the LISTEN/NOTIFY channel of runs becoming runnable.
const wakeChannel = "nexa_runnable"

// wakeSQL tells the listening workers, at the commit of the transaction
// it runs in, that a run became runnable. Notifications of one
// transaction are delivered once, and a worker that wakes claims whatever
// is runnable, so the payload says nothing.
const wakeSQL = `SELECT pg_notify('` + wakeChannel + `', '')`

// canNotify reports whether the server has pg_notify, asking it once per
// handle (and only when a run first becomes runnable, so commands that
// never hand a run to workers pay nothing). A server without it is served
// by polling workers.
func (s *Store) canNotify(ctx context.Context) bool {
	switch s.notify.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regproc('pg_catalog.pg_notify') IS NOT NULL`).Scan(&ok); err != nil {
		return false // asked again next time
	}
	if ok {
		s.notify.Store(1)
	} else {
		s.notify.Store(2)
	}
	return ok
}

// wake sends the wake-up in tx when the server can.
func (s *Store) wake(ctx context.Context, tx pgx.Tx) error {
	if !s.canNotify(ctx) {
		return nil
	}
	_, err := tx.Exec(ctx, wakeSQL)
	return err
}

// claimable is the condition "a worker may take the run": runnable, or
// waiting for a decision whose wait has run out by the database clock
// (wake_at, state.WakeAt), which the resume records as expired. Each term
// reads its own partial index. No notification is sent when a wait runs
// out (nothing commits then): the workers' polls find such runs.
const claimable = `(runnable OR wake_at <= now())`

// Claim takes the lease of the oldest claimable run of an offered program
// whose agent is not skipped and that no live lease holds (a dead
// holder's lease has expired by the database clock), in one transaction:
// the candidate row is locked with FOR UPDATE SKIP LOCKED, so two
// claimers never wait for each other nor get the same run, and the
// UPDATE that takes the lease checks the conditions again on the locked
// row and increments the epoch.
func (s *Store) Claim(ctx context.Context, req state.ClaimRequest) (string, *state.Lease, error) {
	if req.Owner == "" || req.TTL <= 0 {
		return "", nil, errors.New("claim a run: a lease needs an owner and a positive duration")
	}
	if len(req.SourceHashes) == 0 {
		return "", nil, nil
	}
	skip := req.SkipAgents
	if skip == nil {
		skip = []string{}
	}
	var (
		id      string
		l       *state.Lease
		expires time.Time
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		l = &state.Lease{Owner: req.Owner, TTL: req.TTL}
		err := tx.QueryRow(ctx, `WITH c AS (
				SELECT id FROM nexa_runs
				WHERE `+claimable+` AND source_hash = ANY($1) AND NOT (agent = ANY($2)) AND NOT `+live+`
				ORDER BY created_at, id LIMIT 1
				FOR UPDATE SKIP LOCKED)
			UPDATE nexa_runs r SET lease_owner = $3, lease_epoch = r.lease_epoch + 1,
				lease_expires = now() + $4::bigint * interval '1 microsecond'
			FROM c WHERE r.id = c.id AND `+claimable+` AND NOT `+live+`
			RETURNING r.id, r.lease_epoch, r.lease_expires, r.revision`,
			req.SourceHashes, skip, req.Owner, micros(req.TTL)).Scan(&id, &l.Epoch, &expires, &l.Revision)
		if errors.Is(err, pgx.ErrNoRows) {
			id, l = "", nil
			return nil
		}
		return err
	})
	if err != nil {
		return "", nil, s.wrap(fmt.Errorf("claim a run: %w", err))
	}
	if l == nil {
		return "", nil, nil
	}
	l.Expires = expires.UTC()
	return id, l, nil
}

// WakeUps listens for runs becoming runnable on a connection of its own
// (state.Waker): the channel receives a value, coalesced, after each
// commit that made a run runnable, and is closed when ctx ends or the
// connection is lost.
func (s *Store) WakeUps(ctx context.Context) (<-chan struct{}, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, s.wrap(fmt.Errorf("listen for runnable runs: %w", err))
	}
	conn := pc.Hijack() // a listening connection is never handed back to the pool
	if _, err := conn.Exec(ctx, `LISTEN `+wakeChannel); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, s.wrap(fmt.Errorf("listen for runnable runs: %w", err))
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer conn.Close(context.WithoutCancel(ctx))
		for {
			if _, err := conn.WaitForNotification(ctx); err != nil {
				return
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out, nil
}

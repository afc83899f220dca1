package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migration is one forward step of the schema; the version stored in
// nexa_schema is the number of steps applied. Never edit a released step:
// append a new one.
type migration struct {
	name  string
	stmts []string
}

// migrations is the schema history; len(migrations) is the version this
// binary writes. Timestamps of runs are Unix nanoseconds (bigint, as in the
// SQLite store, so a run moves between stores unchanged); lease expiries
// are timestamptz of the database clock. Bodies are the encoding/json form
// of the state types, kept as text so their bytes come back unchanged.
//
// Every save updates its run's header row: no index covers a column a save
// changes on every step (revision, updated_at, usage, lease), and the table
// leaves half of each page free, so those updates are HOT (no new index
// entries, dead versions pruned in place) and a save's cost does not grow
// with the number of steps. Prune's updated_at filter scans the table.
var migrations = []migration{
	{
		name: "runs with leases, messages, provider items, journal",
		stmts: []string{
			`CREATE TABLE nexa_runs (
				id            text        NOT NULL PRIMARY KEY,
				revision      bigint      NOT NULL CHECK (revision >= 1),
				status        text        NOT NULL,
				agent         text        NOT NULL,
				file          text        NOT NULL,
				created_at    bigint      NOT NULL,
				updated_at    bigint      NOT NULL,
				config        text        NOT NULL,
				task          bytea       NOT NULL,
				usage         text        NOT NULL,
				output        bytea,
				error         text,
				lease_owner   text,
				lease_epoch   bigint      NOT NULL DEFAULT 0,
				lease_expires timestamptz
			) WITH (fillfactor = 50)`,
			`CREATE INDEX nexa_runs_created ON nexa_runs (created_at, id)`,
			`CREATE INDEX nexa_runs_status ON nexa_runs (status, created_at, id)`,
			`CREATE INDEX nexa_runs_agent ON nexa_runs (agent, created_at, id)`,
			`CREATE TABLE nexa_messages (
				run_id text   NOT NULL REFERENCES nexa_runs (id) ON DELETE CASCADE,
				seq    bigint NOT NULL,
				body   text   NOT NULL,
				PRIMARY KEY (run_id, seq)
			)`,
			`CREATE TABLE nexa_provider_items (
				run_id text   NOT NULL REFERENCES nexa_runs (id) ON DELETE CASCADE,
				seq    bigint NOT NULL,
				body   text   NOT NULL,
				PRIMARY KEY (run_id, seq)
			)`,
			`CREATE TABLE nexa_journal (
				run_id  text   NOT NULL REFERENCES nexa_runs (id) ON DELETE CASCADE,
				call_id text   NOT NULL,
				seq     bigint NOT NULL,
				body    text   NOT NULL,
				PRIMARY KEY (run_id, call_id)
			)`,
			`CREATE INDEX nexa_journal_seq ON nexa_journal (run_id, seq)`,
		},
	},
	{
		name: "runnable runs for workers",
		stmts: []string{
			// Whether a worker may take the run (state.Runnable) and the
			// hash of its program, written with every header change, so
			// that a claim reads one partial index (only runnable runs
			// are in it, so the saves of a driven run rarely touch it).
			// No run of an older nexa was handed to workers.
			`ALTER TABLE nexa_runs ADD COLUMN source_hash text NOT NULL DEFAULT ''`,
			`ALTER TABLE nexa_runs ADD COLUMN runnable boolean NOT NULL DEFAULT false`,
			`UPDATE nexa_runs SET source_hash = coalesce(config::json->>'source_hash', '')`,
			`CREATE INDEX nexa_runs_runnable ON nexa_runs (created_at, id) WHERE runnable`,
		},
	},
	{
		name: "wake-ups of expiring approvals",
		stmts: []string{
			// When a worker run waiting for approval becomes claimable
			// without a decision (state.WakeAt: the earliest expiry of its
			// pending calls), compared with the database clock; NULL when
			// it waits for a person alone. Written with every header
			// change beside runnable; it changes only when the pending
			// calls do, so the saves of a driven run stay HOT. The runs
			// already waiting get theirs from their journal.
			`ALTER TABLE nexa_runs ADD COLUMN wake_at timestamptz`,
			`UPDATE nexa_runs r SET wake_at = (
				SELECT min((j.body::json->>'expires_at')::timestamptz)
				FROM nexa_journal j
				WHERE j.run_id = r.id AND j.body::json->>'stage' = 'not_started'
					AND (j.body::json->>'needs_approval')::boolean
					AND j.body::json->'decision' IS NULL
					AND j.body::json->>'expires_at' IS NOT NULL)
			WHERE r.status = 'waiting_approval' AND r.config::json->>'driver' = 'worker'`,
			`CREATE INDEX nexa_runs_wake ON nexa_runs (wake_at) WHERE wake_at IS NOT NULL`,
		},
	},
}

// SchemaVersion is the schema version this binary writes and reads.
func SchemaVersion() int { return len(migrations) }

// readVersion reads the stored schema version without writing: 0 when
// nexa_schema does not exist yet (SQLSTATE 42P01).
func readVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM nexa_schema WHERE id = 1`).Scan(&v)
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, pgx.ErrNoRows), sqlState(err) == "42P01":
		return 0, nil
	}
	return 0, err
}

func checkVersion(v, known int) error {
	if v > known {
		return fmt.Errorf("%w: the database has schema version %d, this binary knows up to %d; upgrade nexa or use another store", ErrNewerSchema, v, known)
	}
	return nil
}

// migrate brings the schema to len(migrations). The common case (up to
// date) is one read. Otherwise one transaction creates nexa_schema if
// needed, locks its row and applies the missing steps; a process that
// races another one creating the same objects gets a unique violation
// (23505) or a duplicate object (42P07, 42710), rolls back and starts
// again, and then finds the work done.
func (s *Store) migrate(ctx context.Context) error {
	known := len(migrations)
	for {
		v, err := readVersion(ctx, s.pool)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if err := checkVersion(v, known); err != nil {
			return err
		}
		if v == known {
			return nil
		}
		if v == 0 && s.noCreate {
			return ErrNoStore
		}
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS nexa_schema (
					id      int NOT NULL PRIMARY KEY CHECK (id = 1),
					version int NOT NULL)`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO nexa_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`); err != nil {
				return err
			}
			var cur int
			if err := tx.QueryRow(ctx, `SELECT version FROM nexa_schema WHERE id = 1 FOR UPDATE`).Scan(&cur); err != nil {
				return err
			}
			if err := checkVersion(cur, known); err != nil {
				return err
			}
			for i := cur; i < known; i++ {
				for _, stmt := range migrations[i].stmts {
					if _, err := tx.Exec(ctx, stmt); err != nil {
						return fmt.Errorf("migrate schema to version %d (%s): %w", i+1, migrations[i].name, err)
					}
				}
			}
			_, err := tx.Exec(ctx, `UPDATE nexa_schema SET version = $1 WHERE id = 1`, known)
			return err
		})
		switch sqlState(err) {
		case "23505", "42P07", "42710":
			if ctx.Err() != nil {
				return err
			}
			continue // another process created them first: read again
		}
		if err != nil {
			return fmt.Errorf("migrate schema: %w", err)
		}
		return nil
	}
}

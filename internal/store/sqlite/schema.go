package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// applicationID marks a SQLite file as a nexa run store (PRAGMA
// application_id, the bytes "NEXA"), so that Open never mistakes another
// application's database for an old store and adds tables to it.
const applicationID = 0x4E455841

// migration is one forward step of the schema. Steps are applied in order,
// each at most once; the schema version stored in PRAGMA user_version is the
// number of steps applied. Never edit a released step: append a new one.
type migration struct {
	name  string
	stmts []string
}

// migrations is the schema history; len(migrations) is the version this
// binary writes.
var migrations = []migration{
	{
		name: "runs, messages, provider items, journal",
		stmts: []string{
			// Timestamps are Unix nanoseconds (UTC); JSON columns hold the
			// encoding/json form of the state types.
			`CREATE TABLE runs (
				id         TEXT    NOT NULL PRIMARY KEY,
				revision   INTEGER NOT NULL CHECK (revision >= 1),
				status     TEXT    NOT NULL,
				agent      TEXT    NOT NULL,
				file       TEXT    NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL,
				config     TEXT    NOT NULL,
				task       TEXT    NOT NULL,
				usage      TEXT    NOT NULL,
				output     TEXT,
				error      TEXT
			) STRICT`,
			`CREATE INDEX runs_created ON runs (created_at, id)`,
			`CREATE INDEX runs_status ON runs (status, created_at, id)`,
			`CREATE INDEX runs_agent ON runs (agent, created_at, id)`,
			`CREATE INDEX runs_updated ON runs (updated_at)`,
			`CREATE TABLE messages (
				run_id TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				seq    INTEGER NOT NULL,
				body   TEXT    NOT NULL,
				PRIMARY KEY (run_id, seq)
			) STRICT`,
			`CREATE TABLE provider_items (
				run_id TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				seq    INTEGER NOT NULL,
				body   TEXT    NOT NULL,
				PRIMARY KEY (run_id, seq)
			) STRICT`,
			`CREATE TABLE journal (
				run_id  TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				call_id TEXT    NOT NULL,
				seq     INTEGER NOT NULL,
				body    TEXT    NOT NULL,
				PRIMARY KEY (run_id, call_id)
			) STRICT`,
			`CREATE INDEX journal_seq ON journal (run_id, seq)`,
		},
	},
	{
		name: "run leases",
		stmts: []string{
			// The current lease of a run: owner (NULL when free), epoch
			// (incremented by every acquire, never reset) and expiry in
			// Unix nanoseconds of the store's clock.
			`ALTER TABLE runs ADD COLUMN lease_owner TEXT`,
			`ALTER TABLE runs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0`,
			`ALTER TABLE runs ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0`,
		},
	},
	{
		name: "journal stage and turn",
		stmts: []string{
			// Each entry's stage and turn (the provider request whose
			// reply asked for the call) beside its body, copies the
			// writer keeps equal to the body's, so that a resume reads
			// the completed entries of earlier replies from an index
			// alone and leaves their bodies unread (LoadForDrive).
			`ALTER TABLE journal ADD COLUMN stage TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE journal ADD COLUMN turn INTEGER NOT NULL DEFAULT 0`,
			`UPDATE journal SET stage = coalesce(json_extract(body, '$.stage'), ''),
				turn = coalesce(json_extract(body, '$.turn'), 0)`,
			// The index on (run_id, seq) gains the columns a drive reads
			// of every entry, so it covers them.
			`DROP INDEX journal_seq`,
			`CREATE INDEX journal_drive ON journal (run_id, seq, call_id, stage, turn)`,
		},
	},
	{
		name: "runnable runs for workers",
		stmts: []string{
			// Whether a worker may take the run (state.Runnable) and the
			// hash of its program, written with every header change, so
			// that a worker's claim reads one partial index. No run of
			// an older nexa was handed to workers: all start at 0.
			`ALTER TABLE runs ADD COLUMN runnable INTEGER NOT NULL DEFAULT 0`,
			`ALTER TABLE runs ADD COLUMN source_hash TEXT NOT NULL DEFAULT ''`,
			`UPDATE runs SET source_hash = coalesce(json_extract(config, '$.source_hash'), '')`,
			`CREATE INDEX runs_runnable ON runs (created_at, id) WHERE runnable = 1`,
		},
	},
	{
		name: "wake-ups of expiring approvals",
		stmts: []string{
			// When a worker run waiting for approval becomes claimable
			// without a decision (state.WakeAt: the earliest expiry of its
			// pending calls), Unix nanoseconds of the store's clock; NULL
			// when it waits for a person alone. Written with every header
			// change beside runnable. The runs already waiting get theirs
			// from their journal, rounded up to the next millisecond (a
			// wake-up a little late is harmless; one early, a claim that
			// finds nothing to do).
			`ALTER TABLE runs ADD COLUMN wake_at INTEGER`,
			`UPDATE runs SET wake_at = (
				SELECT (CAST(floor(min(unixepoch(json_extract(j.body, '$.expires_at'), 'subsec')) * 1000) AS INTEGER) + 1) * 1000000
				FROM journal j
				WHERE j.run_id = runs.id AND j.stage = 'not_started'
					AND json_extract(j.body, '$.needs_approval') = 1
					AND json_extract(j.body, '$.decision') IS NULL
					AND json_extract(j.body, '$.expires_at') IS NOT NULL)
			WHERE status = 'waiting_approval' AND json_extract(config, '$.driver') = 'worker'`,
			`CREATE INDEX runs_wake ON runs (wake_at) WHERE wake_at IS NOT NULL`,
		},
	},
}

// SchemaVersion is the schema version this binary writes and reads; a store
// with a higher one is refused with ErrNewerSchema.
func SchemaVersion() int { return len(migrations) }

// identity is what the file says about itself before Open writes anything.
type identity struct {
	version int   // PRAGMA user_version
	appID   int64 // PRAGMA application_id
	objects int   // rows of sqlite_schema
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readIdentity reads the identity in one statement, which SQLite runs in
// one read transaction, so that a migration committed by another process
// between the reads cannot make a half-migrated picture (version 0 with
// the new tables). One statement, not three in a transaction: it is most
// of what Open reads from a store already at the current version.
func readIdentity(ctx context.Context, q querier) (identity, error) {
	var id identity
	err := q.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version),
		(SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_schema)`).
		Scan(&id.version, &id.appID, &id.objects)
	return id, err
}

// check refuses files Open must not write to: another application's database
// and a store of a newer schema.
func (id identity) check(known int) error {
	switch {
	case id.appID == applicationID:
	case id.appID == 0 && id.version == 0 && id.objects == 0:
		// An empty database: ours to initialize.
	default:
		return fmt.Errorf("%w (application_id %#x, user_version %d, %d schema objects)",
			ErrNotRunStore, id.appID, id.version, id.objects)
	}
	if id.version > known {
		return fmt.Errorf("%w: store has schema version %d, this binary knows up to %d; upgrade nexa or use another --store",
			ErrNewerSchema, id.version, known)
	}
	return nil
}

// migrate applies the steps the store lacks, all in one IMMEDIATE
// transaction, so a crash leaves the old version intact and two processes
// opening a new store at once migrate it once.
func migrate(ctx context.Context, db *sql.DB, steps []migration) error {
	id, err := readIdentity(ctx, db)
	if err != nil {
		return fmt.Errorf("read schema version: %w", dbErr(ctx, err))
	}
	if err := id.check(len(steps)); err != nil {
		return err
	}
	if id.version == len(steps) {
		return nil // the common case: no write lock taken
	}

	// Several processes opening a new store at once queue here: wait for
	// the write lock as long as ctx allows, like every write.
	var tx *sql.Tx
	for {
		tx, err = db.BeginTx(ctx, nil)
		if err == nil {
			break
		}
		if err = dbErr(ctx, err); !errors.Is(err, ErrLocked) || ctx.Err() != nil {
			return fmt.Errorf("migrate schema: %w", err)
		}
	}
	defer tx.Rollback()
	// Read again under the write lock: another process may have migrated.
	if id, err = readIdentity(ctx, tx); err != nil {
		return fmt.Errorf("migrate schema: %w", dbErr(ctx, err))
	}
	if err := id.check(len(steps)); err != nil {
		return err
	}
	if id.version == len(steps) {
		return nil
	}
	for v := id.version; v < len(steps); v++ {
		for _, stmt := range steps[v].stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate schema to version %d (%s): %w", v+1, steps[v].name, dbErr(ctx, err))
			}
		}
	}
	// PRAGMA arguments cannot be bound; both values are integers we control.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return fmt.Errorf("migrate schema: %w", dbErr(ctx, err))
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(steps))); err != nil {
		return fmt.Errorf("migrate schema: %w", dbErr(ctx, err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate schema: %w", dbErr(ctx, err))
	}
	return nil
}

package state

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotFound is returned by a Store for a run id it does not hold.
var ErrNotFound = errors.New("run not found")

// ConflictError is returned by Save and Update when the stored revision is no
// longer the one the caller read: another executor wrote the run first, and
// nothing was written.
type ConflictError struct {
	RunID    string
	Expected int64 // the revision the caller read
	Actual   int64 // the revision now stored
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("checkpoint conflict on run %s: expected revision %d, store has %d", e.RunID, e.Expected, e.Actual)
}

// Store persists runs. Every write is one transaction conditioned on the
// revision the caller read (compare-and-set), so two executors can never both
// act on one run.
type Store interface {
	// Create inserts a new run at revision 1 with all its rows.
	Create(ctx context.Context, st *RunState) error
	// Load reads a whole run; ErrNotFound when there is none.
	Load(ctx context.Context, id string) (*RunState, error)
	// Save writes st's header and the rows in d, provided the stored
	// revision still equals st.Revision; on success st.Revision is
	// incremented and st.UpdatedAt set. On a stale revision it writes
	// nothing and returns *ConflictError.
	Save(ctx context.Context, st *RunState, d Delta) error
	// Update loads a run, lets fn change it and describe the change, and
	// saves it, all in one transaction. An error from fn aborts with no
	// write and is returned as is.
	Update(ctx context.Context, id string, fn func(st *RunState) (Delta, error)) (*RunState, error)
	// List returns summaries, newest first.
	List(ctx context.Context, f Filter) ([]Summary, error)
	// Prune deletes the runs matching f (OlderThan is required by the CLI)
	// and returns how many were deleted.
	Prune(ctx context.Context, f Filter) (int, error)
	// Close releases the database.
	Close() error
}

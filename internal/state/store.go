package state

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned by a Store for a run id it does not hold.
var ErrNotFound = errors.New("run not found")

// ErrExists is wrapped by Create when the run id is already stored: a
// run is never overwritten by another with the same id (an import of a
// run that is already here is refused, not merged).
var ErrExists = errors.New("run already exists")

// ErrBusy is wrapped by a store error when the store stayed locked by
// other writers for as long as the caller's context allowed; nothing was
// written. Callers with a result in hand retry with a longer context.
var ErrBusy = errors.New("store is locked by another process")

// ErrLeaseLost is wrapped by a write fenced by a lease that is no longer
// the run's current lease: another executor took the run over (its lease
// expired, or its holder died), or the lease was released. Nothing was
// written.
var ErrLeaseLost = errors.New("lease on the run was lost")

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

// Lease is one executor's exclusive claim on a run. The store keeps the
// current lease beside the run's revision: Acquire bumps Epoch, and every
// write fenced by a lease (RunState.Lease) commits only while Owner and
// Epoch are still the stored ones, so an executor that lost its lease can
// never save. Expires is set by the store from its own clock (the database
// clock for a networked store), never by the caller's.
type Lease struct {
	Owner   string    `json:"owner"`
	Epoch   int64     `json:"epoch"`
	Expires time.Time `json:"expires_at"`
	// TTL is how long Acquire and Renew extend the lease; not stored.
	TTL time.Duration `json:"-"`
	// Revision is the run's revision when Acquire took the lease (0 from
	// a store that does not say). Taking a lease changes no revision and,
	// while it is held, only its holder saves the run, so a read of the
	// run at this revision is the run as it is (a resume's read ahead is
	// checked against it). Not stored.
	Revision int64 `json:"-"`
}

// Live reports whether the lease is unexpired at now.
func (l *Lease) Live(now time.Time) bool {
	return l != nil && l.Owner != "" && now.Before(l.Expires)
}

// HeldError is returned by Acquire and Update when another executor holds
// the run; nothing was written.
type HeldError struct {
	RunID  string
	Holder Lease // Owner may be empty when the store knows only that the run is held
}

func (e *HeldError) Error() string {
	if e.Holder.Owner == "" {
		return fmt.Sprintf("run %s is held by another nexa process", e.RunID)
	}
	return fmt.Sprintf("run %s is held by %s until %s", e.RunID, e.Holder.Owner, e.Holder.Expires.UTC().Format(time.RFC3339Nano))
}

// PruneReport says what Prune did: the runs it deleted and the matching
// runs it left because an executor holds them.
type PruneReport struct {
	Deleted []string `json:"deleted"`
	Held    []string `json:"held"`
}

// Store persists runs. Every write is one transaction conditioned on the
// revision the caller read (compare-and-set) and, when the caller holds a
// lease, on that lease (fencing), so two executors can never both act on
// one run. Stores wait for a locked database as long as the context of the
// call allows (without a deadline: until it is free) and then fail with an
// error wrapping ErrBusy.
//
// A store's errors name the operation and the run ("save run RUN: …",
// "load run RUN: …"), so callers show them as they are and add no context
// of their own: the context appears once.
type Store interface {
	// Create inserts a new run at revision 1 with all its rows. When
	// st.Lease names an Owner and a TTL, the run is created held by that
	// owner (epoch 1) and st.Lease is filled in, so no one can take or
	// prune the run between its creation and its first step.
	Create(ctx context.Context, st *RunState) error
	// Load reads a whole run; ErrNotFound when there is none. The loaded
	// state's Holder is the run's current live lease, if any; its Lease
	// (the caller's fencing token) is nil.
	Load(ctx context.Context, id string) (*RunState, error)
	// Save writes st's header and the rows in d, provided the stored
	// revision still equals st.Revision and, if st.Lease is set, that
	// lease is still the run's (else ErrLeaseLost); without st.Lease the
	// run must not be held by a live lease (else *HeldError). On success
	// st.Revision is incremented and st.UpdatedAt set. On a stale revision
	// it writes nothing and returns *ConflictError.
	Save(ctx context.Context, st *RunState, d Delta) error
	// Update loads a run, lets fn change it and describe the change, and
	// saves it, all in one transaction; a run held by a live lease is
	// refused with *HeldError. An error from fn aborts with no write and
	// is returned as is.
	Update(ctx context.Context, id string, fn func(st *RunState) (Delta, error)) (*RunState, error)
	// Acquire takes the lease on run id for owner, for ttl. It fails with
	// *HeldError while another owner's lease is live, with ErrNotFound
	// when there is no such run. Each Acquire increments the epoch.
	Acquire(ctx context.Context, id, owner string, ttl time.Duration) (*Lease, error)
	// Renew extends l by l.TTL from the store's now; ErrLeaseLost when l
	// is no longer the run's lease.
	Renew(ctx context.Context, id string, l *Lease) error
	// Release gives the lease up; releasing a lost lease is not an error.
	Release(ctx context.Context, id string, l *Lease) error
	// List returns summaries, newest first.
	List(ctx context.Context, f Filter) ([]Summary, error)
	// Prune deletes the runs matching f that no executor holds, with every
	// file the store keeps for them, and reports the deleted and the held
	// ones (OlderThan is required by the CLI).
	Prune(ctx context.Context, f Filter) (PruneReport, error)
	// Close releases the database and any lease this handle holds
	// without clearing it, as a crash would.
	Close() error
}

// ClaimRequest is what a worker offers when it asks for a run: who it is,
// how long its lease lasts, the programs it has (by source hash) and the
// agents it will take no more runs of now (its per-agent limits).
type ClaimRequest struct {
	Owner string
	TTL   time.Duration
	// SourceHashes are the hashes of the programs the worker compiled; a
	// run of any other program is never claimed. Empty claims nothing.
	SourceHashes []string
	// SkipAgents are agents whose runs are not claimed (the worker is at
	// its limit for them).
	SkipAgents []string
}

// StatusCounter is a Store that counts its runs by status in one query,
// without reading them (the nexa_runs gauge of every metrics scrape).
type StatusCounter interface {
	// CountByStatus is how many runs have each status; a status no run
	// has is absent.
	CountByStatus(ctx context.Context) (map[Status]int, error)
}

// Claimer is a Store from which workers take runnable runs (Runnable).
// It is separate from Store so that Store stays what every command needs.
type Claimer interface {
	// Claim takes, in one conditional write, the lease of one run that is
	// Runnable as stored, whose program is offered and whose agent is not
	// skipped, and that no live lease holds (a dead holder's lease has
	// expired, by the store's clock): the epoch is incremented as by
	// Acquire, so a former holder can never save again. Oldest runs first.
	// It returns the run id and the lease, or "" and nil when no run is
	// claimable. Two claimers never get the same run.
	Claim(ctx context.Context, req ClaimRequest) (string, *Lease, error)
}

// Waker is a Store that can tell a worker at once when a save made a run
// runnable (PostgreSQL's LISTEN/NOTIFY), instead of it learning so at its
// next poll.
type Waker interface {
	// WakeUps delivers a value (coalesced) after each commit that made a
	// run runnable, until ctx ends; the channel is closed then, or when
	// the connection it listens on is lost (the caller polls meanwhile
	// and may call WakeUps again).
	WakeUps(ctx context.Context) (<-chan struct{}, error)
}

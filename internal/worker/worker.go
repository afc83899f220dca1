// Package worker is `nexa worker` and the in-process worker of `nexa serve
// --execute`: a loop that claims runnable runs of the programs it has
// (state.Claimer, by source hash) and drives each through the session's
// one assembly (session.WorkerDrive) until it stops, several at once.
//
// A run that stops waiting for a person, or at an unknown outcome, gives
// its slot back: waiting runs hold no slot. A decision, a resolution or a
// hand-over saved anywhere makes the run runnable again, and the store
// wakes the workers (PostgreSQL LISTEN/NOTIFY, state.Waker) or they find
// it at their next poll.
//
// Draining (the first SIGTERM) stops claiming and asks every driven run to
// stop at its next safe point: the current step finishes, the run is saved
// interrupted (which a worker may claim again) and its lease released.
// docs/worker.md is the user's description; docs/reference/runtime.md the
// contract.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/ir"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/state"
)

// Defaults of the worker's settings (docs/reference/cli.md#nexa-worker).
const (
	// DefaultConcurrency is how many runs one worker drives at once: a
	// run spends most of its time waiting for a model or a tool, so a few
	// per core keep a small host busy without starving it.
	DefaultConcurrency = 4
	// DefaultPollInterval is how often a worker looks for runnable runs
	// when nothing wakes it.
	DefaultPollInterval = time.Second
	// DefaultDrainTimeout bounds how long a draining worker waits for its
	// runs' current steps.
	DefaultDrainTimeout = 30 * time.Second
)

// ErrDrainTimeout is returned by Run when the drain timeout passed with
// runs still driven: their leases are left to expire, and a started call
// of theirs becomes an unknown outcome for the worker that rescues them.
var ErrDrainTimeout = errors.New("drain timeout passed with runs still held")

// Telemetry is where the worker reports what it does; the metrics, traces
// and logs of nexa (internal/telemetry) implement it. Every method must
// return quickly and be safe for concurrent use. Nil fields of Hooks are
// skipped.
type Telemetry interface {
	// Claimed: the worker took run's lease. claim is how long the Claim
	// call took; waited is how long the run had been waiting since its
	// last save (by the worker's clock against the store's stamp, so
	// only a rough figure across hosts).
	Claimed(runID, agent string, claim, waited time.Duration)
	// LeaseRenewed: a driven run's lease was renewed (err nil), could
	// not be renewed this time (err), or was lost to another executor
	// (err wraps state.ErrLeaseLost).
	LeaseRenewed(runID string, err error)
	// Event is every progress event of a driven run (provider requests
	// and retries, tool calls with their durations).
	Event(ev engine.Event)
	// Finished: the worker stopped driving run, which is now in status
	// (as last saved; "" when unknown), after d; err is what ended the
	// drive abnormally (a lost lease, a store error, a run it could not
	// set up), nil otherwise.
	Finished(runID, agent string, status state.Status, d time.Duration, err error)
}

// Program is one program a worker offers, as compiled from its file.
type Program struct {
	File    string
	Program *ir.Program
}

// Options configure a worker.
type Options struct {
	// Store is the run store; it must implement state.Claimer.
	Store session.Store
	// Env is the process environment (secrets, provider variables).
	Env session.Env
	// Dir is the worker's directory: its programs were compiled there
	// and its runs' tools execute there.
	Dir string
	// Programs are the programs the worker offers; only runs whose source
	// hash is one of theirs are claimed.
	Programs []Program
	// Concurrency is how many runs are driven at once (DefaultConcurrency
	// when zero).
	Concurrency int
	// AgentLimits cap how many runs of an agent this worker drives at
	// once (within Concurrency).
	AgentLimits map[string]int
	// PollInterval is how often the store is asked when nothing wakes
	// the worker (DefaultPollInterval when zero).
	PollInterval time.Duration
	// DrainTimeout bounds a drain (DefaultDrainTimeout when zero).
	DrainTimeout time.Duration
	// Owner names the worker in its leases; one is made when empty.
	Owner string
	// LeaseTTL and Now are the engine's lease duration and clock (zero:
	// the engine's).
	LeaseTTL time.Duration
	Now      func() time.Time
	// Log receives the worker's structured log; nil discards it.
	Log *slog.Logger
	// Telemetry receives what the worker does; nil discards it.
	Telemetry Telemetry
	// Wake, when not nil, makes the worker look for runs at once each
	// time it receives (an in-process hand-over).
	Wake <-chan struct{}
}

// Worker is one worker; Run drives it.
type Worker struct {
	o      Options
	byHash map[string]*ir.Program
	hashes []string
	claim  state.Claimer

	mu       sync.Mutex
	running  int
	perAgent map[string]int
	freed    chan struct{} // a slot was given back
}

// New checks o and prepares the worker.
func New(o Options) (*Worker, error) {
	c, ok := o.Store.(state.Claimer)
	if !ok {
		return nil, fmt.Errorf("the store %s cannot hand runs to workers", o.Store.Path())
	}
	if len(o.Programs) == 0 {
		return nil, errors.New("a worker needs at least one program")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.Owner == "" {
		o.Owner = "worker " + engine.NewLeaseOwner()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = engine.LeaseTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Telemetry == nil {
		o.Telemetry = nopTelemetry{}
	}
	w := &Worker{o: o, byHash: map[string]*ir.Program{}, claim: c, perAgent: map[string]int{}, freed: make(chan struct{}, 1)}
	for _, p := range o.Programs {
		if _, dup := w.byHash[p.Program.Hash]; !dup {
			w.hashes = append(w.hashes, p.Program.Hash)
		}
		w.byHash[p.Program.Hash] = p.Program
	}
	slices.Sort(w.hashes)
	return w, nil
}

// Run claims and drives runs until drain is closed or ctx ends. On drain
// it claims nothing more, asks every driven run to stop after its current
// step, and returns nil once all are saved and released, or
// ErrDrainTimeout when DrainTimeout passes first: the calls still running
// are then cut off (their processes killed) and the runs released, so the
// worker exits holding no lease and another takes the runs over at once,
// a cut-off call becoming an unknown outcome there. When ctx ends it
// returns at once (ctx's error), leaving the leases of driven runs to
// expire: the second signal.
func (w *Worker) Run(ctx context.Context, drain <-chan struct{}) error {
	stop := make(chan struct{}) // closed on drain: every drive stops at its next safe point
	var drives sync.WaitGroup
	ctx, cutOff := context.WithCancelCause(ctx)
	defer cutOff(nil)
	wake := w.wakeUps(ctx)
	// A claim waits for a store that is restarting (the store retries a
	// lost connection for a while); a drain must not wait for it.
	claims, endClaims := context.WithCancel(ctx)
	defer endClaims()
	go func() {
		select {
		case <-drain:
			endClaims()
		case <-claims.Done():
		}
	}()
	poll := time.NewTicker(w.o.PollInterval)
	defer poll.Stop()
	w.o.Log.Info("worker started", "owner", w.o.Owner, "programs", len(w.hashes), "concurrency", w.o.Concurrency, "store", w.o.Store.Path())
	for {
		w.claimAll(ctx, claims, stop, &drives)
		select {
		case <-ctx.Done():
			w.o.Log.Warn("worker stopped at once; leases of driven runs are left to expire", "running", w.held())
			return ctx.Err()
		case <-drain:
			return w.drain(ctx, cutOff, stop, &drives)
		case <-wake:
		case <-w.o.Wake:
		case <-w.freed:
		case <-poll.C:
		}
	}
}

// cutOffGrace bounds how long a drain whose timeout passed waits for the
// cut-off drives to release their runs: an executor returns as soon as
// the processes of its call are killed, so this is only a guard against
// one that does not.
const cutOffGrace = 5 * time.Second

// drain stops the driven runs at their next safe point and waits for them;
// past DrainTimeout it cuts off their calls (cutOff cancels the drives'
// context) and waits, up to cutOffGrace, for them to release their runs.
func (w *Worker) drain(ctx context.Context, cutOff context.CancelCauseFunc, stop chan struct{}, drives *sync.WaitGroup) error {
	w.o.Log.Info("draining", "running", w.held(), "timeout", w.o.DrainTimeout.String())
	close(stop)
	done := make(chan struct{})
	go func() {
		drives.Wait()
		close(done)
	}()
	timer := time.NewTimer(w.o.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
		w.o.Log.Info("drained: every run saved and released")
		return nil
	case <-ctx.Done():
		w.o.Log.Warn("worker stopped at once while draining; leases of driven runs are left to expire", "running", w.held())
		return ctx.Err()
	case <-timer.C:
	}
	w.o.Log.Warn("drain timeout passed; cutting off the calls still running and releasing their runs", "running", w.held())
	cutOff(ErrDrainTimeout)
	grace := time.NewTimer(cutOffGrace)
	defer grace.Stop()
	select {
	case <-done:
		w.o.Log.Info("released every run after the drain timeout")
	case <-grace.C:
		w.o.Log.Warn("runs still held after the cut-off; their leases are left to expire", "running", w.held())
	}
	return ErrDrainTimeout
}

// held is how many runs the worker drives now.
func (w *Worker) held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}

// claimAll claims runs while slots are free and runs are claimable; the
// claims are made under claims, which a drain ends, and the runs driven
// under ctx.
func (w *Worker) claimAll(ctx, claims context.Context, stop chan struct{}, drives *sync.WaitGroup) {
	for claims.Err() == nil {
		select {
		case <-stop:
			return
		default:
		}
		skip, free := w.slots()
		if !free {
			return
		}
		began := time.Now()
		id, l, err := w.claim.Claim(claims, state.ClaimRequest{Owner: w.o.Owner, TTL: w.o.LeaseTTL, SourceHashes: w.hashes, SkipAgents: skip})
		if err != nil {
			if claims.Err() == nil {
				w.o.Log.Error("claim failed; trying again at the next poll", "error", err.Error())
			}
			return
		}
		if id == "" {
			return
		}
		w.start(ctx, id, l, time.Since(began), stop, drives)
	}
}

// slots reports the agents at their limit and whether a slot is free.
func (w *Worker) slots() (skip []string, free bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for agent, n := range w.o.AgentLimits {
		if w.perAgent[agent] >= n {
			skip = append(skip, agent)
		}
	}
	slices.Sort(skip)
	return skip, w.running < w.o.Concurrency
}

// start drives a claimed run on its own goroutine.
func (w *Worker) start(ctx context.Context, id string, l *state.Lease, claimTook time.Duration, stop chan struct{}, drives *sync.WaitGroup) {
	hdr, err := engine.Header(ctx, w.o.Store, id)
	if err != nil {
		w.o.Log.Error("claimed run cannot be read; released", "run_id", id, "error", err.Error())
		rctx, cancel := context.WithTimeout(context.Background(), w.o.LeaseTTL)
		_ = w.o.Store.Release(rctx, id, l)
		cancel()
		return
	}
	agent := hdr.Config.Agent
	w.o.Telemetry.Claimed(id, agent, claimTook, max(0, w.o.Now().Sub(w.claimableSince(ctx, id, hdr))))
	w.o.Log.Info("claimed", "run_id", id, "agent", agent, "status", string(hdr.Status), "epoch", l.Epoch)
	w.mu.Lock()
	w.running++
	w.perAgent[agent]++
	w.mu.Unlock()
	drives.Add(1)
	go func() {
		defer drives.Done()
		began := time.Now()
		d := session.WorkerDrive{Env: w.o.Env, Store: w.o.Store, Dir: w.o.Dir, Owner: w.o.Owner, Stop: stop,
			Now: w.o.Now, LeaseTTL: w.o.LeaseTTL, Observe: w.o.Telemetry.Event, OnRenew: w.o.Telemetry.LeaseRenewed}
		st, err := d.Drive(ctx, hdr, l, w.byHash[hdr.Config.SourceHash])
		status := state.Status("")
		if st != nil {
			status = st.Status
		}
		w.o.Telemetry.Finished(id, agent, status, time.Since(began), err)
		if err != nil {
			w.o.Log.Error("run stopped with an error", "run_id", id, "agent", agent, "status", string(status), "error", err.Error())
		} else {
			w.o.Log.Info("run stopped", "run_id", id, "agent", agent, "status", string(status))
		}
		w.mu.Lock()
		w.running--
		w.perAgent[agent]--
		w.mu.Unlock()
		select {
		case w.freed <- struct{}{}:
		default:
		}
	}()
}

// claimableSince is when the claimed run became claimable, for the claim
// latency: its last save, or, for a run that waited for approval and was
// claimed because a wait ran out after that save (state.WakeAt), the
// expiry, read with the run's open calls (a claim of a waiting run is
// rare next to steps). The header's time when they cannot be read.
func (w *Worker) claimableSince(ctx context.Context, id string, hdr *state.RunState) time.Time {
	since := hdr.UpdatedAt
	if hdr.Status != state.StatusWaitingApproval {
		return since
	}
	st, _, err := engine.ShowTail(ctx, w.o.Store, id, 1)
	if err != nil {
		return since
	}
	if at := state.WakeAt(st); at != nil && at.After(since) {
		return *at
	}
	return since
}

// wakeUps merges the store's wake-ups (state.Waker) into one channel,
// listening again after a lost connection; nil (never ready) when the
// store has none, and the worker polls.
func (w *Worker) wakeUps(ctx context.Context) <-chan struct{} {
	wk, ok := w.o.Store.(state.Waker)
	if !ok {
		return nil
	}
	out := make(chan struct{}, 1)
	go func() {
		for ctx.Err() == nil {
			ch, err := wk.WakeUps(ctx)
			if err != nil {
				w.o.Log.Warn("cannot listen for wake-ups; polling", "error", err.Error())
			} else {
				for range ch {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(w.o.PollInterval):
			}
		}
	}()
	return out
}

type nopTelemetry struct{}

func (nopTelemetry) Claimed(string, string, time.Duration, time.Duration)        {}
func (nopTelemetry) LeaseRenewed(string, error)                                  {}
func (nopTelemetry) Event(engine.Event)                                          {}
func (nopTelemetry) Finished(string, string, state.Status, time.Duration, error) {}

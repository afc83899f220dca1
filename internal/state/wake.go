package state

import "time"

// WakeAt is when a worker run that waits for a person becomes claimable
// without one: the earliest ExpiresAt of its pending calls, at which the
// resume a worker makes records the call as expired and the run goes on
// (docs/reference/runtime.md#approval-expiry). It is nil for a run that
// is not a worker run, not waiting_approval, or whose pending calls wait
// without a bound: those only move when someone decides. A run already
// Runnable has no pending call, so its WakeAt is nil too.
//
// The stores keep this value as a column written with every save beside
// Runnable, and a claim takes a run whose WakeAt has passed by the store's
// clock, so an expiring approval is noticed by the polling workers and
// not only by whoever next touches the run (docs/worker.md).
func WakeAt(st *RunState) *time.Time {
	if st == nil || st.Config.Driver != DriverWorker || st.Status != StatusWaitingApproval {
		return nil
	}
	var at *time.Time
	for i := range st.Journal {
		e := &st.Journal[i]
		if e.Pending() && e.ExpiresAt != nil && (at == nil || e.ExpiresAt.Before(*at)) {
			t := *e.ExpiresAt
			at = &t
		}
	}
	return at
}

// Claimable reports whether a worker may take the run as it is stored at
// now, if nobody holds its lease: it is Runnable, or its WakeAt has come.
// It is the stores' claim condition, for a caller that checks a run it
// already read (a worker that could not set a claimed run up saves it
// failed only while it is still claimable).
func Claimable(st *RunState, now time.Time) bool {
	if Runnable(st) {
		return true
	}
	at := WakeAt(st)
	return at != nil && !now.Before(*at)
}

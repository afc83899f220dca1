package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// Webhook headers. The signature is "sha256=" and the hex HMAC-SHA256,
// under the shared secret, of the timestamp header, a dot and the body, so
// a receiver can check both origin and freshness.
const (
	HeaderEvent     = "X-Nexa-Event"
	HeaderDelivery  = "X-Nexa-Delivery"
	HeaderTimestamp = "X-Nexa-Timestamp"
	HeaderSignature = "X-Nexa-Signature"
)

// notifyStatuses are the statuses whose arrival is announced.
var notifyStatuses = map[state.Status]bool{
	state.StatusWaitingApproval: true, state.StatusCompleted: true, state.StatusFailed: true,
	state.StatusUnknownOutcome: true, state.StatusTimedOut: true, state.StatusBudgetExhausted: true,
}

// openStatuses are the statuses a run can still leave. A poll lists the
// runs in them (each an indexed query of a few rows) and the runs created
// since the previous poll, never the whole store: completed runs pile up,
// open ones do not.
var openStatuses = []state.Status{
	state.StatusRunning, state.StatusWaitingApproval, state.StatusUnknownOutcome,
	state.StatusInterrupted, state.StatusFailed,
}

// Event is the JSON body of a webhook.
type Event struct {
	// Event is "run." and the status the run entered, e.g.
	// run.waiting_approval.
	Event     string               `json:"event"`
	RunID     string               `json:"run_id"`
	Status    state.Status         `json:"status"`
	Agent     string               `json:"agent"`
	File      string               `json:"file"`
	Revision  int64                `json:"revision"`
	UpdatedAt time.Time            `json:"updated_at"`
	Pending   []engine.PendingCall `json:"pending_calls,omitempty"`
	Unknown   []engine.UnknownCall `json:"unknown_calls,omitempty"`
	Error     *apiError            `json:"error,omitempty"`
	URL       string               `json:"url,omitempty"`
}

// Notifier finds runs that entered a status worth announcing by polling
// the store's run list, and posts one signed JSON event per transition.
// It only reads runs: a notification that cannot be delivered is logged
// and dropped, and never changes a run.
type Notifier struct {
	// URL receives the events (POST).
	URL string
	// Secret signs every event; empty sends no signature header.
	Secret string
	// Store is polled with List; runs are read with engine.ShowTail.
	Store state.Store
	// Interval between polls (default 2s).
	Interval time.Duration
	// Attempts per event (default 5); the waits between them double from
	// Backoff (default 1s).
	Attempts int
	Backoff  time.Duration
	// Client posts the events (default: a client with a 10s timeout).
	Client *http.Client
	// Now and Sleep are the clock; tests replace them.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// BaseURL, when set, links each event to the run's page.
	BaseURL string
	// Redact and Log as in Options.
	Redact func(string) string
	Log    func(format string, args ...any)

	mu     sync.Mutex
	seen   map[string]seenRun // the open runs of the last poll; nil before the first
	newest *state.Cursor      // the newest run the last poll knew of
}

func (n *Notifier) defaults() {
	if n.Interval <= 0 {
		n.Interval = 2 * time.Second
	}
	if n.Attempts <= 0 {
		n.Attempts = 5
	}
	if n.Backoff <= 0 {
		n.Backoff = time.Second
	}
	if n.Client == nil {
		n.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if n.Now == nil {
		n.Now = time.Now
	}
	if n.Sleep == nil {
		n.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	if n.Redact == nil {
		n.Redact = func(s string) string { return s }
	}
	if n.Log == nil {
		n.Log = func(string, ...any) {}
	}
}

// Run polls and delivers until ctx ends. Events are delivered one at a
// time in the order found, each with its retries.
func (n *Notifier) Run(ctx context.Context) {
	n.defaults()
	queue := make(chan Event, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range queue {
			err := n.Deliver(ctx, ev)
			if err != nil && ctx.Err() != nil {
				// Stopping: events already found get one more
				// attempt each, bounded, instead of being lost.
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				err = n.deliverOnce(dctx, ev)
				cancel()
			}
			if err != nil {
				n.Log("notification %s of run %s not delivered: %v", ev.Event, ev.RunID, err)
			}
		}
	}()
	defer func() {
		close(queue)
		<-done
	}()
	for {
		evs, err := n.Poll(ctx)
		if err != nil {
			n.Log("notifications: %v", err)
		}
		for _, ev := range evs {
			select {
			case queue <- ev:
			default:
				n.Log("notification %s of run %s dropped: too many undelivered events", ev.Event, ev.RunID)
			}
		}
		if n.Sleep(ctx, n.Interval) != nil {
			return
		}
	}
}

// Poll looks at the store once and returns an event for every run whose
// status changed into an announced one since the previous poll. The first
// poll only learns the statuses: runs that were already waiting when the
// server started are not announced again.
//
// A run is seen by a poll when it is open (openStatuses) or was created
// since the previous poll; a run that was open and is no longer listed as
// open has finished (or was pruned), and is read on its own.
func (n *Notifier) Poll(ctx context.Context) ([]Event, error) {
	n.defaults()
	open := map[string]state.Summary{}
	var order []string // open runs in the order found, for a stable event order
	for _, st := range openStatuses {
		runs, err := n.Store.List(ctx, state.Filter{Status: st})
		if err != nil {
			return nil, fmt.Errorf("list %s runs: %w", st, err)
		}
		for _, r := range runs {
			open[r.ID] = r
			order = append(order, r.ID)
		}
	}
	n.mu.Lock()
	prev, since := n.seen, n.newest
	n.mu.Unlock()
	fresh, newest, err := n.createdSince(ctx, since, prev == nil)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]seenRun, len(open))
	for id, r := range open {
		seen[id] = seenRun{status: r.Status, revision: r.Revision}
	}
	n.mu.Lock()
	n.seen, n.newest = seen, newest
	n.mu.Unlock()
	if prev == nil {
		return nil, nil
	}
	var evs []Event
	announce := func(r state.Summary, st *state.RunState) {
		// A run found in the status it had at the previous poll is
		// announced again when it was written since: it left the status
		// and came back (approved, then waiting on its next call), or an
		// operator's write changed what it waits on.
		if before, ok := prev[r.ID]; (ok && before.status == r.Status && before.revision == r.Revision) || !notifyStatuses[r.Status] {
			return
		}
		evs = append(evs, n.event(ctx, r, st))
	}
	for _, id := range order {
		announce(open[id], nil)
	}
	for _, r := range fresh {
		if _, ok := open[r.ID]; !ok {
			announce(r, nil) // created and finished between two polls
		}
	}
	for id := range prev {
		if _, ok := open[id]; ok {
			continue
		}
		st, _, err := engine.ShowTail(ctx, n.Store, id, 1)
		if err != nil {
			continue // pruned meanwhile: nothing to announce
		}
		announce(state.Summary{ID: st.ID, Status: st.Status, Agent: st.Config.Agent, File: st.Config.SourceFile,
			CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Revision: st.Revision}, st)
	}
	return evs, nil
}

// seenRun is what a poll remembers of an open run: a later poll that finds
// the same status at another revision knows the run moved in between.
type seenRun struct {
	status   state.Status
	revision int64
}

// createdSince lists the runs created after since (all of them when since
// is nil: the store had none), newest first, and returns the position of
// the newest run. The first poll only needs that position.
func (n *Notifier) createdSince(ctx context.Context, since *state.Cursor, first bool) ([]state.Summary, *state.Cursor, error) {
	const page = 16 // a poll usually finds a few new runs, often none
	var fresh []state.Summary
	f := state.Filter{Limit: page}
	if first {
		f.Limit = 1
	}
	for {
		runs, err := n.Store.List(ctx, f)
		if err != nil {
			return nil, nil, fmt.Errorf("list new runs: %w", err)
		}
		for _, r := range runs {
			if since != nil && !state.CursorOf(r).NewerThan(*since) {
				return fresh, newestOf(fresh, since), nil
			}
			fresh = append(fresh, r)
		}
		if first || len(runs) < f.Limit {
			return fresh, newestOf(fresh, since), nil
		}
		c := state.CursorOf(runs[len(runs)-1])
		f.After = &c
	}
}

// newestOf is the position of the first (newest) run of fresh, else since.
func newestOf(fresh []state.Summary, since *state.Cursor) *state.Cursor {
	if len(fresh) == 0 {
		return since
	}
	c := state.CursorOf(fresh[0])
	return &c
}

// event builds the body for run r, with its pending or unknown calls. st
// is the run's tail when the caller has already read it, else nil.
func (n *Notifier) event(ctx context.Context, r state.Summary, st *state.RunState) Event {
	ev := Event{Event: "run." + string(r.Status), RunID: r.ID, Status: r.Status, Agent: r.Agent, File: r.File,
		Revision: r.Revision, UpdatedAt: r.UpdatedAt}
	if n.BaseURL != "" {
		ev.URL = n.BaseURL + "/runs/" + r.ID
	}
	// The tail keeps every call that is not completed, which is all an
	// event lists, without reading a long run whole.
	if st == nil {
		var err error
		if st, _, err = engine.ShowTail(ctx, n.Store, r.ID, 1); err != nil {
			return ev
		}
	}
	v := viewOf(n.Redact, st)
	if r.Status == state.StatusWaitingApproval {
		ev.Pending = v.PendingCalls
	}
	if r.Status == state.StatusUnknownOutcome {
		ev.Unknown = v.UnknownCalls
	}
	if v.Error != nil {
		ev.Error = &apiError{Code: v.Error.Code, Message: v.Error.Message}
	}
	return ev
}

// CheckNotifyURL refuses a --notify value that is not an http or https
// URL, so a typo is reported at start and not as failed deliveries later.
func CheckNotifyURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--notify takes an http:// or https:// URL, not %q", raw)
	}
	return nil
}

// Sign is the signature header value of body sent at timestamp ts.
func Sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// deliverOnce posts ev in a single attempt.
func (n *Notifier) deliverOnce(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	_, err = n.post(ctx, ev.Event, randomID(), []byte(n.Redact(string(body))))
	return err
}

// Deliver posts ev, retrying a network error, a 429 or a 5xx answer up to
// Attempts times with doubling waits; any other 4xx answer is final.
func (n *Notifier) Deliver(ctx context.Context, ev Event) error {
	n.defaults()
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	body = []byte(n.Redact(string(body)))
	delivery := randomID()
	wait := n.Backoff
	var last error
	for attempt := 1; attempt <= n.Attempts; attempt++ {
		if attempt > 1 {
			if err := n.Sleep(ctx, wait); err != nil {
				return fmt.Errorf("gave up after %d attempt(s): %w (last: %v)", attempt-1, err, last)
			}
			wait *= 2
		}
		retry, err := n.post(ctx, ev.Event, delivery, body)
		if err == nil {
			return nil
		}
		last = err
		if !retry {
			return err
		}
	}
	return fmt.Errorf("gave up after %d attempts: %w", n.Attempts, last)
}

// post sends one attempt and says whether a failure is worth retrying.
func (n *Notifier) post(ctx context.Context, event, delivery string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("notify URL: %w", err)
	}
	ts := strconv.FormatInt(n.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "nexa-serve")
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderDelivery, delivery)
	req.Header.Set(HeaderTimestamp, ts)
	if n.Secret != "" {
		req.Header.Set(HeaderSignature, Sign(n.Secret, ts, body))
	}
	resp, err := n.Client.Do(req)
	if err != nil {
		return true, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("receiver answered %s", resp.Status)
	}
	return false, fmt.Errorf("receiver answered %s (not retried)", resp.Status)
}

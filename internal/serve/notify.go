package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// Webhook headers, as the Standard Webhooks specification names them, so a
// receiver can check a notification with any of its published verifiers.
const (
	// HeaderID is the event's id: the same on every retry of one event,
	// and the same for one run entering one status at one revision, so a
	// receiver can drop a duplicate.
	HeaderID = "webhook-id"
	// HeaderTimestamp is when the attempt was sent, in Unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature is "v1," and the base64 HMAC-SHA256 of
	// "ID.TIMESTAMP.BODY" under the secret (see WebhookKey).
	HeaderSignature = "webhook-signature"
)

// secretPrefix marks a secret written as the specification serializes
// one: the key's bytes in base64 after it.
const secretPrefix = "whsec_"

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

// Event is the JSON body of a webhook, in the Standard Webhooks shape: a
// dotted type, when the event happened, and its data.
type Event struct {
	// Type is "run." and the status the run entered, e.g.
	// run.waiting_approval.
	Type string `json:"type"`
	// Timestamp is when the run entered the status (its last write).
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData is what an event says of its run: enough to act on a waiting
// run (each pending call and the link to its page) without another request.
type EventData struct {
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

// ID is the event's webhook-id: derived from the run, its revision and the
// type, so every retry carries the same id and the same transition found
// again (by a restarted server) does too. It is a hash, with no dots and
// nothing a run's content chooses.
func (ev Event) ID() string {
	h := sha256.Sum256([]byte(ev.Type + "\x00" + ev.Data.RunID + "\x00" + strconv.FormatInt(ev.Data.Revision, 10)))
	return "msg_" + hex.EncodeToString(h[:16])
}

// Notifier finds runs that entered a status worth announcing by polling
// the store's run list, and posts one signed JSON event per transition.
// It only reads runs: a notification that cannot be delivered is logged
// and dropped, and never changes a run.
type Notifier struct {
	// URL receives the events (POST).
	URL string
	// Secret signs every event (see WebhookKey); empty sends no
	// signature header.
	Secret string
	// Store is polled with List; runs are read with engine.ShowTail.
	Store state.Store
	// Interval between polls (default 2s).
	Interval time.Duration
	// Attempts per event (default 5); the waits between them double from
	// Backoff (default 1s).
	Attempts int
	Backoff  time.Duration
	// MaxRetryAfter is the longest Retry-After the notifier honours
	// (default 5m): a receiver asking for a longer wait has the event
	// dropped (logged) rather than retried early or holding up the
	// events behind it.
	MaxRetryAfter time.Duration
	// Client posts the events (default: a client with a 10s timeout).
	// Redirects are never followed, whatever the client says.
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
	if n.MaxRetryAfter <= 0 {
		n.MaxRetryAfter = 5 * time.Minute
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
				n.Log("notification %s of run %s not delivered: %v", ev.Type, ev.Data.RunID, err)
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
				n.Log("notification %s of run %s dropped: too many undelivered events", ev.Type, ev.Data.RunID)
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
	ev := Event{Type: "run." + string(r.Status), Timestamp: r.UpdatedAt.UTC(), Data: EventData{RunID: r.ID, Status: r.Status,
		Agent: r.Agent, File: r.File, Revision: r.Revision, UpdatedAt: r.UpdatedAt}}
	if n.BaseURL != "" {
		ev.Data.URL = n.BaseURL + "/runs/" + r.ID
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
		ev.Data.Pending = v.PendingCalls
	}
	if r.Status == state.StatusUnknownOutcome {
		ev.Data.Unknown = v.UnknownCalls
	}
	if v.Error != nil {
		ev.Data.Error = &apiError{Code: v.Error.Code, Message: v.Error.Message}
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

// WebhookKey is the HMAC key of a webhook secret: a secret written as the
// Standard Webhooks specification serializes one, "whsec_" and base64, is
// that base64 decoded (so a receiver's verifier given the same string
// agrees); any other string is used as it is, its bytes the key.
func WebhookKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("NEXA_NOTIFY_SECRET starts with %s but the rest is not base64 of a key; give whsec_ and standard base64, or a secret without that prefix", secretPrefix)
	}
	return key, nil
}

// Sign is the webhook-signature value of body sent as event id at Unix
// time ts: "v1," and the base64 HMAC-SHA256 of "id.ts.body" under key.
func Sign(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte("."))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// encode is the body of ev as it is signed and sent, redacted.
func (n *Notifier) encode(ev Event) ([]byte, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	return []byte(n.Redact(string(body))), nil
}

// deliverOnce posts ev in a single attempt.
func (n *Notifier) deliverOnce(ctx context.Context, ev Event) error {
	body, err := n.encode(ev)
	if err != nil {
		return err
	}
	return n.post(ctx, ev.ID(), body).err
}

// Deliver posts ev, retrying a network error, a redirect, a 429 or a 5xx
// answer up to Attempts times with doubling waits, and never sooner than a
// Retry-After the receiver sent; any other 4xx answer is final. Each failed
// attempt is logged.
func (n *Notifier) Deliver(ctx context.Context, ev Event) error {
	n.defaults()
	body, err := n.encode(ev)
	if err != nil {
		return err
	}
	id := ev.ID()
	wait := n.Backoff
	var last error
	for attempt := 1; attempt <= n.Attempts; attempt++ {
		a := n.post(ctx, id, body)
		if a.err == nil {
			return nil
		}
		last = a.err
		if !a.retry {
			return a.err
		}
		if attempt == n.Attempts {
			break
		}
		pause := wait
		if a.after > n.MaxRetryAfter {
			return fmt.Errorf("%w; it asked to be retried in %s, longer than the notifier waits (%s): dropped", a.err, a.after, n.MaxRetryAfter)
		}
		if a.after > pause {
			pause = a.after
		}
		if ctx.Err() != nil {
			return fmt.Errorf("gave up after %d attempt(s): %w (last: %v)", attempt, ctx.Err(), last)
		}
		n.Log("notification %s of run %s: attempt %d of %d failed: %v; retrying in %s", ev.Type, ev.Data.RunID, attempt, n.Attempts, a.err, pause)
		if err := n.Sleep(ctx, pause); err != nil {
			return fmt.Errorf("gave up after %d attempt(s): %w (last: %v)", attempt, err, last)
		}
		wait *= 2
	}
	return fmt.Errorf("gave up after %d attempts: %w", n.Attempts, last)
}

// attempt is how one post went: err nil when delivered; retry when the
// failure is worth another attempt; after, the wait the receiver asked for
// with Retry-After (0 when none).
type attempt struct {
	err   error
	retry bool
	after time.Duration
}

// noRedirect keeps the client on the URL it was given: a receiver that
// answers 3xx would otherwise have the event and its signature re-posted
// wherever it points, a loopback or cloud metadata address included.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// post sends one attempt of the event with id and body.
func (n *Notifier) post(ctx context.Context, id string, body []byte) attempt {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, bytes.NewReader(body))
	if err != nil {
		return attempt{err: fmt.Errorf("notify URL: %w", err)}
	}
	ts := strconv.FormatInt(n.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "nexa-serve")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, ts)
	if n.Secret != "" {
		key, err := WebhookKey(n.Secret)
		if err != nil {
			return attempt{err: err}
		}
		req.Header.Set(HeaderSignature, Sign(key, id, ts, body))
	}
	client := *n.Client
	client.CheckRedirect = noRedirect
	resp, err := client.Do(req)
	if err != nil {
		return attempt{err: err, retry: true}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return attempt{}
	case code >= 300 && code < 400:
		to := n.Redact(resp.Header.Get("Location"))
		return attempt{retry: true, err: fmt.Errorf("receiver answered %s (to %q); redirects are not followed: give --notify the final URL", resp.Status, to)}
	case code == http.StatusTooManyRequests || code >= 500:
		return attempt{retry: true, after: retryAfter(resp.Header.Get("Retry-After"), n.Now()),
			err: fmt.Errorf("receiver answered %s", resp.Status)}
	}
	return attempt{err: fmt.Errorf("receiver answered %s (not retried)", resp.Status)}
}

// retryAfter reads a Retry-After value, delay seconds or an HTTP date, as
// the wait from now; 0 when absent, unreadable or already past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(365*24*time.Hour/time.Second) {
			secs = int64(365 * 24 * time.Hour / time.Second) // no overflow
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

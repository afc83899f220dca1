package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/runevents"
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

// openStatuses are the statuses a run can still leave. A poll lists the
// runs in them (each an indexed query of a few rows) and the runs created
// since the previous poll, never the whole store: completed runs pile up,
// open ones do not.
var openStatuses = []state.Status{
	state.StatusRunning, state.StatusWaitingApproval, state.StatusWaitingInput, state.StatusUnknownOutcome,
	state.StatusInterrupted, state.StatusFailed,
}

// Notification is one webhook: a run's event, the same object as a line of
// nexa runs watch --output jsonl (docs/reference/events.md), with the
// webhook-id it is sent under.
type Notification struct {
	// ID is the webhook-id: derived from what the event reports (the
	// run, the type, the call and its decision or outcome, and for
	// run.finished the status and the revision it was found at), never
	// from when it was found, so every retry carries the same id and so
	// does the same event found again by a restarted server. It is a
	// hash, with no dots and nothing a run's content chooses.
	ID    string
	Event runevents.Event
}

// notificationID is the webhook-id of ev, found in the run at revision rev.
func notificationID(ev runevents.Event, rev int64) string {
	key := []string{ev.Type, ev.RunID, ev.CallID, ev.Decision, ev.Outcome, ev.Status}
	if ev.Type == runevents.RunFinished {
		key = append(key, strconv.FormatInt(rev, 10))
	}
	h := sha256.Sum256([]byte(strings.Join(key, "\x00")))
	return "msg_" + hex.EncodeToString(h[:16])
}

// posted reports whether ev is one the webhooks carry: what a person or
// another system may have to act on or record. Progress (model replies,
// tools starting and ending well or badly) is for nexa runs watch.
func posted(ev runevents.Event) bool {
	switch ev.Type {
	case runevents.CallPending, runevents.RunFinished:
		return true
	case runevents.CallDecided:
		return !strings.HasPrefix(ev.DecidedBy, "policy:") // a person's, or an expiry
	case runevents.ToolCompleted:
		return ev.Outcome == "unknown" // somebody must find out what happened
	}
	return false
}

// Notifier follows the runs of the store by polling it, derives their
// events from the store as nexa runs watch does (runevents.Follower: one
// derivation for both), and posts the events worth a notification (posted)
// one signed JSON object each. It only reads runs: a notification that
// cannot be delivered is logged and dropped, and never changes a run.
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
	// BaseURL, when set, links each event to the run's page (url).
	BaseURL string
	// Redact and Log as in Options.
	Redact func(string) string
	Log    func(format string, args ...any)

	mu     sync.Mutex
	runs   map[string]*followed // the open runs of the last poll; nil before the first
	newest *state.Cursor        // the newest run the last poll knew of
}

// followed is what the notifier keeps of a run it follows.
type followed struct {
	follow *runevents.Follower
	// revision is the revision last read; finished the revision whose
	// stop was last announced (or found by the first poll).
	revision, finished int64
	// seq numbers the events posted for the run.
	seq int
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
	queue := make(chan Notification, 256)
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
				n.Log("notification %s of run %s not delivered: %v", ev.Event.Type, ev.Event.RunID, err)
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
				n.Log("notification %s of run %s dropped: too many undelivered events", ev.Event.Type, ev.Event.RunID)
			}
		}
		if n.Sleep(ctx, n.Interval) != nil {
			return
		}
	}
}

// Poll looks at the store once and returns the notifications of every
// step the runs took since the previous poll, in the order found (each
// run's in the order they happened). The first poll only learns where the
// runs stand: what they did before, and calls already waiting when the
// server started, are not announced.
//
// A run is read when it is open (openStatuses) and written since the
// previous poll, or was created since then, or was open and is no longer
// listed as open (it finished, or was pruned). A run found stopped (any
// status but running) at a revision other than the one whose stop was
// last announced has run.finished: a run approved and waiting again on its
// next call between two polls is announced again, with its new pending
// calls. A run that cannot be read is reported in the error, with the
// notifications of the others, and read again by the next poll.
func (n *Notifier) Poll(ctx context.Context) ([]Notification, error) {
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
	prev, since := n.runs, n.newest
	n.mu.Unlock()
	fresh, newest, err := n.createdSince(ctx, since, prev == nil)
	if err != nil {
		return nil, err
	}
	next := make(map[string]*followed, len(open))
	var out []Notification
	if prev == nil {
		for _, id := range order {
			// What is under way when the server starts is not news.
			fr, _, _, err := n.begin(ctx, id)
			if err != nil && !gone(err) {
				return nil, fmt.Errorf("read run %s: %w", id, err)
			}
			if fr != nil {
				fr.finished = fr.revision
				next[id] = fr
			}
		}
	} else {
		isFresh := map[string]bool{}
		for _, r := range fresh {
			isFresh[r.ID] = true
		}
		var errs []error
		visit := func(id string, rev int64) {
			evs, fr, err := n.visit(ctx, prev[id], id, rev, isFresh[id])
			if err != nil {
				// A follower only moves on a read that worked:
				// the next poll tries this run again.
				errs = append(errs, err)
				if prev[id] != nil {
					next[id] = prev[id]
				}
				return
			}
			out = append(out, evs...)
			if fr != nil && fr.open {
				next[id] = fr.followed
			}
		}
		for _, id := range order {
			visit(id, open[id].Revision)
		}
		for _, r := range fresh {
			if _, ok := open[r.ID]; !ok {
				visit(r.ID, -1) // created and stopped between two polls
			}
		}
		for _, id := range slices.Sorted(maps.Keys(prev)) {
			if _, ok := open[id]; !ok && !isFresh[id] {
				visit(id, -1) // no longer open: stopped, or pruned
			}
		}
		err = errors.Join(errs...)
	}
	n.mu.Lock()
	n.runs, n.newest = next, newest
	n.mu.Unlock()
	return out, err
}

// load reads run id through the store, as a runevents.Loader.
func (n *Notifier) load(id string) runevents.Loader {
	return func(ctx context.Context, rows int) (*state.RunState, state.Omitted, error) {
		return engine.ShowTail(ctx, n.Store, id, rows)
	}
}

// begin starts following run id from where it stands, with the events of
// what is under way (runevents.Begin).
func (n *Notifier) begin(ctx context.Context, id string) (*followed, *state.RunState, []runevents.Event, error) {
	st, om, err := n.load(id)(ctx, runevents.Window)
	if err != nil {
		return nil, nil, nil, err
	}
	f, evs := runevents.Begin(st, om, n.Redact)
	return &followed{follow: f, revision: st.Revision, finished: -1}, st, evs, nil
}

// visited is a run as a poll left it: open when it can still change.
type visited struct {
	*followed
	open bool
}

// visit reads run id when it moved since fr (rev is the revision the list
// gave, -1 when unknown) and returns the notifications of its new steps and
// what to keep following; nil when the run is gone. A run the notifier
// does not follow yet is followed from its first step when it was created
// since the previous poll, and else from where it stands (what is under
// way is news).
func (n *Notifier) visit(ctx context.Context, fr *followed, id string, rev int64, fresh bool) ([]Notification, *visited, error) {
	if fr != nil && fr.revision == rev {
		return nil, &visited{followed: fr, open: true}, nil // unchanged, listed as open
	}
	var (
		st  *state.RunState
		evs []runevents.Event
		err error
	)
	switch {
	case fr != nil:
		st, evs, err = fr.follow.Read(ctx, n.load(id))
	case fresh:
		fr = &followed{follow: runevents.FromStart(n.Redact), finished: -1}
		st, evs, err = fr.follow.Read(ctx, n.load(id))
	default:
		fr, st, evs, err = n.begin(ctx, id)
	}
	if err != nil {
		if gone(err) {
			return nil, nil, nil // pruned meanwhile: nothing to announce
		}
		return nil, nil, fmt.Errorf("read run %s: %w", id, err)
	}
	fr.revision = st.Revision
	if st.Status != state.StatusRunning && st.Revision != fr.finished {
		evs = append(evs, fr.follow.Finish(st)...)
		fr.finished = st.Revision
		fr.follow.Forget(st)
	}
	var out []Notification
	for _, ev := range evs {
		if !posted(ev) {
			continue
		}
		fr.seq++
		ev.Seq = fr.seq
		if n.BaseURL != "" {
			ev.URL = n.BaseURL + "/runs/" + st.ID
		}
		out = append(out, Notification{ID: notificationID(ev, st.Revision), Event: ev})
	}
	return out, &visited{followed: fr, open: slices.Contains(openStatuses, st.Status)}, nil
}

// gone reports whether err says the run is not in the store (pruned).
func gone(err error) bool {
	re, ok := engine.AsError(err)
	return ok && re.Code == engine.CodeRunNotFound
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

// encode is the body of a notification as it is signed and sent: its
// event, as one line of the stream prints it, redacted.
func (n *Notifier) encode(nt Notification) ([]byte, error) {
	body, err := runevents.Marshal(nt.Event)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	return []byte(n.Redact(string(body))), nil
}

// deliverOnce posts nt in a single attempt.
func (n *Notifier) deliverOnce(ctx context.Context, nt Notification) error {
	body, err := n.encode(nt)
	if err != nil {
		return err
	}
	return n.post(ctx, nt.ID, body).err
}

// Deliver posts nt, retrying a network error, a redirect, a 429 or a 5xx
// answer up to Attempts times with doubling waits, and never sooner than a
// Retry-After the receiver sent; any other 4xx answer is final. Each failed
// attempt is logged.
func (n *Notifier) Deliver(ctx context.Context, nt Notification) error {
	n.defaults()
	body, err := n.encode(nt)
	if err != nil {
		return err
	}
	id := nt.ID
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
		n.Log("notification %s of run %s: attempt %d of %d failed: %v; retrying in %s", nt.Event.Type, nt.Event.RunID, attempt, n.Attempts, a.err, pause)
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

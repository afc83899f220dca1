package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/runevents"
	"github.com/nexa-run/nexa/internal/state"
)

// specVerify checks a delivery as the Standard Webhooks specification's
// verifiers do, written here from the specification and not from Sign: the
// key is the base64 after "whsec_"; the signed content is
// "webhook-id.webhook-timestamp.body"; webhook-signature is a
// space-separated list of "v1,BASE64(HMAC-SHA256)", any of which may
// match; the timestamp must be within five minutes of now.
func specVerify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers: %v", h)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", ts, err)
	}
	if d := now.Sub(time.Unix(unix, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s too far from now", ts)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no signature in %q matches", sigs)
}

// specSecret is a secret as the specification serializes one.
const specSecret = "whsec_bmV4YS10ZXN0LXdlYmhvb2sta2V5LTAxMjM0NTY3ODk="

func TestSignMatchesAKnownVector(t *testing.T) {
	// Computed outside Go (openssl dgst -sha256 -mac HMAC) over
	// "msg_test.1796117400.{"type":"run.finished"}" with the key
	// "nexa-test-webhook-key-0123456789".
	key, err := WebhookKey(specSecret)
	if err != nil || string(key) != "nexa-test-webhook-key-0123456789" {
		t.Fatalf("WebhookKey(%q) = %q, %v", specSecret, key, err)
	}
	got := Sign(key, "msg_test", "1796117400", []byte(`{"type":"run.finished"}`))
	if want := "v1,y+DrqCy4+bXqnGVf+dCRXuGDpLVcQY2l9Bo7YEyvaWI="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	// Any other string is the key's bytes as they are.
	if key, err := WebhookKey("plain secret"); err != nil || string(key) != "plain secret" {
		t.Fatalf("a plain secret: %q %v", key, err)
	}
	for _, bad := range []string{"whsec_", "whsec_not base64!"} {
		if _, err := WebhookKey(bad); err == nil {
			t.Errorf("WebhookKey(%q) accepted", bad)
		}
	}
}

// TestWebhookFollowsTheStandard: a waiting run's event reaches the
// receiver as the event line runs watch prints, with the run's link, and
// passes the specification's verifier; a changed body or another secret
// does not.
func TestWebhookFollowsTheStandard(t *testing.T) {
	s := newStore(t)
	rc := &receiver{statuses: []int{503}}
	n, _ := newNotifier(t, s, rc)
	n.Secret, n.BaseURL = specSecret, "http://127.0.0.1:8080"
	ctx := context.Background()
	if _, err := n.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	setStatus(t, s, runID, state.StatusRunning)
	setStatus(t, s, runID, state.StatusWaitingApproval)
	evs, err := n.Poll(ctx)
	if err != nil || len(evs) != 1 {
		t.Fatalf("poll: %+v %v", evs, err)
	}
	if err := n.Deliver(ctx, evs[0]); err != nil {
		t.Fatal(err)
	}
	if len(rc.got) != 2 {
		t.Fatalf("%d attempts, want 2 (one 503, then delivered)", len(rc.got))
	}
	for i, r := range rc.got {
		if err := specVerify(specSecret, r.Header, rc.bodies[i], fixedNow); err != nil {
			t.Fatalf("attempt %d does not verify: %v", i, err)
		}
		if err := specVerify(specSecret, r.Header, append([]byte(" "), rc.bodies[i]...), fixedNow); err == nil {
			t.Fatal("a changed body verifies")
		}
		if err := specVerify("whsec_b3RoZXIta2V5", r.Header, rc.bodies[i], fixedNow); err == nil {
			t.Fatal("another secret verifies")
		}
		if err := specVerify(specSecret, r.Header, rc.bodies[i], fixedNow.Add(time.Hour)); err == nil {
			t.Fatal("an old delivery verifies")
		}
		if id := r.Header.Get("webhook-id"); id != rc.got[0].Header.Get("webhook-id") || strings.Contains(id, ".") {
			t.Fatalf("webhook-id %q differs between retries or has a dot", id)
		}
		if r.Header.Get("webhook-timestamp") != strconv.FormatInt(fixedNow.Unix(), 10) {
			t.Fatalf("webhook-timestamp %q", r.Header.Get("webhook-timestamp"))
		}
	}
	// The same stop found again (a restarted server) has the same id.
	if evs[0].ID != rc.got[0].Header.Get("webhook-id") {
		t.Fatal("the id is not the notification's")
	}
	var body map[string]any
	if err := json.Unmarshal(rc.bodies[1], &body); err != nil {
		t.Fatalf("body: %v\n%s", err, rc.bodies[1])
	}
	run := load(t, s)
	want := map[string]any{"type": "run.finished", "run_id": runID, "seq": 1.0, "time": runevents.Stamp(run.UpdatedAt),
		"status": "waiting_approval", "url": "http://127.0.0.1:8080/runs/" + runID}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Fatalf("body %s, want %v", rc.bodies[1], want)
	}
}

// redirector answers every request with 307 to its target and counts them.
type redirector struct {
	target string
	mu     sync.Mutex
	hits   int
}

func (rd *redirector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	rd.mu.Lock()
	rd.hits++
	rd.mu.Unlock()
	http.Redirect(w, r, rd.target, http.StatusTemporaryRedirect)
}

// TestDeliverFollowsNoRedirect: a receiver that redirects has the event
// fail and retried like any failure, logged with the target redacted;
// where it points receives nothing, even when the notifier was given a
// client that follows redirects.
func TestDeliverFollowsNoRedirect(t *testing.T) {
	s := newStore(t)
	second := &receiver{}
	n, sleeps := newNotifier(t, s, second)
	secondURL := n.URL
	rd := &redirector{target: secondURL + "/stolen?key=hunter2-secret"}
	hs := httptest.NewServer(rd)
	t.Cleanup(hs.Close)
	n.URL, n.Client = hs.URL+"/hook", &http.Client{} // a client that would follow
	var logs []string
	n.Log = func(f string, a ...any) { logs = append(logs, n.Redact(fmt.Sprintf(f, a...))) }
	err := n.Deliver(context.Background(), finishedNote(state.StatusCompleted))
	if err == nil || !strings.Contains(err.Error(), "307") || !strings.Contains(err.Error(), "redirects are not followed") {
		t.Fatalf("err = %v", err)
	}
	second.mu.Lock()
	defer second.mu.Unlock()
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if len(second.got) != 0 {
		t.Fatalf("the redirect was followed: the second receiver got %d requests", len(second.got))
	}
	if rd.hits != 5 || len(*sleeps) != 4 {
		t.Fatalf("a redirect is retried like other failures: %d attempts, waits %v", rd.hits, *sleeps)
	}
	all := strings.Join(logs, "\n") + err.Error()
	if len(logs) != 4 || strings.Contains(all, "hunter2-secret") || !strings.Contains(all, "[REDACTED]") {
		t.Fatalf("logs (want 4, redacted):\n%s", all)
	}
}

// TestDeliverHonoursRetryAfter: a 429 (or 503) with Retry-After, in seconds
// or as an HTTP date, is not retried before then (the clock is the
// notifier's, advanced by its sleeper); a wait beyond MaxRetryAfter drops
// the event rather than retrying early.
func TestDeliverHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name, retryAfter string
		status           int
		wait             time.Duration
	}{
		{"seconds", "30", 429, 30 * time.Second},
		{"HTTP date", fixedNow.Add(45 * time.Second).Format(http.TimeFormat), 429, 45 * time.Second},
		{"503 with seconds", "7", 503, 7 * time.Second},
		{"shorter than the backoff", "0", 429, time.Second},
		{"a date already past", fixedNow.Add(-time.Hour).Format(http.TimeFormat), 429, time.Second},
		{"unreadable", "soon", 429, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			var mu sync.Mutex
			var stamps []int64
			first := true
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
				stamps = append(stamps, ts)
				if first {
					first = false
					w.Header().Set("Retry-After", tc.retryAfter)
					w.WriteHeader(tc.status)
				}
			}))
			t.Cleanup(hs.Close)
			n, _ := newNotifier(t, s, &receiver{})
			now := fixedNow
			var sleeps []time.Duration
			n.URL, n.Client = hs.URL, hs.Client()
			n.Now = func() time.Time { return now }
			n.Sleep = func(_ context.Context, d time.Duration) error {
				sleeps = append(sleeps, d)
				now = now.Add(d)
				return nil
			}
			if err := n.Deliver(context.Background(), finishedNote(state.StatusCompleted)); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(stamps) != 2 || len(sleeps) != 1 || sleeps[0] != tc.wait {
				t.Fatalf("attempts at %v, waits %v; want one wait of %s", stamps, sleeps, tc.wait)
			}
			if got := time.Duration(stamps[1]-stamps[0]) * time.Second; got < tc.wait {
				t.Fatalf("retried %s after the first attempt, before the %s asked for", got, tc.wait)
			}
		})
	}

	t.Run("longer than the notifier waits", func(t *testing.T) {
		s := newStore(t)
		var mu sync.Mutex
		attempts := 0
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			attempts++
			mu.Unlock()
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(429)
		}))
		t.Cleanup(hs.Close)
		n, sleeps := newNotifier(t, s, &receiver{})
		n.URL, n.Client = hs.URL, hs.Client()
		err := n.Deliver(context.Background(), finishedNote(state.StatusCompleted))
		if err == nil || !strings.Contains(err.Error(), "retried in 1h0m0s, longer than the notifier waits (5m0s)") {
			t.Fatalf("err = %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if attempts != 1 || len(*sleeps) != 0 {
			t.Fatalf("retried early: %d attempts, waits %v", attempts, *sleeps)
		}
	})
}

package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// flaky fails with errs in order, then succeeds.
type flaky struct {
	mu    sync.Mutex
	errs  []error
	calls int
}

func (f *flaky) Complete(ctx context.Context, req Request, progress func(Event)) (Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= len(f.errs) {
		return Reply{}, f.errs[f.calls-1]
	}
	return Reply{Message: state.Message{Role: state.RoleAssistant, Content: "ok"}, FinishReason: "stop"}, nil
}

func (f *flaky) Identity() state.ProviderIdentity {
	return state.ProviderIdentity{Kind: "fake", Model: "m"}
}

// fakeSleep records the waits instead of sleeping.
type fakeSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *fakeSleep) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

var (
	errServer  = &Error{Kind: KindServer, Status: 500, Transient: true, Message: "boom"}
	errLimited = &Error{Kind: KindRateLimited, Status: 429, Transient: true, RetryAfter: 5 * time.Second, Message: "slow"}
	errBad     = &Error{Kind: KindInvalidRequest, Status: 400, Message: "bad"}
)

func TestRetrySucceedsAfterTransientFailures(t *testing.T) {
	f := &flaky{errs: []error{errServer, errLimited}}
	s := &fakeSleep{}
	var seen []int
	p := WithRetry(f, RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Sleep: s.sleep,
		OnRetry: func(attempt int, err error, d time.Duration) { seen = append(seen, attempt) }})
	reply, err := p.Complete(context.Background(), Request{}, nil)
	if err != nil || reply.Message.Content != "ok" {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
	if f.calls != 3 || len(s.delays) != 2 || len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("calls = %d, delays = %v, retries seen = %v", f.calls, s.delays, seen)
	}
	// First wait: backoff 100ms with equal jitter → [50ms, 100ms].
	if d := s.delays[0]; d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("first delay = %s", d)
	}
	// Second: the server's Retry-After (5s) beats the backoff (≤200ms).
	if s.delays[1] != 5*time.Second {
		t.Errorf("second delay = %s, want Retry-After 5s", s.delays[1])
	}
	if p.Identity() != f.Identity() {
		t.Errorf("identity = %+v", p.Identity())
	}
}

func TestRetryGivesUpAfterAttempts(t *testing.T) {
	f := &flaky{errs: []error{errServer, errServer, errServer, errServer, errServer}}
	s := &fakeSleep{}
	p := WithRetry(f, RetryPolicy{Attempts: 2, BaseDelay: time.Second, MaxDelay: 3 * time.Second, Sleep: s.sleep})
	_, err := p.Complete(context.Background(), Request{}, nil)
	var re *RetryError
	if !errors.As(err, &re) || re.Tries != 3 || re.DeadlineReached {
		t.Fatalf("err = %v", err)
	}
	if pe, ok := AsError(err); !ok || pe.Kind != KindServer {
		t.Errorf("the last *Error is not reachable: %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("an exhausted retry is not a deadline")
	}
	if f.calls != 3 || len(s.delays) != 2 {
		t.Fatalf("calls = %d, delays = %v", f.calls, s.delays)
	}
	if d := s.delays[1]; d < time.Second || d > 2*time.Second {
		t.Errorf("second delay = %s, want in [1s, 2s]", d)
	}
	if !strings.Contains(err.Error(), "gave up after 3 tries") {
		t.Errorf("message = %q", err)
	}
}

func TestRetryDefaultsAndCap(t *testing.T) {
	f := &flaky{errs: make([]error, 10)}
	for i := range f.errs {
		f.errs[i] = errServer
	}
	s := &fakeSleep{}
	p := WithRetry(f, RetryPolicy{Sleep: s.sleep})
	if _, err := p.Complete(context.Background(), Request{}, nil); err == nil {
		t.Fatal("no error")
	}
	if f.calls != 1+DefaultRetryAttempts {
		t.Errorf("calls = %d, want %d", f.calls, 1+DefaultRetryAttempts)
	}
	// Cap: with base 1s and max 2s, no delay exceeds 2s.
	f2 := &flaky{errs: f.errs}
	s2 := &fakeSleep{}
	p = WithRetry(f2, RetryPolicy{Attempts: 6, BaseDelay: time.Second, MaxDelay: 2 * time.Second, Sleep: s2.sleep})
	p.Complete(context.Background(), Request{}, nil)
	for _, d := range s2.delays {
		if d > 2*time.Second || d < 500*time.Millisecond {
			t.Errorf("delay %s outside [0.5s, 2s]", d)
		}
	}
	// Negative attempts: no retry at all.
	f3 := &flaky{errs: []error{errServer}}
	p = WithRetry(f3, RetryPolicy{Attempts: -1, Sleep: s.sleep})
	_, err := p.Complete(context.Background(), Request{}, nil)
	if f3.calls != 1 {
		t.Errorf("calls = %d", f3.calls)
	}
	var re *RetryError
	if !errors.As(err, &re) || re.Tries != 1 {
		t.Errorf("err = %v", err)
	}
}

func TestRetryDoesNotRetryPermanentErrors(t *testing.T) {
	for _, e := range []error{errBad, &Error{Kind: KindAuth, Status: 401}, errors.New("plain"), context.Canceled} {
		f := &flaky{errs: []error{e}}
		s := &fakeSleep{}
		p := WithRetry(f, RetryPolicy{Sleep: s.sleep})
		_, err := p.Complete(context.Background(), Request{}, nil)
		if err != e {
			t.Errorf("err = %v, want %v unchanged", err, e)
		}
		if f.calls != 1 || len(s.delays) != 0 {
			t.Errorf("%v: calls = %d, delays = %v", e, f.calls, s.delays)
		}
	}
	// A permanent error after a transient one stops at once.
	f := &flaky{errs: []error{errServer, errBad}}
	p := WithRetry(f, RetryPolicy{Sleep: (&fakeSleep{}).sleep})
	_, err := p.Complete(context.Background(), Request{}, nil)
	if pe, _ := AsError(err); pe != errBad || f.calls != 2 {
		t.Errorf("err = %v, calls = %d", err, f.calls)
	}
}

func TestRetryRespectsDeadline(t *testing.T) {
	f := &flaky{errs: []error{errServer, errLimited}}
	s := &fakeSleep{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	p := WithRetry(f, RetryPolicy{BaseDelay: 10 * time.Millisecond, Sleep: s.sleep})
	_, err := p.Complete(ctx, Request{}, nil)
	var re *RetryError
	if !errors.As(err, &re) || !re.DeadlineReached || re.Delay != 5*time.Second || re.Tries != 2 {
		t.Fatalf("err = %#v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("a deadline give-up should match context.DeadlineExceeded")
	}
	if pe, ok := AsError(err); !ok || pe.Kind != KindRateLimited {
		t.Errorf("last error not reachable: %v", err)
	}
	if len(s.delays) != 1 {
		t.Errorf("delays = %v (it must not sleep past the deadline)", s.delays)
	}
}

func TestRetryRealSleepIsInterruptible(t *testing.T) {
	f := &flaky{errs: []error{errLimited}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := WithRetry(f, RetryPolicy{}).Complete(ctx, Request{}, nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
}

// The whole stack against a server: two 503s then a reply.
func TestRetryWithOpenAI(t *testing.T) {
	n := 0
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		if n <= 2 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
			return
		}
		sseWriter(w, []string{
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":"stop"}]}`,
			`[DONE]`,
		}, 3)
	})
	s := &fakeSleep{}
	var notes []string
	p := WithRetry(newTestOpenAI(t, f.URL, testKey), RetryPolicy{Sleep: s.sleep, BaseDelay: time.Millisecond,
		OnRetry: func(attempt int, err error, d time.Duration) { notes = append(notes, err.Error()) }})
	reply, err := p.Complete(context.Background(), Request{Messages: []state.Message{{Role: "user", Content: "x"}}, Stream: true}, nil)
	if err != nil || reply.Message.Content != "Done." {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
	if f.count() != 3 || len(s.delays) != 2 || s.delays[0] != time.Second {
		t.Errorf("requests = %d, delays = %v", f.count(), s.delays)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "server") {
		t.Errorf("notes = %q", notes)
	}
}

package provider

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// Defaults of RetryPolicy, chosen so that a briefly overloaded server gets a
// few seconds to recover while a dead one fails within a minute.
const (
	DefaultRetryAttempts  = 3
	DefaultRetryBaseDelay = 1 * time.Second
	DefaultRetryMaxDelay  = 30 * time.Second
)

// RetryPolicy says how WithRetry retries transient provider failures.
// A provider request has no side effects, so retrying is always safe.
type RetryPolicy struct {
	// Attempts is the number of retries after the first try; 0 means
	// DefaultRetryAttempts and a negative value disables retries.
	Attempts int
	// BaseDelay is the backoff before the first retry (doubled for each
	// further one); 0 means DefaultRetryBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps the backoff (not a server's Retry-After); 0 means
	// DefaultRetryMaxDelay.
	MaxDelay time.Duration
	// Sleep waits d or until ctx ends; nil uses a timer. Tests inject a
	// fake to run in microseconds.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is told before each wait (attempt is 1 for the
	// first retry) so the CLI can show "retrying in 2s".
	OnRetry func(attempt int, err error, delay time.Duration)
}

// RetryError is the final failure of a call WithRetry retried at least
// once, or gave up on because the next wait would cross the deadline.
type RetryError struct {
	// Tries is how many requests were made.
	Tries int
	// Err is the last provider error.
	Err error
	// DeadlineReached is set when retrying stopped because the next wait
	// would end after the context's deadline.
	DeadlineReached bool
	// Delay is the wait that was not taken when DeadlineReached.
	Delay time.Duration
}

// Error says how many tries were made and why retrying stopped.
func (e *RetryError) Error() string {
	if e.DeadlineReached {
		return fmt.Sprintf("gave up after %d tries: the next retry (in %s) would pass the deadline: %v", e.Tries, e.Delay.Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("gave up after %d tries: %v", e.Tries, e.Err)
}

// Unwrap exposes the last provider error (errors.As finds its *Error) and,
// when the deadline stopped the retries, context.DeadlineExceeded, so the
// runtime reports a timeout rather than a provider failure.
func (e *RetryError) Unwrap() []error {
	if e.DeadlineReached {
		return []error{e.Err, context.DeadlineExceeded}
	}
	return []error{e.Err}
}

// WithRetry wraps p so that transient failures (*Error with Transient) are
// retried with exponential backoff and jitter. A server's RetryAfter is a
// floor: the wait is max(RetryAfter, backoff), so a retry never comes
// earlier than the server asked, and never later than needed by more than
// the backoff. No wait ever ends past ctx's deadline: when the next one
// would, WithRetry returns a *RetryError with DeadlineReached at once.
// Non-transient errors and context errors are returned unchanged after the
// first try. Identity passes through.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	if policy.Attempts == 0 {
		policy.Attempts = DefaultRetryAttempts
	}
	if policy.BaseDelay <= 0 {
		policy.BaseDelay = DefaultRetryBaseDelay
	}
	if policy.MaxDelay <= 0 {
		policy.MaxDelay = DefaultRetryMaxDelay
	}
	if policy.MaxDelay < policy.BaseDelay {
		policy.MaxDelay = policy.BaseDelay
	}
	if policy.Sleep == nil {
		policy.Sleep = sleepCtx
	}
	return &retrying{p: p, policy: policy}
}

// retrying is the Provider WithRetry returns.
type retrying struct {
	p      Provider
	policy RetryPolicy
}

// Identity is the wrapped provider's: retrying does not change the endpoint.
func (r *retrying) Identity() state.ProviderIdentity { return r.p.Identity() }

// Complete calls the wrapped provider until it succeeds, fails for good, or
// the retries or the deadline run out.
func (r *retrying) Complete(ctx context.Context, req Request, progress func(Event)) (Reply, error) {
	for try := 1; ; try++ {
		reply, err := r.p.Complete(ctx, req, progress)
		if err == nil {
			return reply, nil
		}
		pe, ok := AsError(err)
		if !ok || !pe.Transient || ctx.Err() != nil {
			if try == 1 {
				return Reply{}, err
			}
			return Reply{}, &RetryError{Tries: try, Err: err}
		}
		if try > r.policy.Attempts {
			return Reply{}, &RetryError{Tries: try, Err: err}
		}
		delay := r.delay(try, pe.RetryAfter)
		if dl, ok := ctx.Deadline(); ok && !time.Now().Add(delay).Before(dl) {
			return Reply{}, &RetryError{Tries: try, Err: err, DeadlineReached: true, Delay: delay}
		}
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(try, err, delay)
		}
		if serr := r.policy.Sleep(ctx, delay); serr != nil {
			return Reply{}, fmt.Errorf("waiting to retry after %v: %w", err, serr)
		}
	}
}

// delay is the wait before retry number try (1-based): BaseDelay doubled
// per retry and capped at MaxDelay, then "equal jitter" (half fixed, half
// random) so that clients that failed together do not return together;
// never shorter than the server's RetryAfter.
func (r *retrying) delay(try int, retryAfter time.Duration) time.Duration {
	d := r.policy.BaseDelay
	for i := 1; i < try && d < r.policy.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.policy.MaxDelay)
	half := d / 2
	d = half + time.Duration(rand.Int64N(int64(d-half)+1))
	return max(d, retryAfter)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

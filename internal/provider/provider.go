// Package provider defines how the runtime asks a model for the next step,
// and holds the implementations: an offline scripted model, OpenAI-compatible
// Chat Completions and the Anthropic Messages API.
//
//   - NewScript reads a JSON file of turns (see Script and
//     docs/providers.md); the turn that answers is the number of assistant
//     messages already in the request, so it is stateless and resume-safe.
//   - NewOpenAI talks to any OpenAI-compatible Chat Completions server,
//     streaming or not; it reads no environment variable itself.
//   - NewAnthropic speaks the Anthropic Messages API (tool_use and
//     tool_result blocks), streaming or not, on the same terms.
//   - WithRetry retries transient failures (*Error with Transient) with
//     exponential backoff and jitter, honouring Retry-After and never
//     waiting past the context's deadline.
//   - WithTimeouts bounds each request (a whole reply, and the silence of
//     a stream), so a server that never answers fails and is retried.
//
// Every reply a provider returns has passed checkReply (reply.go): a reply
// that is empty or breaks its protocol's rules is a transient error, never
// an answer. The HTTP providers read no reply past the limits of limits.go
// (MaxReplyBytes, MaxStreamBytes); one that passes them is a permanent
// error, and nothing of it is returned.
//
// Every failure a provider reports is an *Error whose Kind is one of the
// Kind* constants and whose Message never contains an API key.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nexa-run/nexa/internal/state"
)

// ToolSpec is a tool as offered to the model.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
}

// Request is one provider call: the whole conversation so far (the first
// message is the system prompt when there is one) and the tools on offer.
type Request struct {
	Model    string
	Messages []state.Message
	Tools    []ToolSpec
	// ToolChoice is "auto", "required" or "none" ("" means auto).
	ToolChoice  string
	Temperature *float64
	MaxTokens   int
	// JSONOutput asks for a JSON object answer (output_format: "json" or
	// an implemented protocol).
	JSONOutput bool
	// Output, when set, is the protocol the final answer must implement:
	// the provider gives its schema to the model in the protocol's own
	// way (response_format json_schema, a forced Anthropic tool), since
	// a model cannot fill fields it was never told about.
	Output *OutputSchema
	// Stream selects streaming where the provider supports it.
	Stream bool
	// CacheKey names the conversation for the provider's prompt cache
	// (the run id): OpenAI's API is sent it as prompt_cache_key, so the
	// requests of one run, before and after a resume, reach the same
	// cache. Empty sends none.
	CacheKey string
	// ParallelToolCalls says whether the calls of one reply may run at
	// once (--max-parallel-tools above 1), so that a server that asks
	// (OpenAI's parallel_tool_calls) is told the truth.
	ParallelToolCalls bool
}

// OutputSchema is the protocol a final answer must implement.
type OutputSchema struct {
	// Name is the protocol's name, as the model sees it.
	Name string
	// Schema is the protocol's JSON Schema (an object schema).
	Schema json.RawMessage
}

// Reply is a complete reply: a provider never returns a partial one.
type Reply struct {
	// Message is the assistant message (role assistant, text and tool
	// calls with ids).
	Message state.Message
	// Raw is the provider's response as received (for a stream, the
	// assembled response), kept for audit.
	Raw json.RawMessage
	// Usage of this reply: tokens as the provider counted them (estimated
	// for a script), ProviderRequests 1 (the request that produced the
	// reply; failed tries are not counted) and ToolCalls 0 (the runtime
	// counts the calls it journals).
	Usage state.Usage
	// FinishReason as reported by the provider.
	FinishReason string
}

// Event reports progress while a reply is being produced (streamed text);
// it is for display only.
type Event struct {
	TextDelta string
}

// Provider produces replies.
type Provider interface {
	// Complete returns a complete reply or an error; transient failures
	// are reported as *Error with Transient set, and the caller retries.
	Complete(ctx context.Context, req Request, progress func(Event)) (Reply, error)
	// Identity names the endpoint for the run's configuration; never a key.
	Identity() state.ProviderIdentity
}

// Error is a provider failure with what the runtime needs to decide on a
// retry. Message never contains a key.
type Error struct {
	// Kind is a short cause: "connection", "rate_limited", "server",
	// "auth", "model_not_found", "not_found", "invalid_request",
	// "stream_cut", "script_exhausted", "malformed_reply", "bad_reply",
	// "timeout" (the Kind* constants).
	Kind       string
	Status     int // HTTP status, 0 if none
	Transient  bool
	RetryAfter time.Duration
	Message    string
}

// Error renders the kind, the status and the message, for logs and the
// CLI's error object.
func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider %s (HTTP %d): %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("provider %s: %s", e.Kind, e.Message)
}

// AsError finds the *Error in err's chain, so callers that wrap provider
// errors with context can still read the kind and transience.
func AsError(err error) (*Error, bool) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe, true
	}
	return nil, false
}

// Pricer is a provider that prices its replies (Reply.Usage.CostUSD): the
// prices package wraps a provider in one when a price table is in use.
type Pricer interface {
	// PriceKnown reports whether the provider's model has a price, so
	// that a money budget is refused at once rather than never checked.
	PriceKnown() bool
}

// PriceKnown reports whether p prices its replies; a provider that is not
// a Pricer has no price.
func PriceKnown(p Provider) bool {
	pr, ok := p.(Pricer)
	return ok && pr.PriceKnown()
}

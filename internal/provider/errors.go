package provider

import "net/http"

// The kinds of *Error, as short stable strings the runtime and the CLI can
// switch on and print.
const (
	KindConnection    = "connection"
	KindRateLimited   = "rate_limited"
	KindServer        = "server"
	KindAuth          = "auth"
	KindModelNotFound = "model_not_found"
	// KindNotFound is a 404 that does not name the model: usually a base
	// URL without its /v1 suffix.
	KindNotFound        = "not_found"
	KindInvalidRequest  = "invalid_request"
	KindStreamCut       = "stream_cut"
	KindScriptExhausted = "script_exhausted"
	// KindScriptInvalid is a script turn that is wrong (an unknown
	// field, a value of the wrong type, a turn that says nothing),
	// found when a request first reaches it. It is not transient.
	KindScriptInvalid  = "script_invalid"
	KindMalformedReply = "malformed_reply"
	// KindBadReply is a reply in the protocol's shape that breaks its
	// rules or says nothing (no message, calls that are not a list, a
	// tool_calls finish without calls, an empty answer, impossible token
	// counts). It is transient: a model that answered badly once may
	// answer well when asked again, and a run never completes on it. The
	// exception is a reply over a size limit (limits.go), which is not
	// transient: a server that sends too much will do it again.
	KindBadReply = "bad_reply"
	// KindTimeout is a request that got no complete reply within the
	// per-request timeout, or whose stream went silent for longer than
	// the idle timeout (see Timeouts). It is transient.
	KindTimeout = "timeout"
)

// classifyStatus maps an HTTP status to an error kind and whether a retry
// may help: rate limits and server errors pass, everything else in 4xx is a
// property of the request and fails the same way again.
func classifyStatus(status int) (kind string, transient bool) {
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited, true
	case status >= 500:
		return KindServer, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth, false
	case status == http.StatusNotFound:
		return KindModelNotFound, false
	case status == http.StatusRequestTimeout:
		// A request timeout is the server giving up waiting, not a
		// rejection of the request itself.
		return KindServer, true
	default:
		return KindInvalidRequest, false
	}
}

// IsTransient reports whether err is a provider failure that a retry may
// cure; the retry wrapper and the runtime share this one test.
func IsTransient(err error) bool {
	pe, ok := AsError(err)
	return ok && pe.Transient
}

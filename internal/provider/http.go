package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/telemetry"
)

// This file holds what the HTTP providers (OpenAI and Anthropic) share:
// configuration checks, the classification of failed requests and their
// messages, the end of a stream, ids for tool calls sent without one, and
// key redaction. What differs between
// the two protocols is a field of httpAPI or a parameter, never a copy.

// httpAPI is the part of an HTTP provider the shared code needs: where
// requests go, the key that must never appear in a message, and the
// wording that differs between protocols.
type httpAPI struct {
	// name prefixes errors that are not the provider's ("openai request:
	// context canceled").
	name string
	// baseURL is the configured base URL without its trailing slash.
	baseURL string
	apiKey  string
	// keyHint says where the key is configured; it follows "set " or
	// "check " in the messages for HTTP 401 and 403.
	keyHint string
	// notFound is the message for a 404 that does not name the model,
	// which usually means a wrong base URL.
	notFound string
	// overloadedStatus is the 5xx status the server uses for "overloaded"
	// (Anthropic's 529); 0 when there is none.
	overloadedStatus int
	// limits bound the size of a reply (limits.go); the client's
	// transport applies the same ones.
	limits *replyLimits
	// sdkStatus finds the SDK's error for an HTTP error status, with the
	// status and the response it carries.
	sdkStatus func(error) (status int, res *http.Response, ok bool)
	// notAReply words a response without an error status whose body the
	// SDK could not read (an HTML page from a wrong base URL), given its
	// Content-Type; the SDK's error follows. nil when the SDK leaves the
	// body to the caller, which reports it itself.
	notAReply func(contentType string) string
}

// checkBaseURL returns the base URL a provider named name sends requests
// to: base, or def when base is empty, without its trailing slash. Anything
// but an absolute http(s) URL is refused with an error that gives example
// and never contains key.
func checkBaseURL(name, base, def, example, key string) (string, error) {
	base = strings.TrimSpace(base)
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s provider: base URL %q is not an absolute http(s) URL (e.g. %s)", name, redactString(base, key), example)
	}
	return strings.TrimRight(base, "/"), nil
}

// httpClient returns c, or when c is nil a client whose only timeout is on
// response headers (streams may legitimately run for minutes; WithTimeouts
// bounds whole requests), with its transport wrapped so that reads of a
// response report to the request's idle timeout (watchTransport) and no
// response is read past lim (limitTransport), and each request made inside
// a span carries its trace context to the server (telemetry.Transport).
func httpClient(c *http.Client, lim *replyLimits) *http.Client {
	if c != nil {
		out := *c
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		out.Transport = limitTransport{base: watchTransport{base: telemetry.Transport(base)}, limits: lim}
		return &out
	}
	var base http.RoundTripper = http.DefaultTransport
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		// A server that accepts and never answers fails (and is
		// retried) instead of hanging until the deadline; the time
		// a stream takes is not limited here (its size is).
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		base = t
	}
	return &http.Client{Transport: limitTransport{base: watchTransport{base: telemetry.Transport(base)}, limits: lim}}
}

// errorResponse finds the HTTP error a failed request got, with its headers
// and (bounded) body: those of the SDK's error when sdkError finds one,
// else those of res when its status is an error the SDK could not parse.
// status is 0 when the failure has no HTTP status.
func errorResponse(err error, res *http.Response, sdkError func(error) (status int, res *http.Response, ok bool)) (status int, header http.Header, body []byte) {
	if s, r, ok := sdkError(err); ok {
		if r != nil {
			return s, r.Header, readBody(r)
		}
		return s, nil, nil
	}
	if res != nil && res.StatusCode >= 400 {
		return res.StatusCode, res.Header, readBody(res)
	}
	return 0, nil, nil
}

// readBody reads what is left of an error response, bounded.
func readBody(res *http.Response) []byte {
	if res == nil || res.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	return b
}

// classify is the one place a failed request becomes an error, for both
// protocols: the caller's context first (its error, which is not the
// provider's fault and must not be retried), then a reply over a size
// limit (a permanent bad reply), an HTTP error status (statusError), a
// body that is not a reply (notAReply), and last the transport
// (transportError). model is the one a 404 is about.
func (h *httpAPI) classify(ctx context.Context, err error, res *http.Response, model string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s request: %w", h.name, ctxErr)
	}
	if e := tooLarge(err, h.limits); e != nil {
		return e
	}
	if status, header, body := errorResponse(err, res, h.sdkStatus); status != 0 {
		return h.statusError(status, header, body, model)
	}
	if h.notAReply != nil && res != nil && h.networkError(err) == nil {
		return &Error{Kind: KindMalformedReply, Status: res.StatusCode,
			Message: h.notAReply(res.Header.Get("Content-Type")) + " " + h.redact(err.Error())}
	}
	return h.transportError(err)
}

// statusError classifies an HTTP error status; model is the one named when
// a 404 is about the model. A 5xx, overloadedStatus included, is a
// transient server error.
func (h *httpAPI) statusError(status int, header http.Header, body []byte, model string) *Error {
	kind, transient := classifyStatus(status)
	server := errorText(body)
	e := &Error{Kind: kind, Status: status, Transient: transient}
	switch kind {
	case KindAuth:
		if h.apiKey == "" {
			e.Message = fmt.Sprintf("the server requires an API key (HTTP %d) and none is configured; set %s", status, h.keyHint)
		} else {
			e.Message = fmt.Sprintf("the API key was rejected (HTTP %d); check %s", status, h.keyHint)
		}
	case KindModelNotFound:
		if !strings.Contains(strings.ToLower(server), "model") {
			e.Kind = KindNotFound
			e.Message = h.notFound
		} else {
			e.Message = fmt.Sprintf("model %q is not available at %s; check --model", model, h.baseURL)
		}
	case KindRateLimited:
		e.RetryAfter = retryAfter(header, time.Now())
		e.Message = "the server is rate limiting requests"
	case KindServer:
		e.RetryAfter = retryAfter(header, time.Now())
		if h.overloadedStatus != 0 && status == h.overloadedStatus {
			e.Message = "the server is overloaded"
		} else {
			e.Message = "the server failed to answer"
		}
	default:
		e.Message = "the server rejected the request"
	}
	if server != "" {
		e.Message += ": " + truncate(server, 500)
	}
	e.Message = h.redact(e.Message)
	return e
}

// networkError classifies a failure of the network (DNS, TLS, a refused,
// reset or dropped connection); nil when err is something else.
func (h *httpAPI) networkError(err error) *Error {
	msg := h.redact(err.Error())
	var dnsErr *net.DNSError
	var certErr *x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return &Error{Kind: KindConnection, Message: fmt.Sprintf("cannot resolve the host of %s: %s", h.baseURL, msg)}
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &certInvalid):
		return &Error{Kind: KindConnection, Message: fmt.Sprintf("TLS verification of %s failed: %s", h.baseURL, msg)}
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Kind: KindConnection, Transient: true, Message: fmt.Sprintf("cannot reach %s: %s", h.baseURL, msg)}
	}
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &urlErr) {
		return &Error{Kind: KindConnection, Transient: true, Message: fmt.Sprintf("cannot reach %s: %s", h.baseURL, msg)}
	}
	return nil
}

// transportError classifies a failure without an HTTP status: a reply over
// a size limit (tooLarge), the network (see networkError), or a request the
// client could not build or send.
func (h *httpAPI) transportError(err error) *Error {
	if e := tooLarge(err, h.limits); e != nil {
		return e
	}
	if e := h.networkError(err); e != nil {
		return e
	}
	return &Error{Kind: KindConnection, Message: fmt.Sprintf("request to %s failed: %s", h.baseURL, h.redact(err.Error()))}
}

// errNoBody is the error for a response without a body to read.
func errNoBody() *Error {
	return &Error{Kind: KindMalformedReply, Message: "the server returned no response body"}
}

// streamEnd checks how the read loop of a stream ended: with the caller's
// context (its error, which is not the provider's fault and must not be
// retried), past a size limit (a permanent KindBadReply, see tooLarge),
// with a broken connection (readErr, the decoder's error), or
// cleanly but before the reply was complete; both cuts are transient
// *Errors of KindStreamCut. ended says how a clean stream ended and missing
// what the protocol sends last, as in "the stream ended before the model
// finished its reply (no message_stop)". nil means the reply is complete.
func (h *httpAPI) streamEnd(ctx context.Context, readErr error, complete bool, ended, missing string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s stream: %w", h.name, err)
	}
	if e := tooLarge(readErr, h.limits); e != nil {
		return e
	}
	if readErr != nil {
		return &Error{Kind: KindStreamCut, Transient: true, Message: "the stream broke before the reply was complete: " + h.redact(readErr.Error())}
	}
	if !complete {
		return &Error{Kind: KindStreamCut, Transient: true, Message: ended + " before the model finished its reply (no " + missing + ")"}
	}
	return nil
}

// fillCallIDs gives an id to every call a server sent without one (some
// local servers do): derived from the reply's bytes, so it is stable for a
// saved reply and unlikely to repeat across turns.
func fillCallIDs(calls []state.ToolCall, raw []byte) {
	var prefix string
	for i := range calls {
		if calls[i].ID != "" {
			continue
		}
		if prefix == "" {
			sum := sha256.Sum256(raw)
			prefix = "call_" + hex.EncodeToString(sum[:6])
		}
		calls[i].ID = prefix + "_" + strconv.Itoa(i+1)
	}
}

// encodeFillingIDs returns the raw form of a reply assembled from a stream,
// which encode renders from calls (among the rest). Ids missing on the wire
// are derived from the reply encoded without them (fillCallIDs), then
// written into the raw copy too by encoding again.
func encodeFillingIDs(calls []state.ToolCall, encode func() (json.RawMessage, error)) (json.RawMessage, error) {
	raw, err := encode()
	if err != nil {
		return nil, err
	}
	needIDs := false
	for _, c := range calls {
		needIDs = needIDs || c.ID == ""
	}
	if !needIDs {
		return raw, nil
	}
	fillCallIDs(calls, raw)
	return encode()
}

// errorText finds the human message in an error body: OpenAI's
// {"error": {"message"}}, Ollama's {"error": "..."}, FastAPI's
// {"detail": ...}, {"message": ...}, else the text itself.
func errorText(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(body, &v) == nil {
		str := func(raw json.RawMessage) string {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s
			}
			return ""
		}
		if raw, ok := v["error"]; ok {
			if s := str(raw); s != "" {
				return s
			}
			var inner map[string]json.RawMessage
			if json.Unmarshal(raw, &inner) == nil {
				if s := str(inner["message"]); s != "" {
					return s
				}
			}
		}
		for _, k := range []string{"message", "detail"} {
			if s := str(v[k]); s != "" {
				return s
			}
		}
		if raw, ok := v["detail"]; ok {
			return string(raw)
		}
	}
	return string(body)
}

// retryAfter reads Retry-After-Ms, then Retry-After (seconds or an HTTP
// date); zero when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// truncate shortens s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// redact removes the API key from text meant for people.
func (h *httpAPI) redact(s string) string { return redactString(s, h.apiKey) }

// redactString replaces every occurrence of key in s.
func redactString(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// redactJSON removes key from a raw response before it is saved in the run
// (a run never holds a secret); a key too short to be a real secret is left
// alone so that the JSON is not mangled.
func redactJSON(raw json.RawMessage, key string) json.RawMessage {
	if len(key) < 8 || !bytes.Contains(raw, []byte(key)) {
		return raw
	}
	out := bytes.ReplaceAll(raw, []byte(key), []byte("[redacted]"))
	if !json.Valid(out) {
		// Keep it valid JSON for the store, and still without the key.
		out, _ = json.Marshal(string(out))
	}
	return out
}

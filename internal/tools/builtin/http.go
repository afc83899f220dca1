package builtin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexa-run/nexa/internal/tool"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

const (
	defaultHTTPTimeout = 30 * time.Second
	maxRedirects       = 5
)

// keptHeaders are the response headers shown to the model: enough to act
// on (type, size, redirects, rate limits, caching), without cookies.
var keptHeaders = []string{"Content-Type", "Content-Length", "Location", "Retry-After", "Etag", "Last-Modified", "Date"}

type httpResult struct {
	Status        int               `json:"status"`
	StatusText    string            `json:"status_text"`
	URL           string            `json:"url,omitempty"`
	Headers       map[string]string `json:"headers"`
	Body          string            `json:"body"`
	BodyBase64    string            `json:"body_base64,omitempty"`
	BodyTruncated bool              `json:"body_truncated,omitempty"`
	BodyError     string            `json:"body_error,omitempty"`
}

// httpTool returns the handler of one method. See the package
// documentation for how failures map to known and unknown outcomes.
func httpTool(method string) handler {
	return func(ctx context.Context, c *call) (tool.Outcome, error) {
		a := struct {
			URL         string            `json:"url"`
			Headers     map[string]string `json:"headers"`
			Body        string            `json:"body"`
			ContentType string            `json:"content_type"`
			Timeout     int               `json:"timeout"`
		}{}
		if err := c.decode(&a); err != nil {
			return argError(err), nil
		}
		u, err := url.Parse(a.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("%q is not an absolute http or https URL; nothing was sent", a.URL), nil
		}
		timeout := defaultHTTPTimeout
		if a.Timeout > 0 {
			timeout = time.Duration(a.Timeout) * time.Second
		}
		if c.inv.Timeout > 0 && c.inv.Timeout < timeout {
			timeout = c.inv.Timeout
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()

		// wrote turns true once the request was (maybe partly) written to
		// a connection: from then on the server may have acted on it.
		var wrote atomic.Bool
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }}
		var body io.Reader
		if a.Body != "" {
			body = strings.NewReader(a.Body)
		}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, u.String(), body)
		if err != nil {
			return fail("cannot build the request: %v; nothing was sent", err), nil
		}
		for k, v := range a.Headers {
			if http.CanonicalHeaderKey(k) == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		switch {
		case a.ContentType != "":
			req.Header.Set("Content-Type", a.ContentType)
		case a.Body != "" && req.Header.Get("Content-Type") == "":
			if json.Valid([]byte(a.Body)) {
				req.Header.Set("Content-Type", "application/json")
			} else {
				req.Header.Set("Content-Type", "text/plain; charset=utf-8")
			}
		}
		if req.Header.Get("User-Agent") == "" {
			req.Header.Set("User-Agent", c.opts.UserAgent)
		}
		if method != http.MethodGet {
			// docs/reference/runtime.md#idempotency-key: the key lets the server drop a duplicate
			// if an operator re-runs the call after an unknown outcome.
			req.Header.Set("Idempotency-Key", c.inv.IdempotencyKey())
		}

		g := &guard{allow: parseAllow(c.opts.HTTPAllow, c.inv.HTTPAllow), timeout: timeout, resolver: c.opts.resolver}
		transport := &http.Transport{
			// No proxy from the environment: through a proxy the
			// address dialled would be the proxy's, and the guard could
			// not see (or refuse) the internal host behind it.
			Proxy:                 nil,
			DialContext:           g.dial,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: 0, // bounded by ctx
			DisableKeepAlives:     true,
			ForceAttemptHTTP2:     true,
		}
		defer transport.CloseIdleConnections()
		client := &http.Client{
			Transport: transport,
			CheckRedirect: func(r *http.Request, via []*http.Request) error {
				// Changes are never re-sent elsewhere; reads follow a
				// few redirects and then show the last one.
				if method != http.MethodGet || len(via) > maxRedirects {
					return http.ErrUseLastResponse
				}
				return nil
			},
		}
		start := time.Now()
		resp, err := client.Do(req)
		var refused *refusedError
		if errors.As(err, &refused) {
			// Refused before connecting, also on a redirect hop: a
			// known failure whatever was written before.
			return fail("%s", refusal(method, u, err, refused)), nil
		}
		if err != nil {
			if !wrote.Load() {
				return fail("%s %s: request not sent: %s", method, redact(u), reason(err, ctx)), nil
			}
			return tool.Outcome{}, unknown(c.inv.Tool.Name, "%s %s: the request was sent but no response arrived (%s after %s); whether it took effect is unknown",
				method, redact(u), reason(err, ctx), time.Since(start).Round(time.Millisecond))
		}
		defer resp.Body.Close()
		res := httpResult{Status: resp.StatusCode, StatusText: http.StatusText(resp.StatusCode), Headers: map[string]string{}}
		if final := resp.Request.URL.String(); final != u.String() {
			res.URL = final
		}
		for _, h := range keptHeaders {
			if v := resp.Header.Get(h); v != "" {
				res.Headers[h] = v
			}
		}
		// The status is known from here on: a body cut short is
		// reported, but the outcome is no longer in doubt.
		limit := c.opts.OutputLimit
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
		if len(data) > limit {
			data = data[:limit]
			res.BodyTruncated = true
		}
		if rerr != nil {
			res.BodyError = "reading the body failed: " + reason(rerr, ctx)
		}
		if isText(data, res.BodyTruncated) {
			res.Body = strings.ToValidUTF8(string(data), "\uFFFD")
		} else {
			res.BodyBase64 = base64.StdEncoding.EncodeToString(data)
		}
		out := okJSON(res)
		out.Success = out.Success && resp.StatusCode < 400
		return out, nil
	}
}

// refusal words a request the guard stopped, naming the address, why it
// is internal and the http_allow entry that would let it through.
func refusal(method string, u *url.URL, err error, r *refusedError) string {
	what := fmt.Sprintf("%s %s refused: %s; std.http does not connect to internal addresses, so nothing was sent", method, redact(u), r)
	var ue *url.Error
	if errors.As(err, &ue) {
		if hop, perr := url.Parse(ue.URL); perr == nil && hop.String() != u.String() {
			what = fmt.Sprintf("%s %s was redirected to %s, which is refused: %s; std.http does not connect to internal addresses, so the redirect was not followed", method, redact(u), redact(hop), r)
		}
	}
	return fmt.Sprintf("%s. If the agent must reach it, add %q to the agent's http_allow setting", what, r.suggestion())
}

// isText reports whether a body can be shown as text; a cut body may end
// inside a character.
func isText(b []byte, cut bool) bool {
	if cut {
		for i := 0; i < 3 && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	return utf8.Valid(b) && !strings.ContainsRune(string(b), 0)
}

// reason words a transport error, naming the timeout when it was ours.
func reason(err error, ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timed out"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the connection was closed"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// redact drops credentials from a URL shown in messages.
func redact(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = url.User("xxxxx")
	return c.String()
}

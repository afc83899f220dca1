package mcptool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Authorization of HTTP servers. A run is headless: nexa never opens a
// browser, listens for a redirect or asks anyone to sign in. A server
// either needs no authorization, or is given OAuth client credentials in
// its spec (OAuthSpec), with which nexa fetches a bearer token from the
// token URL (the client-credentials grant), sends it with every request,
// fetches a new one when it expires, and once more when the server answers
// 401 to it. A server that answers 401 (or 403 with a Bearer challenge)
// with no credentials configured, or refuses the fresh token, fails with
// an error wrapping ErrAuthRequired, which says what to configure.
//
// This is done in an http.RoundTripper below the SDK rather than with the
// SDK's OAuthHandler, whose Authorize is the hook of interactive flows:
// with none configured the SDK never starts one, and the transport decides
// alone what a 401 means.

// ErrAuthRequired is wrapped by the errors of Connect and of calls when an
// HTTP server wants authorization nexa cannot give in a run: no client
// credentials are configured, the token endpoint refuses them, or the
// server refuses the token they give. The request was refused, so a call
// that fails with it did not run.
var ErrAuthRequired = errors.New("the MCP server requires authorization")

// AuthError describes an authorization the server asked for and nexa could
// not give. It never holds a secret or a token.
type AuthError struct {
	// Server is the MCP endpoint, Status the HTTP status it answered
	// (0 when the token endpoint failed first).
	Server string
	Status int
	// Challenge summarises the server's WWW-Authenticate header (the
	// scheme and its realm, scope, error and resource_metadata).
	Challenge string
	// Credentials says that client credentials were configured.
	Credentials bool
	// Reason is what went wrong with them, when they were.
	Reason string
}

func (e *AuthError) Error() string {
	var b strings.Builder
	if e.Status != 0 {
		fmt.Fprintf(&b, "the MCP server answered %d %s", e.Status, http.StatusText(e.Status))
		if e.Challenge != "" {
			fmt.Fprintf(&b, " (WWW-Authenticate: %s)", e.Challenge)
		}
	}
	if e.Credentials {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s; check client_id, client_secret, token_url and scope of the server's spec and the secrets they name", e.Reason)
		return b.String()
	}
	b.WriteString(" and asks for authorization; nexa never starts an interactive sign-in during a run: give the server OAuth client credentials after its URL (client_id=ID client_secret=$NAME token_url=URL, the secret NAME in the secrets file), or use a server that needs none")
	return b.String()
}

// Unwrap makes errors.Is(err, ErrAuthRequired) hold.
func (e *AuthError) Unwrap() error { return ErrAuthRequired }

// oauthCredentials are resolved client credentials.
type oauthCredentials struct {
	clientID, clientSecret, tokenURL string
	scopes                           []string
}

// resolveOAuth resolves the $NAMEs of an OAuthSpec with lookup and checks
// the URLs: a secret or a token travels in clear only to a loopback host.
func resolveOAuth(sp Spec, lookup func(string) (string, bool)) (*oauthCredentials, error) {
	o := sp.OAuth
	if o == nil {
		return nil, nil
	}
	var c oauthCredentials
	var err error
	if c.clientID, err = o.ClientID.Resolve(lookup); err != nil {
		return nil, err
	}
	if c.clientSecret, err = o.ClientSecret.Resolve(lookup); err != nil {
		return nil, err
	}
	if c.tokenURL, err = o.TokenURL.Resolve(lookup); err != nil {
		return nil, err
	}
	if c.clientID == "" || c.clientSecret == "" {
		return nil, errors.New("client_id and client_secret must not be empty")
	}
	if err := secureURL("token_url", c.tokenURL); err != nil {
		return nil, err
	}
	if err := secureURL("the server URL", sp.URL); err != nil {
		return nil, err
	}
	c.scopes = strings.Fields(o.Scope)
	return &c, nil
}

// secureURL accepts an absolute https URL, or http to a loopback host (a
// server on the same machine, as in tests).
func secureURL(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s %q is not an absolute URL", what, raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%s %q: client credentials and tokens are sent only over https (or http to a loopback host)", what, raw)
}

// authTransport adds the bearer token of creds (nil: none) to every
// request and turns an authorization nexa cannot give into an AuthError.
type authTransport struct {
	base        http.RoundTripper
	server      string
	creds       *oauthCredentials
	tokenClient *http.Client // reaches the token endpoint

	mu  sync.Mutex
	tok *oauth2.Token // the current token, until it expires
}

func newAuthTransport(base http.RoundTripper, server string, creds *oauthCredentials, tokenClient *http.Client) *authTransport {
	return &authTransport{base: base, server: server, creds: creds, tokenClient: tokenClient}
}

// token returns the current token, or fetches one, bounded by ctx, when
// there is none, it expired (or expires within 10 seconds, oauth2's
// margin), or fresh is set (the server refused the current one). Fetches
// are one at a time, so concurrent calls share the token they get.
func (t *authTransport) token(ctx context.Context, fresh bool) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fresh || !t.tok.Valid() {
		cfg := &clientcredentials.Config{ClientID: t.creds.clientID, ClientSecret: t.creds.clientSecret, TokenURL: t.creds.tokenURL, Scopes: t.creds.scopes}
		tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, t.tokenClient))
		if err != nil {
			return "", t.tokenError(err)
		}
		t.tok = tok
	}
	return t.tok.AccessToken, nil
}

// tokenError describes a failed token request without its body, which a
// token endpoint may fill with anything: a refusal of the credentials is an
// AuthError, anything else (unreachable, 5xx) a plain error.
func (t *authTransport) tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		code := re.Response.StatusCode
		if code == http.StatusBadRequest || code == http.StatusUnauthorized || code == http.StatusForbidden {
			reason := fmt.Sprintf("the token endpoint refused the client credentials (%d", code)
			if re.ErrorCode != "" {
				reason += ", " + re.ErrorCode
			}
			if re.ErrorDescription != "" {
				reason += ": " + re.ErrorDescription
			}
			return &AuthError{Server: t.server, Credentials: true, Reason: reason + ")"}
		}
		return fmt.Errorf("the token endpoint %s answered %d %s", t.creds.tokenURL, code, http.StatusText(code))
	}
	if errors.As(err, &re) {
		return fmt.Errorf("the token endpoint %s gave no usable token", t.creds.tokenURL)
	}
	return fmt.Errorf("fetch a token from %s: %w", t.creds.tokenURL, err)
}

// RoundTrip sends req with the current token; on a 401 it fetches a new
// token and sends req once more (the server refused it before handling
// it), when its body can be sent again.
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.send(req, false)
	if err != nil || !t.challenged(resp) {
		return resp, err
	}
	if t.creds == nil || req.GetBody == nil && req.Body != nil && req.Body != http.NoBody {
		return nil, t.refused(resp, "the server refused the token")
	}
	drain(resp)
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	resp, err = t.send(retry, true)
	if err != nil || !t.challenged(resp) {
		return resp, err
	}
	return nil, t.refused(resp, "the server refused a token fetched afresh with the client credentials")
}

func (t *authTransport) send(req *http.Request, fresh bool) (*http.Response, error) {
	if t.creds != nil {
		tok, err := t.token(req.Context(), fresh)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.base.RoundTrip(req)
}

// challenged reports whether resp asks for authorization: any 401, or a
// 403 with a Bearer challenge (a scope the token lacks).
func (t *authTransport) challenged(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		for _, c := range cs {
			if strings.EqualFold(c.Scheme, "bearer") {
				return true
			}
		}
	}
	return false
}

// refused builds the AuthError of a challenged response and closes it.
func (t *authTransport) refused(resp *http.Response, reason string) error {
	defer drain(resp)
	e := &AuthError{Server: t.server, Status: resp.StatusCode, Challenge: challengeSummary(resp.Header.Values("WWW-Authenticate")), Credentials: t.creds != nil}
	if e.Credentials {
		e.Reason = reason
	}
	return e
}

// CloseIdleConnections passes on to the base transport.
func (t *authTransport) CloseIdleConnections() { closeIdle(t.base) }

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// challengeSummary renders the WWW-Authenticate challenges with the
// parameters that help an operator (never a token: challenges carry none).
func challengeSummary(values []string) string {
	cs, err := oauthex.ParseWWWAuthenticate(values)
	if err != nil || len(cs) == 0 {
		return ""
	}
	var parts []string
	for _, c := range cs {
		var b bytes.Buffer
		scheme := c.Scheme // the parser lower-cases it
		if scheme != "" {
			scheme = strings.ToUpper(scheme[:1]) + scheme[1:]
		}
		b.WriteString(scheme)
		keys := make([]string, 0, len(c.Params))
		for k := range c.Params {
			switch k {
			case "realm", "scope", "error", "error_description", "resource_metadata":
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for i, k := range keys {
			sep := ", "
			if i == 0 {
				sep = " "
			}
			fmt.Fprintf(&b, "%s%s=%q", sep, k, c.Params[k])
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

package mcptest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Authorizer is an OAuth authorization server for tests that knows one
// client and grants tokens with the client-credentials grant only, and the
// middleware of a resource server that accepts them. Tokens are "tok-N"
// (N counting from 1), so a test can tell a fresh token from an old one.
type Authorizer struct {
	ClientID, ClientSecret string
	// ExpiresIn is the lifetime announced with each token, in seconds
	// (0: none announced). Below 10 a client using golang.org/x/oauth2
	// takes the token as expired at once (its margin), so it fetches a
	// new one for every request: a refresh without waiting.
	ExpiresIn int

	mu      sync.Mutex
	issued  int
	valid   map[string]bool
	scopes  []string
	seen    []string
	refused int
}

// NewAuthorizer returns an authorizer for the client id and secret.
func NewAuthorizer(id, secret string) *Authorizer {
	return &Authorizer{ClientID: id, ClientSecret: secret, valid: map[string]bool{}}
}

// TokenHandler is the token endpoint: a POST with grant_type
// client_credentials and the client's id and secret, in HTTP Basic or in
// the form. A wrong secret gets 401 invalid_client, another grant 400
// unsupported_grant_type, as RFC 6749 says.
func (a *Authorizer) TokenHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
			oauthError(w, http.StatusBadRequest, "invalid_request")
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if id != a.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(a.ClientSecret)) != 1 {
			oauthError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
		if r.PostForm.Get("grant_type") != "client_credentials" {
			oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
			return
		}
		a.mu.Lock()
		a.issued++
		tok := fmt.Sprintf("tok-%d", a.issued)
		a.valid[tok] = true
		a.scopes = append(a.scopes, r.PostForm.Get("scope"))
		a.mu.Unlock()
		body := map[string]any{"access_token": tok, "token_type": "Bearer"}
		if a.ExpiresIn > 0 {
			body["expires_in"] = a.ExpiresIn
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// Require lets through requests with a valid bearer token and answers the
// others 401 with a Bearer challenge naming the scope and the resource
// metadata, as a server that expects an interactive sign-in does.
func (a *Authorizer) Require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.mu.Lock()
		good := ok && a.valid[tok]
		if good {
			a.seen = append(a.seen, tok)
		} else {
			a.refused++
		}
		a.mu.Unlock()
		if !good {
			Challenge(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Challenge answers 401 with the Bearer challenge of Require.
func Challenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcp", scope="notes.write", resource_metadata="http://auth.invalid/.well-known/oauth-protected-resource"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

// Revoke makes every token issued so far invalid, as a server that rotated
// its keys does.
func (a *Authorizer) Revoke() {
	a.mu.Lock()
	a.valid = map[string]bool{}
	a.mu.Unlock()
}

// Issued is how many tokens the endpoint granted.
func (a *Authorizer) Issued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issued
}

// Seen are the tokens of the requests let through, in order.
func (a *Authorizer) Seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// Scopes are the scope parameters of the token requests, in order.
func (a *Authorizer) Scopes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.scopes...)
}

// Refused is how many requests Require answered 401.
func (a *Authorizer) Refused() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused
}

// HTTPHandler serves srv over Streamable HTTP: stateless (the 2026-07-28
// revision's shape: every request stands alone, server/discover instead of
// initialize) or with sessions, as servers of the earlier revisions keep;
// answers as single JSON objects (jsonAnswers) or SSE streams.
func HTTPHandler(srv *mcp.Server, stateless, jsonAnswers bool) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless, JSONResponse: jsonAnswers})
}

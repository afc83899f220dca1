// Package serve is `nexa serve`: an approval inbox over the run store, as a
// web page and a JSON API beside it, with optional webhooks.
//
// People decide on pending calls from a browser or a script instead of
// copying run and call ids into the shell of the process that stopped. The
// server never loads or saves a run itself: it reads through runtime.Show
// and the store's List, and writes through the runtime's operator calls
// (runtime.DecideAtRevision, runtime.ResolveAtRevision), so a decision is
// recorded exactly as `nexa runs approve` records it, under the run's
// lease and conditioned on the revision the person saw.
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
)

// DefaultAddr is where the server listens unless told otherwise: the
// loopback interface only, so nobody else on the network reaches it.
const DefaultAddr = "127.0.0.1:8080"

// Resumer continues a run after decisions were recorded (serve --execute).
type Resumer interface {
	// Resume continues the run. It takes the run's lease itself, so a run
	// that another executor drives is refused, never driven twice.
	Resume(ctx context.Context, run *state.RunState) error
}

// Options configure a Server. The CLI maps its flags to them.
type Options struct {
	// Store is the run store; the server reads and writes runs only
	// through the runtime's lifecycle calls on it.
	Store state.Store
	// StoreName is shown on the pages (a path or URL, password redacted).
	StoreName string
	// StoreFlag is the --store value the server was started with (empty:
	// NEXA_STORE or the default). Resume commands on the pages repeat it so
	// they reach this store; the page's redaction hides a password in it.
	StoreFlag string
	// Addr is the listen address; DefaultAddr when empty.
	Addr string
	// AllowHosts are the names (--allow-host, each optionally with
	// :PORT) the server answers for besides its own address, loopback
	// and localhost: the name of a reverse proxy or domain in front of
	// it. Every other Host header is refused with 421, which is what
	// stops a DNS-rebinding page.
	AllowHosts []string
	// Token, when set, is required of every request: as a bearer token on
	// the API and through a login form on the pages. A non-loopback Addr
	// without a token is refused.
	Token string
	// TokenName names the token holder in decision records when User is
	// empty.
	TokenName string
	// User names the person deciding in decision records (--user); it wins
	// over TokenName.
	User string
	// Execute, when set, continues a run once its last pending call is
	// decided; nil leaves that to the pipeline (nexa agent --resume).
	Execute Resumer
	// Notify, when set, receives webhook events (see Notifier).
	Notify *Notifier
	// Redact removes known secret values from text before it is shown.
	Redact func(string) string
	// Log receives one line per server event (decisions, executions,
	// failed notifications); nil discards.
	Log io.Writer
	// EditChecker builds, for a run, the checker of arguments a person
	// edits before approving (nexa runs approve --args checks the same
	// way); nil refuses edits.
	EditChecker func(*state.RunState) (engine.EditChecker, error)
	// Now is the clock of decision records; time.Now when nil.
	Now func() time.Time
	// Metrics, when set, answers GET /metrics (Prometheus), under the
	// API's token when the server has one; nil serves no metrics.
	Metrics http.Handler
}

// Server is the inbox: an http.Handler with the pages and the API.
type Server struct {
	o        Options
	mux      *http.ServeMux
	allow    []allowedHost // Options.AllowHosts, parsed
	key      []byte        // signs CSRF tokens
	mu       sync.Mutex
	sessions map[string]bool // session id → logged in
	logMu    sync.Mutex
	// running counts the runs --execute is continuing; Run waits for
	// them before it returns, so stopping the server never cuts a run
	// short.
	running sync.WaitGroup
}

// New checks o and builds the server; it does not listen.
func New(o Options) (*Server, error) {
	if o.Store == nil {
		return nil, errors.New("serve: no store")
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TokenName == "" {
		o.TokenName = "token"
	}
	s := &Server{o: o, mux: http.NewServeMux(), sessions: map[string]bool{}}
	for _, h := range o.AllowHosts {
		a, err := parseAllowHost(h)
		if err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		s.allow = append(s.allow, a)
	}
	s.key = make([]byte, 32)
	if _, err := rand.Read(s.key); err != nil {
		return nil, fmt.Errorf("serve: random key: %w", err)
	}
	s.routes()
	if o.Metrics != nil {
		s.mux.Handle("GET /metrics", s.metricsAuth(o.Metrics))
	}
	s.apiFallback()
	return s, nil
}

// metricsAuth guards /metrics like the API: with a token, only a request
// bearing it (Authorization: Bearer TOKEN) reads the metrics, since they
// tell which tools and runs the server sees.
func (s *Server) metricsAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.apiAuth(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nexa"`)
			http.Error(w, "this server needs a token: send Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Codes of API requests that name no endpoint.
const (
	// CodeNotFound: no endpoint has this path (HTTP 404).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the path is an endpoint, not for this
	// method (HTTP 405, with Allow).
	CodeMethodNotAllowed = "method_not_allowed"
)

// apiFallback answers every /api/ request no endpoint takes with a JSON
// error object, as the endpoints do, instead of the plain-text "404 page
// not found" of the mux: a client parses every API answer as JSON. The
// token is checked first, so without it nothing tells which paths exist.
func (s *Server) apiFallback() {
	h := func(w http.ResponseWriter, r *http.Request) {
		if !s.apiAuth(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nexa"`)
			s.writeAPIError(w, apiError{Code: CodeUnauthorized, Message: "this server needs a token: send Authorization: Bearer TOKEN"})
			return
		}
		if allow := s.apiMethods(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeAPIError(w, apiError{Code: CodeMethodNotAllowed, Message: fmt.Sprintf("%s %s is not an endpoint; this path takes %s", r.Method, r.URL.Path, strings.Join(allow, ", "))})
			return
		}
		s.writeAPIError(w, apiError{Code: CodeNotFound, Message: fmt.Sprintf("no API endpoint %s (the endpoints are under /api/runs)", r.URL.Path)})
	}
	s.mux.HandleFunc("/api/", h)
	s.mux.HandleFunc("/api", h)
}

// apiMethods lists the methods an endpoint at r's path takes, none when no
// endpoint has that path.
func (s *Server) apiMethods(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pat := s.mux.Handler(r2); pat != "" && pat != "/api/" && pat != "/api" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	return allow
}

// CheckBind refuses to listen beyond the loopback interface without a
// token: a decision server reachable from the network with no
// authentication would let anyone approve a risky call.
func CheckBind(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q is not host:port: %w", addr, err)
	}
	if isLoopback(host) || token != "" {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without a token: anyone who reaches it could approve calls; set --token or NEXA_SERVE_TOKEN, or bind to 127.0.0.1", addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP makes the Server an http.Handler. The Host check comes before
// everything else, so a request for a host this server does not answer
// for reads nothing, makes no session and records nothing.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// "Origin: null" on form posts, which the origin check must refuse.
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'")
	if !s.hostAllowed(r, r.Host) {
		s.refuseHost(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Run listens on Options.Addr and serves until ctx ends; with a notifier
// it polls the store for transitions meanwhile. ready, when not nil,
// receives the address actually bound (useful with port 0).
func (s *Server) Run(ctx context.Context, ready func(addr string)) error {
	if err := CheckBind(s.o.Addr, s.o.Token); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.o.Addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr().String())
	}
	if s.o.Notify != nil {
		// The first poll learns where runs stand before any request is
		// served, so a decision made at once is still a transition.
		if _, err := s.o.Notify.Poll(ctx); err != nil {
			s.logf("notifications: %v", err)
		}
	}
	var wg sync.WaitGroup
	if s.o.Notify != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.o.Notify.Run(ctx)
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		wg.Wait()
		s.running.Wait()
		return nil
	case err := <-errc:
		wg.Wait()
		return fmt.Errorf("serve: %w", err)
	}
}

// logf writes one line to the server log.
func (s *Server) logf(format string, args ...any) {
	if s.o.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.o.Log, "%s %s\n", s.o.Now().UTC().Format(time.RFC3339), s.o.Redact(fmt.Sprintf(format, args...)))
}

// who names the person behind a decision.
func (s *Server) who() string {
	if s.o.User != "" {
		return s.o.User
	}
	if s.o.Token != "" {
		return s.o.TokenName
	}
	return "local"
}

func randomID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

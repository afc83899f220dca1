package serve

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// CodeMisdirected is the error code of a request whose Host header names
// neither this server nor a name the operator allowed (HTTP 421).
const CodeMisdirected = "misdirected_request"

// allowedHost is one --allow-host entry: a name, and a port when the
// entry named one (0: any port).
type allowedHost struct {
	name string
	port int
}

// CheckAllowHost checks one --allow-host value: a host name or IP address,
// optionally with a port (inbox.example.com, inbox.example.com:443,
// [2001:db8::1]:8443). Schemes, paths, wildcards and empty names are
// refused, so a typo is reported at start and not as 421 answers later.
func CheckAllowHost(v string) error {
	_, err := parseAllowHost(v)
	return err
}

func parseAllowHost(v string) (allowedHost, error) {
	bad := func(why string) (allowedHost, error) {
		return allowedHost{}, fmt.Errorf("--allow-host %q: %s; give a host name, optionally with :PORT (inbox.example.com or inbox.example.com:443)", v, why)
	}
	if v == "" {
		return bad("empty")
	}
	if strings.ContainsAny(v, "/*?#@ \t") {
		return bad("not a bare host name")
	}
	name, port, err := splitHostHeader(v)
	if err != nil {
		return bad(err.Error())
	}
	if name == "" {
		return bad("no name")
	}
	h := allowedHost{name: name}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return bad("the port is not a number from 1 to 65535")
		}
		h.port = n
	}
	return h, nil
}

// splitHostHeader splits a Host header (or an Origin's host) into a
// lower-case name, without IPv6 brackets, and its port ("" when none).
func splitHostHeader(h string) (name, port string, err error) {
	if h == "" {
		return "", "", fmt.Errorf("no host")
	}
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", "", fmt.Errorf("unclosed [")
		}
		name, rest := h[1:end], h[end+1:]
		switch {
		case rest == "":
		case strings.HasPrefix(rest, ":") && len(rest) > 1:
			port = rest[1:]
		default:
			return "", "", fmt.Errorf("junk after ]")
		}
		if net.ParseIP(name) == nil {
			return "", "", fmt.Errorf("%q in brackets is not an IPv6 address", name)
		}
		return strings.ToLower(name), port, nil
	}
	if strings.Count(h, ":") > 1 {
		return "", "", fmt.Errorf("an IPv6 address must be in brackets")
	}
	name, port, found := strings.Cut(h, ":")
	if found && port == "" {
		return "", "", fmt.Errorf("empty port")
	}
	return strings.ToLower(name), port, nil
}

// hostAllowed reports whether a Host header value (or the host of an
// Origin) names this server: the address the connection arrived on, a
// loopback address, localhost — each with the bound port when a port is
// given — or a name the operator allowed with --allow-host.
//
// A page of a hostile domain rebound to 127.0.0.1 reaches the server with
// its own name in Host, which is none of these; that is the whole defence
// against DNS rebinding, so every request passes it first.
func (s *Server) hostAllowed(r *http.Request, host string) bool {
	name, port, err := splitHostHeader(host)
	if err != nil || name == "" {
		return false
	}
	for _, a := range s.allow {
		if a.name == name && (a.port == 0 || strconv.Itoa(a.port) == port) {
			return true
		}
	}
	localIP, localPort := s.localAddr(r)
	if port != "" && (localPort == 0 || port != strconv.Itoa(localPort)) {
		return false
	}
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	if ip == nil {
		return false
	}
	return ip.IsLoopback() || (localIP != nil && ip.Equal(localIP))
}

// localAddr is the address and port the request arrived on: the
// connection's own (what the server is bound to, resolved when it listens
// on every interface or on port 0), else Options.Addr.
func (s *Server) localAddr(r *http.Request) (net.IP, int) {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return a.IP, a.Port
	}
	host, port, err := net.SplitHostPort(s.o.Addr)
	if err != nil {
		return nil, 0
	}
	p, _ := strconv.Atoi(port)
	return net.ParseIP(host), p
}

// sameOrigin refuses requests a browser sent from another site's page: an
// Origin header, when present, must name a host this server answers for
// (hostAllowed), never merely the request's own Host, which a rebinding
// page chooses.
func (s *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return s.hostAllowed(r, u.Host)
}

// refuseHost answers a request whose Host this server does not answer for:
// 421, a JSON error on the API and a short text elsewhere. Nothing of the
// request is read beyond its headers.
func (s *Server) refuseHost(w http.ResponseWriter, r *http.Request) {
	s.logf("refused a request for host %q (%s %s): not this server's address, loopback, localhost or an --allow-host name", r.Host, r.Method, r.URL.Path)
	msg := "this server does not answer for the host this request names; use its address (127.0.0.1:PORT or localhost:PORT) or start it with --allow-host NAME"
	if r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/") {
		s.writeAPIError(w, apiError{Code: CodeMisdirected, Message: msg})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusMisdirectedRequest)
	_, _ = fmt.Fprintln(w, "421 Misdirected Request: "+msg+".")
}

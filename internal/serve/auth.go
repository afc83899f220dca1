package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// sessionCookie holds a random session id. It is HttpOnly (no script
// reads it) and SameSite=Strict (no other site's page sends it), and it
// is the key of the session's CSRF token.
const sessionCookie = "nexa_session"

// maxSessions caps the sessions kept in memory.
const maxSessions = 10000

// tokenOK compares a presented token with the server's in constant time
// (over fixed-length digests, so not even the length leaks).
func (s *Server) tokenOK(given string) bool {
	a := sha256.Sum256([]byte(given))
	b := sha256.Sum256([]byte(s.o.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1 && s.o.Token != ""
}

// session returns the request's session id, creating one (and setting the
// cookie) when there is none or it is unknown.
func (s *Server) session(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		_, ok := s.sessions[c.Value]
		s.mu.Unlock()
		if ok {
			return c.Value
		}
	}
	id := randomID()
	s.mu.Lock()
	if len(s.sessions) >= maxSessions {
		// Every cookieless request makes a session: past the cap,
		// forget those that never signed in (their forms then ask
		// for a reload) rather than grow without bound.
		for k, in := range s.sessions {
			if !in {
				delete(s.sessions, k)
			}
		}
	}
	s.sessions[id] = false
	s.mu.Unlock()
	s.setSessionCookie(w, r, id)
	return id
}

func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// loggedIn reports whether the request's session passed the login form
// (always true when the server has no token).
func (s *Server) loggedIn(r *http.Request) bool {
	if s.o.Token == "" {
		return true
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[c.Value]
}

// csrfToken is the form token of a session: an HMAC of the session id
// under the server's random key, so a page of another site can neither
// read nor forge it.
func (s *Server) csrfToken(sessionID string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("csrf:" + sessionID))
	return hex.EncodeToString(m.Sum(nil))
}

// csrfOK checks a posted form's token against the session cookie.
func (s *Server) csrfOK(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	s.mu.Lock()
	_, known := s.sessions[c.Value]
	s.mu.Unlock()
	if !known {
		return false
	}
	want := s.csrfToken(c.Value)
	got := r.PostFormValue("csrf")
	return subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// apiAuth checks the API's bearer token; without a server token the API
// is open (loopback only, see CheckBind).
func (s *Server) apiAuth(r *http.Request) bool {
	if s.o.Token == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return ok && s.tokenOK(strings.TrimSpace(tok))
}

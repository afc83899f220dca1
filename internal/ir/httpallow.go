package ir

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ParseHTTPAllow reads one entry of an agent's http_allow setting: a host
// name or an IP literal, optionally with a port ("localhost",
// "127.0.0.1:8080", "[::1]:9000", "::1"). It returns the host in canonical
// form (a lower-case name without a trailing dot, or an IP address with an
// IPv4-mapped IPv6 form written as IPv4) and the port, 0 meaning any. The
// compiler checks entries with it and std.http matches them with it, so
// both read the setting the same way.
func ParseHTTPAllow(entry string) (host string, port int, err error) {
	if entry == "" {
		return "", 0, fmt.Errorf("an empty entry")
	}
	if strings.ContainsAny(entry, "/?#@* \t") {
		return "", 0, fmt.Errorf("%q is not a host or host:port (no scheme, path, user or wildcard)", entry)
	}
	h, p, hasPort := entry, "", false
	switch {
	case strings.HasPrefix(entry, "["):
		end := strings.Index(entry, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("%q has no closing ]", entry)
		}
		h = entry[1:end]
		switch rest := entry[end+1:]; {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			p, hasPort = rest[1:], true
		default:
			return "", 0, fmt.Errorf("%q has text after ]", entry)
		}
		if a, err := netip.ParseAddr(h); err != nil || !a.Is6() || a.Zone() != "" {
			return "", 0, fmt.Errorf("%q: only an IPv6 address goes inside [ ]", entry)
		}
	case strings.Count(entry, ":") > 1:
		// a bare IPv6 literal; its port can only be given inside [ ]
	case strings.Contains(entry, ":"):
		var err error
		if h, p, err = net.SplitHostPort(entry); err != nil {
			return "", 0, fmt.Errorf("%q: %v", entry, err)
		}
		hasPort = true
	}
	if hasPort {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || p[0] == '0' || p[0] == '+' {
			return "", 0, fmt.Errorf("%q: the port must be a number from 1 to 65535", entry)
		}
		port = n
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", 0, fmt.Errorf("%q: an address with a zone cannot be allowed", entry)
		}
		return a.Unmap().String(), port, nil
	}
	name := strings.TrimSuffix(strings.ToLower(h), ".")
	if !validHostName(name) {
		return "", 0, fmt.Errorf("%q is not a host name or IP address", entry)
	}
	return name, port, nil
}

// validHostName accepts DNS names made of letters, digits, '-' and '_'
// (labels of 1 to 63 bytes), so that a typo such as a stray colon or a
// scheme is caught at compile time.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// FormatHTTPAllow writes a parsed entry back in canonical form.
func FormatHTTPAllow(host string, port int) string {
	if port == 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

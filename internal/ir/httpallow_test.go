package ir

import "testing"

func TestParseHTTPAllow(t *testing.T) {
	good := map[string]string{
		"localhost":            "localhost",
		"LocalHost.":           "localhost",
		"localhost:8080":       "localhost:8080",
		"svc_a.internal:443":   "svc_a.internal:443",
		"127.0.0.1":            "127.0.0.1",
		"127.0.0.1:8080":       "127.0.0.1:8080",
		"::1":                  "::1",
		"[::1]":                "::1",
		"[::1]:9000":           "[::1]:9000",
		"[::ffff:10.0.0.5]:80": "10.0.0.5:80",
		"::ffff:10.0.0.5":      "10.0.0.5",
		"FD00::0001":           "fd00::1",
	}
	for in, want := range good {
		host, port, err := ParseHTTPAllow(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := FormatHTTPAllow(host, port); got != want {
			t.Errorf("%q read as %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{
		"", "http://localhost", "localhost/x", "user@host", "*.internal", "host:0", "host:65536", "host:08",
		"host:", "host:http", "[::1", "[::1]x", "[127.0.0.1]", "[fe80::1%eth0]", "fe80::1%eth0", "a b",
		"-bad.example", "a..b", "10.0.0.0/8", "a:b:c",
	} {
		if _, _, err := ParseHTTPAllow(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

package builtin

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInternalAddr(t *testing.T) {
	refused := map[string]string{
		"127.0.0.1":                            "loopback",
		"127.255.255.254":                      "loopback",
		"0.0.0.0":                              "this network",
		"0.1.2.3":                              "this network",
		"10.1.2.3":                             "private",
		"172.16.0.1":                           "private",
		"172.31.255.255":                       "private",
		"192.168.1.1":                          "private",
		"100.64.0.1":                           "carrier-grade NAT",
		"100.127.255.255":                      "carrier-grade NAT",
		"169.254.169.254":                      "link-local",
		"192.0.0.170":                          "IETF protocol",
		"192.0.2.1":                            "documentation",
		"198.51.100.7":                         "documentation",
		"203.0.113.9":                          "documentation",
		"198.18.0.1":                           "benchmarking",
		"224.0.0.1":                            "multicast",
		"239.255.255.250":                      "multicast",
		"240.0.0.1":                            "reserved",
		"255.255.255.255":                      "broadcast",
		"::":                                   "unspecified",
		"::1":                                  "loopback address (::1)",
		"::ffff:127.0.0.1":                     "IPv4-mapped address of 127.0.0.1, a loopback",
		"::ffff:169.254.169.254":               "IPv4-mapped address of 169.254.169.254, a link-local",
		"::ffff:10.0.0.1":                      "IPv4-mapped address of 10.0.0.1, a private",
		"::127.0.0.1":                          "IPv4-compatible address of 127.0.0.1",
		"::ffff:0:7f00:1":                      "IPv4-translated address of 127.0.0.1",
		"64:ff9b::7f00:1":                      "NAT64 address of 127.0.0.1",
		"64:ff9b::a9fe:a9fe":                   "NAT64 address of 169.254.169.254",
		"64:ff9b:1::1":                         "local-use NAT64",
		"64:ff9b:1:ab::8.8.8.8":                "local-use NAT64",
		"2002:7f00:1::1":                       "6to4 address of 127.0.0.1",
		"2002:c0a8:101::":                      "6to4 address of 192.168.1.1",
		"2001:0:4136:e378:8000:63bf:80ff:fffe": "Teredo address of 127.0.0.1",
		"2001:0:7f00:1::1":                     "Teredo address of 127.0.0.1",
		"fc00::1":                              "unique local",
		"fd12:3456::1":                         "unique local",
		"fe80::1":                              "link-local address (fe80::/10)",
		"fe80::1%eth0":                         "link-local address (fe80::/10)",
		"fec0::1":                              "site-local",
		"ff02::1":                              "multicast",
		"2001:db8::1":                          "documentation",
		"3fff::1":                              "documentation",
		"100::1":                               "discard-only",
		"2001:2::1":                            "benchmarking",
		"::8.8.8.8":                            "reserved",
		"4000::1":                              "reserved",
	}
	for s, want := range refused {
		got := internalAddr(netip.MustParseAddr(s))
		if got == "" || !strings.Contains(got, want) {
			t.Errorf("internalAddr(%s) = %q, want it refused as %q", s, got, want)
		}
	}
	for _, s := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
		"192.169.0.1", "169.255.0.1", "223.255.255.255", "11.0.0.1", "126.255.255.255", "128.0.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo of 8.8.8.8 via a public server
	} {
		if got := internalAddr(netip.MustParseAddr(s)); got != "" {
			t.Errorf("internalAddr(%s) = %q, want it allowed (public)", s, got)
		}
	}
}

func TestGuardCheckAllowList(t *testing.T) {
	g := &guard{allow: parseAllow([]string{"localhost:8080", "10.0.0.5", "[::1]:9000", "Service.Internal."})}
	cases := []struct {
		name, addr string
		allowed    bool
	}{
		{"localhost", "127.0.0.1:8080", true},
		{"localhost", "[::1]:8080", true},
		{"localhost", "127.0.0.1:8081", false},  // the port is part of the entry
		{"other.test", "127.0.0.1:8080", false}, // a name entry matches the URL's name only
		{"127.0.0.1", "127.0.0.1:8080", false},  // ... not the address it resolves to
		{"anything.test", "10.0.0.5:443", true}, // an address entry matches whatever name led there
		{"10.0.0.5", "10.0.0.5:1", true},
		{"::ffff:10.0.0.5", "[::ffff:10.0.0.5]:80", true}, // one address, two spellings
		{"10.0.0.6", "10.0.0.6:80", false},
		{"::1", "[::1]:9000", true},
		{"::1", "[::1]:9001", false},
		{"service.internal", "192.168.3.4:80", true}, // names compare without case or trailing dot
		{"example.test", "93.184.216.34:80", true},   // public: no entry needed
		{"example.test", "[2606:4700::1]:443", true},
		{"meta.test", "169.254.169.254:80", false},
		{"meta.test", "not an address", false},
	}
	for _, c := range cases {
		err := g.check(c.name, c.addr)
		if (err == nil) != c.allowed {
			t.Errorf("check(%s, %s) = %v, want allowed %v", c.name, c.addr, err, c.allowed)
		}
		var r *refusedError
		if err != nil && !errors.As(err, &r) {
			t.Errorf("check(%s, %s): %T is not a refusal", c.name, c.addr, err)
		}
	}
	var r *refusedError
	if err := (&guard{}).check("localhost", "127.0.0.1:8080"); !errors.As(err, &r) || r.suggestion() != "localhost:8080" {
		t.Fatalf("%v", err)
	}
	if err := (&guard{}).check("::ffff:127.0.0.1", "[::ffff:127.0.0.1]:81"); !errors.As(err, &r) || r.suggestion() != "127.0.0.1:81" {
		t.Fatalf("%v", err)
	}
}

// countingServer is a local server that counts the requests it receives,
// so a test can prove that a refused request never reached it.
type countingServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	cs := &countingServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.paths = append(cs.paths, r.URL.Path)
		cs.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		_, _ = w.Write([]byte("internal data"))
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *countingServer) count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.paths)
}

func (cs *countingServer) port() string {
	_, p, _ := net.SplitHostPort(cs.Listener.Addr().String())
	return p
}

// refusedCall runs a call that the guard must refuse: a known failure,
// naming the address and the setting that allows it.
func refusedCall(t *testing.T, ro runOpts, name, url, addr, entry string) string {
	t.Helper()
	args := map[string]any{"url": url}
	if name != "http_get" {
		args["body"] = "x"
	}
	out, err := execTool(t, ro, name, args)
	if err != nil || out.Success {
		t.Fatalf("%s %s: %+v %v, want a known failure", name, url, out, err)
	}
	for _, want := range []string{addr + " is ", "internal addresses", `add "` + entry + `" to the agent's http_allow setting`} {
		if !strings.Contains(out.Output, want) {
			t.Fatalf("%s %s: %q lacks %q", name, url, out.Output, want)
		}
	}
	return out.Output
}

func TestHTTPRefusesInternalAddresses(t *testing.T) {
	srv := newCountingServer(t, nil)
	port := srv.port()
	ro := runOpts{workDir: t.TempDir(), timeout: 10 * time.Second}
	for _, m := range []string{"get", "post", "put", "delete"} {
		out := refusedCall(t, ro, "http_"+m, "http://127.0.0.1:"+port+"/", "127.0.0.1:"+port, "127.0.0.1:"+port)
		if !strings.Contains(out, "nothing was sent") {
			t.Fatalf("%q", out)
		}
	}
	refusedCall(t, ro, "http_get", "http://[::ffff:127.0.0.1]:"+port+"/", "127.0.0.1:"+port, "127.0.0.1:"+port)
	refusedCall(t, ro, "http_get", "http://0.0.0.0:"+port+"/", "0.0.0.0:"+port, "0.0.0.0:"+port)
	refusedCall(t, ro, "http_get", "http://localhost:"+port+"/", ":"+port, "localhost:"+port)
	// An allow-list entry for another port, or another host, changes nothing.
	other := runOpts{workDir: ro.workDir, timeout: ro.timeout, opts: Options{HTTPAllow: []string{"127.0.0.1:1", "10.0.0.1", "example.test"}}}
	refusedCall(t, other, "http_get", "http://127.0.0.1:"+port+"/", "127.0.0.1:"+port, "127.0.0.1:"+port)
	if n := srv.count(); n != 0 {
		t.Fatalf("the internal server received %d requests", n)
	}

	// Allowed by address (any spelling of it) or by the name in the URL.
	for _, c := range []struct{ entry, url string }{
		{"127.0.0.1:" + port, "http://127.0.0.1:" + port + "/a"},
		{"127.0.0.1", "http://[::ffff:127.0.0.1]:" + port + "/b"},
		{"localhost:" + port, "http://localhost:" + port + "/c"},
	} {
		ok := runOpts{workDir: ro.workDir, timeout: ro.timeout, opts: Options{HTTPAllow: []string{c.entry}}}
		res := runHTTP(t, ok, "http_get", map[string]any{"url": c.url}, true)
		if res.Body != "internal data" {
			t.Fatalf("%s: %+v", c.url, res)
		}
	}
	// The agent's list (on the invocation) allows as the executor's does.
	agent := runOpts{workDir: ro.workDir, timeout: ro.timeout, agentAllow: []string{"127.0.0.1:" + port}}
	runHTTP(t, agent, "http_get", map[string]any{"url": "http://127.0.0.1:" + port + "/d"}, true)
	if n := srv.count(); n != 4 {
		t.Fatalf("the server received %d requests, want 4", n)
	}
}

func TestHTTPRedirectToInternalIsRefused(t *testing.T) {
	inner := newCountingServer(t, nil)
	var target string
	outer := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	})
	ro := runOpts{workDir: t.TempDir(), timeout: 10 * time.Second, opts: Options{HTTPAllow: []string{"127.0.0.1:" + outer.port()}}}
	for _, to := range []struct{ url, entry string }{
		{"http://127.0.0.1:" + inner.port() + "/secret", "127.0.0.1:" + inner.port()},
		{"http://[::ffff:127.0.0.1]:" + inner.port() + "/secret", "127.0.0.1:" + inner.port()},
		{"http://localhost:" + inner.port() + "/secret", "localhost:" + inner.port()},
	} {
		target = to.url
		out := refusedCall(t, ro, "http_get", outer.URL+"/start", ":"+inner.port(), to.entry)
		if !strings.Contains(out, "was redirected to "+to.url+", which is refused") || !strings.Contains(out, "not followed") {
			t.Fatalf("%q", out)
		}
	}
	if inner.count() != 0 || outer.count() != 3 {
		t.Fatalf("inner %d, outer %d requests", inner.count(), outer.count())
	}
}

func TestHTTPRedirectsAreBounded(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/again", http.StatusFound)
	})
	ro := runOpts{workDir: t.TempDir(), timeout: 10 * time.Second, opts: allowServer(t, srv.URL)}
	res := runHTTP(t, ro, "http_get", map[string]any{"url": srv.URL + "/"}, true)
	if res.Status != http.StatusFound || srv.count() != maxRedirects+1 {
		t.Fatalf("status %d after %d requests", res.Status, srv.count())
	}
}

// TestHTTPNameResolvingInternalIsRefused makes a name resolve to loopback
// (as a rebinding DNS server would after a first, public answer): the
// address dialled is checked, so the name gets no further than the
// address itself would, and an environment proxy is no way around it.
func TestHTTPNameResolvingInternalIsRefused(t *testing.T) {
	srv := newCountingServer(t, nil)
	proxy := newCountingServer(t, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	resolver := fakeDNS(t, "rebind.nexa.test", netip.MustParseAddr("127.0.0.1"))
	url := "http://rebind.nexa.test:" + srv.port() + "/"
	ro := runOpts{workDir: t.TempDir(), timeout: 10 * time.Second, opts: Options{resolver: resolver}}
	refusedCall(t, ro, "http_get", url, "127.0.0.1:"+srv.port(), "rebind.nexa.test:"+srv.port())
	ro.opts.HTTPAllow = []string{"other.nexa.test"}
	refusedCall(t, ro, "http_post", url, "127.0.0.1:"+srv.port(), "rebind.nexa.test:"+srv.port())
	if srv.count() != 0 || proxy.count() != 0 {
		t.Fatalf("server %d, proxy %d requests", srv.count(), proxy.count())
	}
	// Allowed by its name, the name reaches the server directly, not
	// through the proxy.
	ro.opts.HTTPAllow = []string{"rebind.nexa.test"}
	if res := runHTTP(t, ro, "http_get", map[string]any{"url": url}, true); res.Body != "internal data" {
		t.Fatalf("%+v", res)
	}
	if srv.count() != 1 || proxy.count() != 0 {
		t.Fatalf("server %d, proxy %d requests", srv.count(), proxy.count())
	}
}

// fakeDNS serves one name on a local UDP port (A: addr; anything else:
// no records) and returns a resolver that asks only it.
func fakeDNS(t *testing.T, name string, addr netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := dnsAnswer(buf[:n], name, addr); reply != nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	server := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", server)
	}}
}

// dnsAnswer answers one DNS query: the A record of name, or an empty
// answer (NOERROR) for any other question.
func dnsAnswer(q []byte, name string, addr netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	// the question: labels up to a zero byte, then type and class
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	end := i + 5
	out := append([]byte(nil), q[:end]...)
	binary.BigEndian.PutUint16(out[2:], 0x8180) // response, recursion available, NOERROR
	binary.BigEndian.PutUint16(out[4:], 1)
	binary.BigEndian.PutUint16(out[6:], 0)
	binary.BigEndian.PutUint16(out[8:], 0)
	binary.BigEndian.PutUint16(out[10:], 0)
	if qtype != 1 || !strings.EqualFold(strings.Join(labels, "."), name) {
		return out
	}
	binary.BigEndian.PutUint16(out[6:], 1)
	a := addr.As4()
	out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
	return append(out, a[:]...)
}

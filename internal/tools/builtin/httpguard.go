package builtin

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nexa-run/nexa/internal/ir"
)

// addrRange is a block of addresses std.http refuses, with the words that
// tell the model (and the operator) why.
type addrRange struct {
	prefix netip.Prefix
	what   string
}

func ranges(spec ...string) []addrRange {
	out := make([]addrRange, 0, len(spec)/2)
	for i := 0; i < len(spec); i += 2 {
		out = append(out, addrRange{netip.MustParsePrefix(spec[i]), spec[i+1]})
	}
	return out
}

// internalV4 are the IPv4 blocks that do not lead to the public internet:
// the machine itself, the local networks, the cloud metadata service, and
// special-purpose blocks (RFC 6890) that no public service uses. The first
// match names the reason, so the broadcast address comes before 240/4.
var internalV4 = ranges(
	"0.0.0.0/8", "a \"this network\" address (0.0.0.0/8; 0.0.0.0 reaches this machine)",
	"10.0.0.0/8", "a private address (10.0.0.0/8)",
	"100.64.0.0/10", "a carrier-grade NAT address (100.64.0.0/10)",
	"127.0.0.0/8", "a loopback address (127.0.0.0/8)",
	"169.254.0.0/16", "a link-local address (169.254.0.0/16, where cloud metadata services answer)",
	"172.16.0.0/12", "a private address (172.16.0.0/12)",
	"192.0.0.0/24", "an IETF protocol address (192.0.0.0/24)",
	"192.0.2.0/24", "a documentation address (192.0.2.0/24)",
	"192.88.99.0/24", "a 6to4 relay address (192.88.99.0/24)",
	"192.168.0.0/16", "a private address (192.168.0.0/16)",
	"198.18.0.0/15", "a benchmarking address (198.18.0.0/15)",
	"198.51.100.0/24", "a documentation address (198.51.100.0/24)",
	"203.0.113.0/24", "a documentation address (203.0.113.0/24)",
	"224.0.0.0/4", "a multicast address (224.0.0.0/4)",
	"255.255.255.255/32", "the broadcast address",
	"240.0.0.0/4", "a reserved address (240.0.0.0/4)",
)

// internalV6 are the IPv6 blocks refused outright. Forms that embed an
// IPv4 address are judged by that address first (see classifyV6); any
// other address outside 2000::/3, the only block assigned for global
// unicast, is refused as reserved.
var internalV6 = ranges(
	"::/128", "the unspecified address (::, which reaches this machine)",
	"::1/128", "the loopback address (::1)",
	"64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)",
	"100::/64", "a discard-only address (100::/64)",
	"2001:2::/48", "a benchmarking address (2001:2::/48)",
	"2001:db8::/32", "a documentation address (2001:db8::/32)",
	"3fff::/20", "a documentation address (3fff::/20)",
	"fc00::/7", "a unique local (private) address (fc00::/7)",
	"fe80::/10", "a link-local address (fe80::/10)",
	"fec0::/10", "a site-local address (fec0::/10)",
	"ff00::/8", "a multicast address (ff00::/8)",
)

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	mapped6        = netip.MustParsePrefix("::ffff:0:0/96")
	translated6    = netip.MustParsePrefix("::ffff:0:0:0/96")
	compatible6    = netip.MustParsePrefix("::/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// internalAddr says why std.http must not connect to a, or "" when a is a
// public address. It is the whole policy, applied to the address actually
// dialled.
func internalAddr(a netip.Addr) string {
	a = a.WithZone("")
	if a.Is4() {
		for _, r := range internalV4 {
			if r.prefix.Contains(a) {
				return r.what
			}
		}
		return ""
	}
	if !a.Is6() {
		return "not an IP address"
	}
	return classifyV6(a)
}

// classifyV6 judges an IPv6 address, looking through the forms that carry
// an IPv4 address a router or the kernel may end up delivering to.
func classifyV6(a netip.Addr) string {
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	embedded := func(form string, inner netip.Addr) string {
		if why := internalAddr(inner); why != "" {
			return fmt.Sprintf("%s of %s, %s", form, inner, why)
		}
		return ""
	}
	switch {
	case a == netip.IPv6Unspecified() || a == netip.IPv6Loopback():
		// inside ::/96, but not IPv4-compatible forms
	case mapped6.Contains(a):
		return embedded("an IPv4-mapped address", v4(12))
	case nat64.Contains(a):
		return embedded("a NAT64 address", v4(12))
	case sixToFour.Contains(a):
		return embedded("a 6to4 address", v4(2))
	case teredo.Contains(a):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		if why := embedded("a Teredo address", v4(4)); why != "" {
			return why
		}
		return embedded("a Teredo address", client)
	case translated6.Contains(a):
		if why := embedded("an IPv4-translated address", v4(12)); why != "" {
			return why
		}
	case compatible6.Contains(a):
		if why := embedded("an IPv4-compatible address", v4(12)); why != "" {
			return why
		}
	}
	for _, r := range internalV6 {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	if !globalUnicast6.Contains(a) {
		return "a reserved address (outside the global unicast block 2000::/3)"
	}
	return ""
}

// allowRule is one parsed http_allow entry.
type allowRule struct {
	host string // canonical name or IP address
	ip   netip.Addr
	port int // 0: any
}

// parseAllow reads the allow-list of an invocation and of the executor.
// An entry that does not parse (the compiler rejects those) allows
// nothing.
func parseAllow(lists ...[]string) []allowRule {
	var out []allowRule
	for _, l := range lists {
		for _, e := range l {
			host, port, err := ir.ParseHTTPAllow(e)
			if err != nil {
				continue
			}
			r := allowRule{host: host, port: port}
			if ip, err := netip.ParseAddr(host); err == nil {
				r.ip = ip
			}
			out = append(out, r)
		}
	}
	return out
}

// refusedError is the dial hook's verdict on an internal address: the
// socket was created but never connected, so nothing was sent.
type refusedError struct {
	host string         // the host as the URL named it
	addr netip.AddrPort // the address that would have been dialled
	why  string
}

func (e *refusedError) Error() string {
	if !e.addr.IsValid() {
		return e.why
	}
	return fmt.Sprintf("%s is %s", e.addr, e.why)
}

// suggestion is the http_allow entry that would let this request through:
// the URL's host name with the port, or the dialled address when the URL
// named an address.
func (e *refusedError) suggestion() string {
	host := e.host
	if _, err := netip.ParseAddr(host); err == nil || host == "" {
		if !e.addr.IsValid() {
			return host
		}
		host = e.addr.Addr().WithZone("").Unmap().String()
	}
	if !e.addr.IsValid() {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(e.addr.Port())))
}

// guard dials for std.http: every connection, including each redirect hop,
// goes through dial, whose Control hook sees the address the socket is
// about to connect to after name resolution, so a name that resolves (or
// re-resolves) to an internal address is refused like the literal
// address.
type guard struct {
	allow    []allowRule
	timeout  time.Duration
	resolver *net.Resolver // nil: the system's
}

// dial is the transport's DialContext.
func (g *guard) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	d := &net.Dialer{
		Timeout:  g.timeout,
		Resolver: g.resolver,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			return g.check(name, address)
		},
	}
	return d.DialContext(ctx, network, hostport)
}

// check decides on one dial attempt: public addresses pass; an internal
// one passes only when an http_allow entry names it (by the URL's host
// name, or by the address itself) with a matching port.
func (g *guard) check(name, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusedError{host: name, why: fmt.Sprintf("an address that cannot be checked (%q)", address)}
	}
	ip := ap.Addr().WithZone("").Unmap()
	why := internalAddr(ap.Addr())
	if why == "" {
		return nil
	}
	for _, r := range g.allow {
		if r.port != 0 && r.port != int(ap.Port()) {
			continue
		}
		if r.ip.IsValid() && r.ip == ip || !r.ip.IsValid() && r.host == name {
			return nil
		}
	}
	return &refusedError{host: name, addr: ap, why: why}
}

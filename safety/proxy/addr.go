package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrNonPublicAddress is what a dial to a loopback, private, link-local,
// multicast, unspecified, CGNAT or reserved address fails with (wrapped in
// an *AddressError by DefaultDial). A custom Options.Dial may return an
// error wrapping it too: the proxy answers such a failure with 403 and an
// OnRefuse call, not with 502.
var ErrNonPublicAddress = errors.New("the address is not public")

// AddressError is the error of a dial refused because the address a name
// resolved to is not public. It wraps ErrNonPublicAddress.
type AddressError struct {
	// Addr is the refused address; it may be invalid if the dialer was
	// handed something it could not parse.
	Addr netip.Addr
	// Class is AddrClass(Addr): "loopback", "private", "link-local"...
	Class string
}

// Error says which address was refused and why.
func (e *AddressError) Error() string {
	if !e.Addr.IsValid() {
		return "refused to connect to an address that could not be parsed"
	}
	return fmt.Sprintf("refused to connect to %s, a %s address", e.Addr, e.Class)
}

// Unwrap returns ErrNonPublicAddress.
func (e *AddressError) Unwrap() error { return ErrNonPublicAddress }

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	ietfV4      = netip.MustParsePrefix("192.0.0.0/24")
	benchmark   = netip.MustParsePrefix("198.18.0.0/15")
	reservedV4  = netip.MustParsePrefix("240.0.0.0/4") // includes 255.255.255.255
	compatV6    = netip.MustParsePrefix("::/96")       // deprecated IPv4-compatible (:: and ::1 are caught earlier)
	siteLocal   = netip.MustParsePrefix("fec0::/10")
	discardV6   = netip.MustParsePrefix("100::/64")
	teredo      = netip.MustParsePrefix("2001::/32")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// AddrClass returns "" when the proxy may connect to a, and otherwise the
// kind of address that makes it refuse: "unspecified", "loopback",
// "private" (RFC 1918, ULA), "link-local", "multicast", "CGNAT",
// "this-network" (0.0.0.0/8), "reserved" (192.0.0.0/24, 198.18.0.0/15,
// 240.0.0.0/4, site-local, discard-only, Teredo, local-use NAT64) or
// "invalid". IPv4-mapped IPv6 addresses are judged as the IPv4 address; a
// NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address is judged by the IPv4
// address it embeds, so it cannot be used to reach a private one.
func AddrClass(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	a = a.WithZone("").Unmap()
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	}
	if a.Is4() {
		switch {
		case cgnat.Contains(a):
			return "CGNAT"
		case thisNetwork.Contains(a):
			return "this-network"
		case ietfV4.Contains(a), benchmark.Contains(a), reservedV4.Contains(a):
			return "reserved"
		}
		return ""
	}
	b := a.As16()
	switch {
	case compatV6.Contains(a), siteLocal.Contains(a), discardV6.Contains(a), teredo.Contains(a), nat64Local.Contains(a):
		return "reserved"
	case nat64.Contains(a):
		return embedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64")
	case sixToFour.Contains(a):
		return embedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4")
	}
	return ""
}

func embedded(v4 netip.Addr, how string) string {
	if c := AddrClass(v4); c != "" {
		return how + " form of a " + c
	}
	return ""
}

// DefaultDial returns the dialer the proxy uses when Options.Dial is nil: a
// net.Dialer with the given connect timeout whose Control hook refuses
// every address AddrClass does not call public. The check runs on the
// address about to be connected to, after resolution, so it also holds for
// a name that resolves (or is rebound between lookups) to such an address;
// when a name has several addresses, only the public ones are tried. Only
// TCP is dialled.
func DefaultDial(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, Control: controlPublic}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch network {
		case "tcp", "tcp4", "tcp6":
		default:
			return nil, fmt.Errorf("proxy: refusing to dial network %q", network)
		}
		return d.DialContext(ctx, network, addr)
	}
}

func controlPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &AddressError{}
	}
	if c := AddrClass(ap.Addr()); c != "" {
		return &AddressError{Addr: ap.Addr().WithZone("").Unmap(), Class: c}
	}
	return nil
}

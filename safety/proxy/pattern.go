package proxy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
)

// maxNameLen is the longest DNS name, without its trailing dot.
const maxNameLen = 253

// pattern is one validated allowed_hosts entry.
type pattern struct {
	name string     // lower-case name without "*." and trailing dot; empty for an address
	wild bool       // "*.name": strict subdomains of name
	addr netip.Addr // an IP literal entry, unmapped and without zone
}

// ValidatePattern checks one allowed_hosts entry. A pattern is an exact
// host name ("example.com", "localhost"), "*." followed by a domain of at
// least two labels ("*.example.org": every subdomain at any depth, never
// example.org itself), or an IP address written as itself ("192.0.2.7",
// "2001:db8::1" or "[2001:db8::1]"). Case does not matter and one trailing
// dot is ignored. It refuses schemes, user info, paths, ports, "*" alone,
// "*" anywhere but a leading "*.", wildcards over a top-level domain
// ("*.com") or an address, names that are not ASCII letters, digits, '-'
// and '_' in labels of 1 to 63 characters (write internationalised names
// in their xn-- form), names whose last label starts with a digit but that
// are not an address (127.1), and addresses the proxy never connects to
// (loopback, private, link-local, multicast, unspecified, CGNAT, reserved).
// The error is a *result.Error with code INVALID_REQUEST whose reason names
// the entry and says what to write instead.
func ValidatePattern(s string) error {
	_, err := parsePattern(s)
	return err
}

func patternError(s, why string) error {
	return result.New(result.InvalidRequest, fmt.Sprintf("allowed_hosts entry %q: %s", s, why))
}

func parsePattern(s string) (pattern, error) {
	h, ok := asciiLower(s)
	switch {
	case !ok:
		return pattern{}, patternError(s, "write the host in ASCII (an internationalised name in its xn-- form)")
	case h == "":
		return pattern{}, patternError(s, "an empty host")
	case strings.Contains(h, "://"):
		return pattern{}, patternError(s, "write the host alone, without a scheme (example.com, not https://example.com)")
	case strings.ContainsAny(h, "/?#"):
		return pattern{}, patternError(s, "write the host alone, without a path")
	case strings.Contains(h, "@"):
		return pattern{}, patternError(s, "write the host alone, without user information")
	}
	if inner, ok := strings.CutPrefix(h, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		a, err := netip.ParseAddr(inner)
		if !ok || err != nil || !a.Is6() {
			return pattern{}, patternError(s, "brackets hold an IPv6 address alone, without a port ([2001:db8::1])")
		}
		return addrPattern(s, a)
	}
	if strings.Contains(h, ":") {
		if a, err := netip.ParseAddr(h); err == nil {
			return addrPattern(s, a)
		}
		return pattern{}, patternError(s, "write the host alone, without a port (the proxy admits ports 80 and 443)")
	}
	h = strings.TrimSuffix(h, ".")
	switch {
	case h == "*" || h == "":
		return pattern{}, patternError(s, `"*" would admit every host; list the hosts instead`)
	case strings.HasPrefix(h, "."):
		return pattern{}, patternError(s, fmt.Sprintf("write %q for the subdomains of %s", "*"+h, h[1:]))
	}
	name, wild := strings.CutPrefix(h, "*.")
	if strings.Contains(name, "*") {
		return pattern{}, patternError(s, `"*" is allowed only as a leading "*." (*.example.org)`)
	}
	if !wild {
		if a, err := netip.ParseAddr(name); err == nil {
			return addrPattern(s, a)
		}
	}
	labels, why := checkName(name)
	if why != "" {
		return pattern{}, patternError(s, why)
	}
	numeric := startsWithDigit(labels[len(labels)-1])
	switch {
	case wild && (len(labels) < 2 || numeric):
		return pattern{}, patternError(s, "a wildcard needs a domain of at least two labels (*.example.org), not a top-level domain or an address")
	case numeric:
		return pattern{}, patternError(s, "neither a host name nor an IP address (a top-level domain never starts with a digit)")
	}
	return pattern{name: name, wild: wild}, nil
}

func addrPattern(s string, a netip.Addr) (pattern, error) {
	if a.Zone() != "" {
		return pattern{}, patternError(s, "an IPv6 zone (%...) cannot be allowed")
	}
	a = a.Unmap()
	if class := AddrClass(a); class != "" {
		return pattern{}, patternError(s, fmt.Sprintf("%s is a %s address, and the proxy never connects to "+
			"loopback, private, link-local, multicast, unspecified, CGNAT or reserved addresses", a, class))
	}
	return pattern{addr: a}, nil
}

// asciiLower lower-cases s, reporting false if s is not ASCII. Unicode case
// folding is avoided on purpose: it maps characters such as the Kelvin sign
// onto ASCII letters.
func asciiLower(s string) (string, bool) {
	b := []byte(s)
	for i, c := range b {
		if c >= 0x80 {
			return "", false
		}
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b), true
}

// checkName splits a lower-case name into labels, or says why it is not a
// DNS name of ASCII letters, digits, '-' and '_'.
func checkName(name string) ([]string, string) {
	if name == "" {
		return nil, "an empty host"
	}
	if len(name) > maxNameLen {
		return nil, "a host name is at most 253 characters"
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return nil, "an empty label (two dots in a row, or a leading dot)"
		}
		if len(l) > 63 {
			return nil, fmt.Sprintf("the label %q is longer than 63 characters", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return nil, fmt.Sprintf("the label %q starts or ends with '-'", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return nil, fmt.Sprintf("%q is not a character of a host name", string(rune(c)))
			}
		}
	}
	return labels, ""
}

func startsWithDigit(label string) bool { return label != "" && '0' <= label[0] && label[0] <= '9' }

// hostKind says what a requested host turned out to be.
type hostKind int

const (
	hostName    hostKind = iota // a DNS name
	hostAddr                    // a canonical IP literal
	hostNumeric                 // a name whose last label starts with a digit: a numeric address spelling (127.1, 2130706433)
)

// normalizeHost canonicalises a host as a client sent it (without port; an
// IPv6 literal may be bracketed): ASCII lower case, one trailing dot
// removed, addresses unmapped. It returns a client-facing reason when host
// is not a host at all.
func normalizeHost(host string) (string, netip.Addr, hostKind, string) {
	h, ok := asciiLower(host)
	if !ok {
		return "", netip.Addr{}, 0, "the host is not ASCII (send an internationalised name in its xn-- form)"
	}
	if inner, ok := strings.CutPrefix(h, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		a, err := netip.ParseAddr(inner)
		if !ok || err != nil || !a.Is6() || a.Zone() != "" {
			return "", netip.Addr{}, 0, "the bracketed host is not an IPv6 address"
		}
		a = a.Unmap()
		return a.String(), a, hostAddr, ""
	}
	h = strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", netip.Addr{}, 0, "an IPv6 zone is not a host"
		}
		a = a.Unmap()
		return a.String(), a, hostAddr, ""
	}
	labels, why := checkName(h)
	if why != "" {
		return "", netip.Addr{}, 0, "the host is not a valid host name: " + why
	}
	if startsWithDigit(labels[len(labels)-1]) {
		return h, netip.Addr{}, hostNumeric, ""
	}
	return h, netip.Addr{}, hostName, ""
}

// matcher answers whether a normalised host is allowed.
type matcher struct {
	exact    map[string]bool     // exact names
	suffixes map[string]bool     // wildcard domains: strict subdomains match
	addrs    map[netip.Addr]bool // listed addresses
}

func newMatcher(patterns []string) (*matcher, error) {
	m := &matcher{exact: map[string]bool{}, suffixes: map[string]bool{}, addrs: map[netip.Addr]bool{}}
	for _, s := range patterns {
		p, err := parsePattern(s)
		if err != nil {
			return nil, err
		}
		switch {
		case p.addr.IsValid():
			m.addrs[p.addr] = true
		case p.wild:
			m.suffixes[p.name] = true
		default:
			m.exact[p.name] = true
		}
	}
	return m, nil
}

// matchName reports whether a normalised DNS name is listed exactly or is
// a strict subdomain of a wildcard domain.
func (m *matcher) matchName(name string) bool {
	if m.exact[name] {
		return true
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '.' && m.suffixes[name[i+1:]] {
			return true
		}
	}
	return false
}

// allowed reports whether host, as a client names it, is admitted.
func (m *matcher) allowed(host string) bool {
	h, a, kind, why := normalizeHost(host)
	if why != "" {
		return false
	}
	switch kind {
	case hostAddr:
		return m.addrs[a]
	case hostName:
		return m.matchName(h)
	}
	return false
}

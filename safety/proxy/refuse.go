package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// target is a parsed, normalised request target.
type target struct {
	host string     // lower-case name, or canonical address
	addr netip.Addr // valid for an IP literal
	kind hostKind
	port int
}

// hostPort is the target as a dial address or URL authority.
func (t target) hostPort() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// parseTarget parses a host and decimal port, or returns a client-facing
// reason why they are not a target.
func parseTarget(host, port string) (target, string) {
	if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
		return target{}, fmt.Sprintf("%q is not a port number", port)
	}
	n, _ := strconv.Atoi(port)
	if n < 1 || n > 65535 {
		return target{}, fmt.Sprintf("%d is not a TCP port (1-65535)", n)
	}
	h, a, kind, why := normalizeHost(host)
	if why != "" {
		return target{}, why
	}
	return target{host: h, addr: a, kind: kind, port: n}, ""
}

// check applies the allowlist and the port policy. It returns a Refusal
// (without Method) when t is refused.
func (p *Proxy) check(t target) (Refusal, bool) {
	ref := Refusal{Host: t.host, Port: t.port}
	switch {
	case t.kind == hostAddr && !p.m.addrs[t.addr]:
		ref.Kind = RefusedIPLiteral
		ref.Reason = fmt.Sprintf("%q is an IP address, and IP addresses are refused unless listed exactly in %s; "+
			"connect by host name, or add the address there to allow it", t.host, p.key)
	case t.kind == hostNumeric:
		ref.Kind = RefusedIPLiteral
		ref.Reason = fmt.Sprintf("%q is a numeric spelling of an IP address (its last label starts with a digit), "+
			"which is never allowed; connect by host name, listed in %s", t.host, p.key)
	case t.kind == hostName && !p.m.matchName(t.host):
		ref.Kind = RefusedHost
		ref.Reason = fmt.Sprintf("host %q is not in %s; add it there to allow it", t.host, p.key)
	case !p.ports[t.port]:
		ref.Kind = RefusedPort
		ref.Reason = fmt.Sprintf("port %d of host %q is not allowed: the proxy connects only to ports %s",
			t.port, t.host, p.portList)
	default:
		return Refusal{}, false
	}
	return ref, true
}

// refuse reports ref once, with the process that connected (r's
// connection), and answers 403 with its reason.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, ref Refusal) {
	ref.PeerPID, _ = r.Context().Value(peerKey{}).(int)
	p.log.Info("proxy refused", "host", ref.Host, "port", ref.Port, "method", ref.Method, "kind", ref.Kind, "peer_pid", ref.PeerPID)
	if p.onRefuse != nil {
		p.onRefuse(ref)
	}
	textError(w, http.StatusForbidden, ref.Reason)
}

// badRequest answers 400 for a request the proxy cannot parse.
func (p *Proxy) badRequest(w http.ResponseWriter, r *http.Request, why string) {
	p.log.Debug("proxy bad request", "method", r.Method, "why", why)
	textError(w, http.StatusBadRequest, why)
}

func textError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}

// allow reports an admitted target.
func (p *Proxy) allow(t target, method string) {
	p.log.Debug("proxy admitted", "host", t.host, "port", t.port, "method", method)
	if p.onAllow != nil {
		p.onAllow(t.host, t.port)
	}
}

// dialUpstream is the dial of both tunnels and forwarded requests.
func (p *Proxy) dialUpstream(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.dialLimit)
	defer cancel()
	return p.dial(ctx, network, addr)
}

// upstreamFailed answers a failed dial or round trip: 403 and a refusal
// when the address was not public, nothing when the client or the proxy
// went away, 502 or 504 otherwise.
func (p *Proxy) upstreamFailed(w http.ResponseWriter, r *http.Request, t target, err error) {
	if errors.Is(err, ErrNonPublicAddress) {
		ref := Refusal{Host: t.host, Port: t.port, Method: r.Method, Kind: RefusedAddress}
		var ae *AddressError
		if errors.As(err, &ae) && ae.Addr.IsValid() {
			ref.Reason = fmt.Sprintf("host %q resolves to %s, a %s address; the proxy never connects to loopback, private, "+
				"link-local, multicast, unspecified, CGNAT or reserved addresses, whatever %s says", t.host, ae.Addr, ae.Class, p.key)
		} else {
			ref.Reason = fmt.Sprintf("host %q resolves to an address that is not public; the proxy never connects to loopback, private, "+
				"link-local, multicast, unspecified, CGNAT or reserved addresses, whatever %s says", t.host, p.key)
		}
		p.refuse(w, r, ref)
		return
	}
	if r.Context().Err() != nil {
		return
	}
	code, what := http.StatusBadGateway, "could not reach"
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		what = "found no address for"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		code, what = http.StatusGatewayTimeout, "timed out reaching"
	case errors.Is(err, syscall.ECONNREFUSED):
		what = "was refused a connection by"
	}
	p.log.Warn("proxy upstream failed", "host", t.host, "port", t.port, "method", r.Method, "err", err)
	textError(w, code, fmt.Sprintf("the proxy %s host %q port %d", what, t.host, t.port))
}

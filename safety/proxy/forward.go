package proxy

import (
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
)

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1), plus the proxy
// credentials and the non-standard Proxy-Connection: never forwarded.
var hopHeaders = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// removeHopHeaders deletes the hop-by-hop headers and every header the
// Connection header names.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// serveForward forwards an absolute-form plain HTTP request and streams the
// response back: the URL's target is parsed (forwardTarget) and checked
// against the policy, the request rewritten for the upstream
// (upstreamRequest), and the response relayed (relayResponse).
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request) {
	t, why := forwardTarget(r.URL)
	if why != "" {
		p.badRequest(w, r, why)
		return
	}
	if ref, refused := p.check(t); refused {
		ref.Method = r.Method
		p.refuse(w, r, ref)
		return
	}
	resp, err := p.transport.RoundTrip(p.upstreamRequest(r, t))
	if err != nil {
		p.upstreamFailed(w, r, t, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 {
		// Only a 101 gets here (Upgrade was not forwarded, so a server
		// should not send it): no protocol switch through plain HTTP.
		textError(w, http.StatusBadGateway, "host "+quote(t.host)+" tried to switch protocols, which the proxy does not forward; use CONNECT")
		return
	}
	relayResponse(w, resp)
}

// forwardTarget is the target of a request line's URL u, or the
// client-facing reason why u cannot be forwarded.
func forwardTarget(u *url.URL) (target, string) {
	switch {
	case u == nil || !u.IsAbs():
		return target{}, "this is a proxy: send the absolute URL in the request line " +
			"(GET http://example.com/path HTTP/1.1), or CONNECT example.com:443 for https"
	case u.Scheme != "http":
		return target{}, "only http:// URLs are forwarded; for " + u.Scheme + ":// use CONNECT host:port"
	case u.Host == "" || u.Hostname() == "":
		return target{}, "the URL has no host"
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	host := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return target{}, "bad URL host: brackets hold an IPv6 address"
		}
	}
	t, why := parseTarget(host, port)
	if why != "" {
		return target{}, "bad URL host: " + why
	}
	return t, ""
}

// upstreamRequest is r as sent to the checked target t: hop-by-hop headers
// removed, no Go default User-Agent, and the admission reported (OnAllow)
// once its upstream connection is made.
func (p *Proxy) upstreamRequest(r *http.Request, t target) *http.Request {
	var admitted sync.Once
	ctx := httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { admitted.Do(func() { p.allow(t, r.Method) }) },
	})
	out := r.Clone(ctx)
	out.RequestURI = ""
	out.Close = false
	// The URL's host, as checked, is both the dial address and the Host
	// header: a Host header of the client's choosing is dropped.
	out.URL.Scheme = "http"
	out.URL.Host = t.host
	if t.kind == hostAddr && t.addr.Is6() {
		out.URL.Host = "[" + t.host + "]"
	}
	if t.port != 80 {
		out.URL.Host = t.hostPort()
	}
	out.Host = ""
	removeHopHeaders(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header.Set("User-Agent", "") // no Go default in the client's name
	}
	return out
}

// relayResponse streams resp to w, flushing as it goes: status, headers
// (hop-by-hop ones removed) and body, then the trailers.
func relayResponse(w http.ResponseWriter, resp *http.Response) {
	removeHopHeaders(resp.Header)
	dst := w.Header()
	for k, vv := range resp.Header {
		dst[k] = vv
	}
	for k := range resp.Trailer {
		dst.Add("Trailer", k)
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if rerr != nil {
			break
		}
	}
	for k, vv := range resp.Trailer {
		dst[k] = vv
	}
}

func quote(s string) string { return `"` + s + `"` }

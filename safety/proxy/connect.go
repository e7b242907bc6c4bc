package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// serveConnect answers CONNECT host:port: check, dial, 200, splice.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.RequestURI)
	if err != nil || host == "" {
		p.badRequest(w, r, "CONNECT needs a host and a port: CONNECT example.com:443 HTTP/1.1")
		return
	}
	if strings.HasPrefix(r.RequestURI, "[") {
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			p.badRequest(w, r, "bad CONNECT target: brackets hold an IPv6 address")
			return
		}
	}
	t, why := parseTarget(host, port)
	if why != "" {
		p.badRequest(w, r, "bad CONNECT target: "+why)
		return
	}
	if ref, refused := p.check(t); refused {
		ref.Method = r.Method
		p.refuse(w, r, ref)
		return
	}
	up, err := p.dialUpstream(r.Context(), "tcp", t.hostPort())
	if err != nil {
		p.upstreamFailed(w, r, t, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		textError(w, http.StatusInternalServerError, "the proxy cannot open a tunnel on this connection")
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	tun := &tunnel{client: client, upstream: up}
	if !p.track(tun) {
		tun.close()
		return
	}
	defer p.untrack(tun)

	_ = client.SetDeadline(time.Time{})
	_ = client.SetWriteDeadline(time.Now().Add(p.idle))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		tun.close()
		return
	}
	// Bytes the client sent right behind the request (a TLS ClientHello,
	// say) may already sit in the server's read buffer: pass them on first.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		_ = up.SetWriteDeadline(time.Now().Add(p.idle))
		if _, err := up.Write(b); err != nil {
			tun.close()
			return
		}
	}
	p.allow(t, r.Method)
	tun.splice(p.idle)
}

// track registers a tunnel so Close can end it; false once closed.
func (p *Proxy) track(t *tunnel) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.tunnels[t] = struct{}{}
	return true
}

func (p *Proxy) untrack(t *tunnel) {
	p.mu.Lock()
	delete(p.tunnels, t)
	p.mu.Unlock()
	t.close()
}

// tunnel is one established CONNECT tunnel.
type tunnel struct {
	client, upstream net.Conn
	once             sync.Once
}

// close ends both sides; safe to call more than once and concurrently.
func (t *tunnel) close() {
	t.once.Do(func() {
		t.client.Close()
		t.upstream.Close()
	})
}

// errIdle ends a tunnel that carried nothing for the idle timeout.
var errIdle = errors.New("tunnel idle")

// splice copies both ways until both directions end. An EOF from one side
// is passed on as a half-close of the other (so a client may finish its
// request and still read the answer); an error, or idleness in both
// directions, closes both sides.
func (t *tunnel) splice(idle time.Duration) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	errs := make(chan error, 2)
	go func() { errs <- pipe(t.upstream, t.client, &last, idle) }()
	go func() { errs <- pipe(t.client, t.upstream, &last, idle) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.close()
		}
	}
	t.close()
}

// pipe copies src to dst until src ends, then half-closes dst.
func pipe(dst, src net.Conn, last *atomic.Int64, idle time.Duration) error {
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			_ = dst.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			last.Store(time.Now().UnixNano())
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			if time.Since(time.Unix(0, last.Load())) < idle {
				continue // the other direction is busy
			}
			return errIdle
		case errors.Is(err, io.EOF):
			return closeWrite(dst)
		default:
			return err
		}
	}
}

// closeWrite half-closes c; a connection that cannot be half-closed makes
// the tunnel end (the caller closes both sides on the error).
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

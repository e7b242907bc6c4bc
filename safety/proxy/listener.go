package proxy

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// limitListener caps the client connections open at once across a Proxy.
// A connection over the cap is answered 503 and closed at once, so the
// client learns why instead of waiting in the backlog.
type limitListener struct {
	net.Listener
	p *Proxy
}

// Accept returns the next connection within the cap.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.p.active.Add(1) > l.p.maxConns {
			l.p.active.Add(-1)
			l.p.log.Warn("proxy connection refused: too many connections", "limit", l.p.maxConns)
			if l.p.rejecting.Add(1) > maxRejecting {
				l.p.rejecting.Add(-1)
				_ = c.Close()
				continue
			}
			go func() {
				defer l.p.rejecting.Add(-1)
				rejectBusy(c, l.p.maxConns)
			}()
			continue
		}
		return &clientConn{Conn: c, release: func() { l.p.active.Add(-1) }}, nil
	}
}

// maxRejecting bounds the connections being answered 503 at once; past
// it, they are closed without an answer.
const maxRejecting = 64

// rejectBusy answers 503, lets the client finish sending its request for
// a moment (so it reads the answer instead of failing on a write to a
// closed socket), and closes.
func rejectBusy(c net.Conn, limit int64) {
	body := "too many connections through the proxy (limit " + strconv.FormatInt(limit, 10) + "); try again later\n"
	_ = c.SetDeadline(time.Now().Add(250 * time.Millisecond))
	_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Connection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	_ = closeWrite(c)
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	_ = c.Close()
}

// clientConn gives its slot back when closed, and can be half-closed when
// the connection underneath can.
type clientConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection underneath.
func (c *clientConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

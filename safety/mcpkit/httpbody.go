package mcpkit

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// HTTP limits. With MaxConns connections open, further ones wait in the
// kernel's accept queue; each open connection holds at most MaxHeaderBytes
// of headers before its token is checked and MaxBodyBytes of body after.
const (
	MaxHeaderBytes = 64 << 10
	MaxConns       = 1024
)

// BodyReadTimeout bounds the reading of one request body: a client that
// trickles its body gets 408 when it runs out, and its connection closes.
const BodyReadTimeout = 30 * time.Second

// bodyReadTimeout is BodyReadTimeout; tests shorten it.
var bodyReadTimeout = BodyReadTimeout

// readBody reads r's body whole within bodyReadTimeout and at most
// MaxBodyBytes, screens it as a JSON-RPC message and puts it back for the
// next handler. It answers the request itself and returns false when the
// body is refused.
func readBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	rc := http.NewResponseController(w)
	// Not every ResponseWriter has a connection (httptest's has none).
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	// Reading on (the server watches for the client going away) must not
	// trip over the body's deadline while a long tool call runs.
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			http.Error(w, "request body not received in time", http.StatusRequestTimeout)
		default:
			http.Error(w, "request body could not be read", http.StatusBadRequest)
		}
		return false
	}
	if code, msg := screen(body); code != 0 {
		b, _ := errorMessage(nil, code, msg)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(b)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return true
}

// limitListener accepts at most n connections at a time.
func limitListener(l net.Listener, n int) net.Listener {
	return &limited{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func (l *limited) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
}

type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

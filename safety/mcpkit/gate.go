package mcpkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxMessageBytes caps one stdio message (one line of JSON), as
// MaxBodyBytes caps one HTTP request body. A longer line is read and
// discarded in pieces, never held whole, and answered with -32600.
const MaxMessageBytes = MaxBodyBytes

// JSON-RPC error codes the gate answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// idHeadBytes is how much of an overlong line is kept to find its id.
const idHeadBytes = 64 << 10

// lockedWriter serialises whole writes to w: the gate's own answers and
// mcp-go's responses (one Write each) never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineGate sits between stdin and the stdio server. It passes on each
// line that is at most max bytes of valid UTF-8 and not a JSON-RPC batch,
// and answers the others itself on out, so the server never holds more
// than max bytes of one message. Until an initialize request has passed it
// also keeps the MCP lifecycle (see beforeInit).
type lineGate struct {
	src         *bufio.Reader
	out         io.Writer
	max         int
	line        []byte // the line being handed on
	off         int    // how much of line has been read
	err         error  // the input's error, returned once line is drained
	initialized bool   // an initialize request has passed
}

func newLineGate(r io.Reader, out io.Writer, max int) *lineGate {
	return &lineGate{src: bufio.NewReaderSize(r, 64<<10), out: out, max: max}
}

func (g *lineGate) Read(p []byte) (int, error) {
	for g.off >= len(g.line) {
		if g.err != nil {
			return 0, g.err
		}
		g.next()
	}
	n := copy(p, g.line[g.off:])
	g.off += n
	return n, nil
}

// next reads one line into g.line, or answers it and leaves g.line empty.
func (g *lineGate) next() {
	if cap(g.line) > idHeadBytes {
		g.line = nil // do not keep a large message's buffer for ever
	}
	g.line, g.off = g.line[:0], 0
	var head []byte // set once the line is over the cap
	for {
		chunk, err := g.src.ReadSlice('\n')
		switch {
		case head != nil:
		case len(g.line)+len(chunk) > g.max:
			head = append(g.line[:min(len(g.line), idHeadBytes):min(len(g.line), idHeadBytes)], chunk[:min(len(chunk), idHeadBytes)]...)
			g.line = nil
		default:
			g.line = append(g.line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		g.err = err
		break
	}
	if head != nil {
		g.reply(idFromHead(head), codeInvalidRequest,
			fmt.Sprintf("message exceeds the %d-byte (%d MiB) cap; discarded", g.max, g.max>>20))
		return
	}
	if code, msg := screen(g.line); code != 0 {
		g.line = g.line[:0]
		g.reply(nil, code, msg)
		return
	}
	if !g.initialized && len(g.line) > 0 {
		g.lifecycle()
	}
}

// lifecycle applies beforeInit to g.line.
func (g *lineGate) lifecycle() {
	switch v, id := beforeInit(g.line); v {
	case open:
		g.initialized = true
	case drop:
		g.line = g.line[:0]
	case refuse:
		g.line = g.line[:0]
		g.reply(id, codeInvalidRequest, notInitialized)
	}
}

// screen returns the error code and message for a whole message that is
// not to reach the server, or 0.
func screen(msg []byte) (int, string) {
	if !utf8.Valid(msg) {
		return codeParseError, "Parse error: the message is not valid UTF-8"
	}
	if t := bytes.TrimLeft(msg, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return codeInvalidRequest, "Invalid Request: JSON-RPC batch arrays are not supported (the negotiated MCP version has no batches); send one message at a time"
	}
	return 0, ""
}

func (g *lineGate) reply(id any, code int, msg string) {
	b, err := errorMessage(id, code, msg)
	if err == nil {
		_, _ = g.out.Write(append(b, '\n'))
	}
}

// errorMessage is a JSON-RPC error response.
func errorMessage(id any, code int, msg string) ([]byte, error) {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	return json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", id, rpcError{code, msg}})
}

// idFromHead finds the id of a request from the start of its text, which
// may be cut anywhere; it returns nil when the id does not come before the
// cut or is not a string or a number.
func idFromHead(head []byte) any {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			return rpcID(v)
		}
	}
	return nil
}

// rpcID returns v, decoded with UseNumber, when it is an id to echo in an
// error: a string or an integer; else nil.
func rpcID(v any) any {
	switch id := v.(type) {
	case string:
		return id
	case json.Number:
		if _, err := strconv.ParseInt(string(id), 10, 64); err == nil {
			return id
		}
	}
	return nil
}

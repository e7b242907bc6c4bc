package mcpkit

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// notInitialized is the gate's answer to a request that comes before the
// session is initialized.
const notInitialized = "Invalid Request: the session is not initialized. Send initialize first; " +
	"until it has been sent only ping is answered (a 2026-07-28 request needs no initialize: " +
	"it declares its protocol version in params._meta)"

// envelope is what the lifecycle check reads of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
}

// verdict is what the stdio gate does with a message that arrives before
// initialize.
type verdict int

const (
	pass   verdict = iota // hand it to the server
	open                  // hand it on: a well-formed initialize, the session is initialized from now on
	drop                  // a notification: ignored
	refuse                // a request: answered with -32600 by the gate
)

// beforeInit returns what to do with a message and the id to refuse it
// with. It applies the MCP lifecycle (protocol versions before
// 2026-07-28) to one whole message that arrives before an initialize
// request has passed the gate. Until then the client may send only ping;
// other requests are refused with -32600 and notifications are ignored,
// except notifications/cancelled, which cancels what is in flight or
// nothing. A request of the stateless 2026-07-28 protocol, which declares
// its version in params._meta and has no initialize, passes, as does its
// server/discover probe; mcp-go checks the rest of such a request.
// A message that is not a JSON-RPC request or notification also passes:
// the server answers it as it answers it after initialize.
//
// The session counts as initialized once an initialize request that
// mcp-go will accept (it decodes as an InitializeRequest and declares no
// 2026-07-28 version) has passed, not when it has been answered: a client
// that sends its first calls right behind initialize without waiting, as
// `printf 'init\ncall\n' | server` does, is served as before.
func beforeInit(msg []byte) (verdict, any) {
	var env envelope
	if json.Unmarshal(msg, &env) != nil || env.Method == nil {
		return pass, nil
	}
	return lifecycleVerdict(msg, env), requestID(env.ID)
}

// lifecycleVerdict is beforeInit's verdict on a message with a method.
func lifecycleVerdict(msg []byte, env envelope) verdict {
	method := *env.Method
	isRequest := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case !isRequest && method == string(mcp.MethodNotificationCancelled):
		return pass
	case !isRequest:
		return drop
	case modernRequest(msg):
		return pass // an initialize among them: mcp-go answers that 2026-07-28 has none
	case method == string(mcp.MethodInitialize):
		if json.Unmarshal(msg, new(mcp.InitializeRequest)) != nil {
			return pass // mcp-go answers -32600 and the session stays uninitialized
		}
		return open
	case method == string(mcp.MethodPing) || method == string(mcp.MethodServerDiscover):
		return pass
	}
	return refuse
}

// modernRequest reports whether msg declares a protocol version of
// 2026-07-28 or later in params._meta, as mcp-go reads it.
func modernRequest(msg []byte) bool {
	var m struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	return json.Unmarshal(msg, &m) == nil && mcp.IsModernProtocol(m.Params.Meta.ProtocolVersion())
}

// requestID is the id of a request to echo in an error (see rpcID).
func requestID(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return rpcID(v)
}

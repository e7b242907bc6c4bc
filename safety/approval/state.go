package approval

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
)

// inputID is the key of the one elicitation a question asks.
const inputID = "approval"

// state is what a 2026-07-28 client carries between the question and its
// retry. It is signed, so the client can neither forge an answer to a
// question never asked nor move an answer to other facts.
type state struct {
	Digest string `json:"d"`
	Intent string `json:"i"`
	Issued int64  `json:"t"`
	Nonce  string `json:"n"`
}

func (a *Asker) sign(s state) string {
	b, _ := json.Marshal(s)
	body := base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, a.key[:])
	m.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (a *Asker) verify(token string) (state, bool) {
	var s state
	body, mac, ok := strings.Cut(token, ".")
	if !ok {
		return s, false
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	m := hmac.New(sha256.New, a.key[:])
	m.Write([]byte(body))
	if err != nil || !hmac.Equal(got, m.Sum(nil)) {
		return s, false
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || json.Unmarshal(b, &s) != nil {
		return s, false
	}
	return s, true
}

// pending makes the tool's answer an input request carrying the question.
func (a *Asker) pending(ctx context.Context, q Question, digest, intent string) Verdict {
	var n [16]byte
	_, _ = rand.Read(n[:])
	tok := a.sign(state{Digest: digest, Intent: intent, Issued: time.Now().Unix(), Nonce: hex.EncodeToString(n[:])})
	r := server.NewInputRequestBuilder(tok).
		Elicit(inputID, mcp.ElicitationParams{Message: q.Message(), RequestedSchema: q.Schema()}).ToolResult()
	if !mcpkit.SetInputRequired(ctx, r) {
		return Verdict{Err: result.New(result.InternalError, "the server cannot ask from this tool; nothing was changed")}
	}
	return Verdict{Pending: true}
}

// resume handles a 2026-07-28 retry: the signed state must verify, be
// fresh, unused, and name the question the live facts give now.
func (a *Asker) resume(ctx context.Context, req mcp.CallToolRequest, q Question, digest, sid string) Verdict {
	s, ok := a.verify(req.Params.RequestState)
	if !ok {
		return Verdict{Err: ErrStale}
	}
	v := Verdict{a: a, intent: s.Intent, action: q.Action}
	record := func(answer string, err error) Verdict {
		if a.o.Audit != nil {
			_ = a.o.Audit.Event("approval.decision", map[string]any{"intent": s.Intent, "tool": q.Action, "answer": answer, "code": string(result.CodeOf(err))})
		}
		v.Err = err
		v.Done(result.CodeOf(err))
		return v
	}
	issued := time.Unix(s.Issued, 0)
	if time.Since(issued) > a.o.Timeout {
		return record("late", ErrTimeout)
	}
	if !a.useOnce(s.Nonce, issued.Add(a.o.Timeout)) {
		return Verdict{Err: ErrStale} // a replay: the first use was recorded
	}
	if s.Digest != digest {
		return record("stale", ErrStale)
	}
	return a.decide(q, server.ElicitationResponse(req.Params.InputResponses, inputID), s.Intent, sid, digest)
}

// useOnce marks a state's nonce answered; false when it already was.
func (a *Asker) useOnce(nonce string, until time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	for k, t := range a.used {
		if now.After(t) {
			delete(a.used, k)
		}
	}
	if _, seen := a.used[nonce]; seen {
		return false
	}
	a.used[nonce] = until
	return true
}

package approval

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// wantProceed is the rule the decoding must keep: only an accepted form
// whose answer is exactly one of the offered allow answers lets the
// operation proceed.
func wantProceed(res *mcp.ElicitationResult, session bool) bool {
	if res == nil || res.Action != mcp.ElicitationResponseActionAccept {
		return false
	}
	content, _ := res.Content.(map[string]any)
	a, _ := content["answer"].(string)
	return a == AnswerOnce || (session && a == AnswerSession)
}

func checkDecision(t *testing.T, a *Asker, res *mcp.ElicitationResult) {
	t.Helper()
	for _, session := range []bool{false, true} {
		q := Question{Action: "reclaim", Key: "approval.reclaim", Session: session}
		v := a.decide(q, res, "", "sid", "digest")
		if v.Proceed != wantProceed(res, session) {
			t.Fatalf("answer %+v (session %v): proceed %v", res, session, v.Proceed)
		}
		if !v.Proceed && v.Err == nil {
			t.Fatalf("answer %+v refused without an error", res)
		}
	}
}

// FuzzElicitationAnswer feeds arbitrary elicitation/create results, as a
// client sends them, through the decoding of the person's answer: nothing
// but an exact allow answer in an accepted form may proceed.
func FuzzElicitationAnswer(f *testing.F) {
	for _, s := range []string{
		`{"action":"accept","content":{"answer":"allow once"}}`,
		`{"action":"accept","content":{"answer":"allow this exact command for the rest of this session"}}`,
		`{"action":"accept","content":{"answer":"deny"}}`,
		`{"action":"accept","content":{"answer":["allow once"]}}`,
		`{"action":"accept","content":"allow once"}`,
		`{"action":"ACCEPT","content":{"answer":"allow once"}}`,
		`{"action":"decline"}`, `{"action":"cancel"}`, `{}`, `null`,
		`{"action":"accept","content":{"answer":"allow once ","Answer":"allow once"}}`,
	} {
		f.Add([]byte(s))
	}
	a := New(Options{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var res mcp.ElicitationResult
		if json.Unmarshal(raw, &res) != nil {
			return
		}
		checkDecision(t, a, &res)
	})
}

// FuzzInputResponses: the 2026-07-28 era carries the answer in the retry's
// inputResponses; arbitrary ones decode to no answer or to one that keeps
// the same rule.
func FuzzInputResponses(f *testing.F) {
	for _, s := range []string{
		`{"approval":{"action":"accept","content":{"answer":"allow once"}}}`,
		`{"approval":{"action":"decline"}}`,
		`{"other":{"action":"accept","content":{"answer":"allow once"}}}`,
		`{"approval":{"result":{"action":"accept"}}}`,
		`{"approval":null}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	a := New(Options{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var in mcp.InputResponses
		if json.Unmarshal(raw, &in) != nil {
			return
		}
		checkDecision(t, a, server.ElicitationResponse(in, inputID))
	})
}

// FuzzRequestState: no request state the client makes up verifies; one the
// Asker signed verifies to what it signed.
func FuzzRequestState(f *testing.F) {
	a := New(Options{})
	good := a.sign(state{Digest: "d", Intent: "i", Issued: 1, Nonce: "n"})
	for _, s := range []string{good, good + "x", "x" + good, ".", "", "e30.", "e30.AAAA", good[:len(good)-2]} {
		f.Add(s, "d", "n")
	}
	f.Fuzz(func(t *testing.T, token, digest, nonce string) {
		if s, ok := a.verify(token); ok && a.sign(s) != token && token != good {
			t.Fatalf("a forged state verified: %q → %+v", token, s)
		}
		st := state{Digest: digest, Intent: "i", Issued: 7, Nonce: nonce}
		if got, ok := a.verify(a.sign(st)); !ok || got != jsonForm(st) {
			t.Fatalf("a signed state did not verify: %+v → %+v %v", st, got, ok)
		}
	})
}

// jsonForm is s as JSON carries it: each byte of invalid UTF-8 becomes
// U+FFFD.
func jsonForm(s state) state {
	b, _ := json.Marshal(s)
	var out state
	_ = json.Unmarshal(b, &out)
	return out
}

// The crashers FuzzRequestState found (testdata/fuzz/FuzzRequestState/
// c5845c61d63e2e90 and a53669f68a8440b3): a state field holding invalid UTF-8 verifies to its
// JSON form, each bad byte U+FFFD. The server makes digests and nonces
// itself (hex and base64), so no real state has one; the rule stands that
// a state verifies only as signed, and the signature covers the JSON form.
func TestRequestStateInvalidUTF8VerifiesToItsJSONForm(t *testing.T) {
	a := New(Options{})
	for _, tc := range []struct{ name, nonce, want string }{
		{"one bad byte (c5845c61d63e2e90)", "\xb9", "\uFFFD"},
		{"two bad bytes (a53669f68a8440b3)", "\xb9\xba", "\uFFFD\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := state{Digest: "0", Intent: "i", Issued: 7, Nonce: tc.nonce}
			got, ok := a.verify(a.sign(st))
			if !ok || got.Nonce != tc.want || got != jsonForm(st) {
				t.Fatalf("verify(sign(%+v)) = %+v, %v", st, got, ok)
			}
		})
	}
	st := state{Digest: "0", Intent: "i", Issued: 7, Nonce: "\xb9"}
	signed := a.sign(st)
	first := "A"
	if signed[0] == 'A' {
		first = "B"
	}
	if _, ok := a.verify(first + signed[1:]); ok {
		t.Fatal("a state with its body changed verified")
	}
}

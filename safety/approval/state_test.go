package approval

import (
	"strings"
	"testing"
	"time"
)

// TestSignedStateCannotBeForgedTamperedOrReplayed: a 2026-07-28 client
// carries the state between question and answer; only states this process
// signed verify, unchanged, and each is honoured once.
func TestSignedStateCannotBeForgedTamperedOrReplayed(t *testing.T) {
	a, other := New(Options{}), New(Options{})
	tok := a.sign(state{Digest: "d", Intent: "i-1", Issued: time.Now().Unix(), Nonce: "n1"})
	if s, ok := a.verify(tok); !ok || s.Digest != "d" || s.Intent != "i-1" {
		t.Fatalf("a valid state did not verify: %+v %v", s, ok)
	}
	body, mac, _ := strings.Cut(tok, ".")
	forged := other.sign(state{Digest: "d", Intent: "i-1", Issued: time.Now().Unix(), Nonce: "n1"})
	for name, bad := range map[string]string{
		"another process's key": forged,
		"tampered body":         strings.Replace(body, body[len(body)-2:], "AA", 1) + "." + mac,
		"no signature":          body,
		"empty":                 "",
		"garbage":               "e30.AAAA",
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := a.verify(bad); ok {
				t.Fatalf("%q verified", bad)
			}
		})
	}
	until := time.Now().Add(time.Minute)
	if !a.useOnce("n1", until) || a.useOnce("n1", until) {
		t.Fatal("a state's answer was honoured twice (or not once)")
	}
}

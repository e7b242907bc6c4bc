// Package ids makes unguessable identifiers for tickets and plans.
//
// It refuses to fall back to a weak source: if crypto/rand fails, New panics
// (the MCP layer recovers it into INTERNAL_ERROR) rather than hand out a
// predictable id.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Bytes is the number of random bytes in an id (96 bits, 24 hex digits).
const Bytes = 12

// New returns prefix + "-" + 24 lowercase hex digits from crypto/rand.
func New(prefix string) string {
	var b [Bytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("ids: crypto/rand failed: " + err.Error())
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

// Valid reports whether s has the exact shape New(prefix) produces. Use it
// to refuse malformed ids before any lookup.
func Valid(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix+"-")
	if !ok || len(rest) != 2*Bytes {
		return false
	}
	for _, c := range rest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

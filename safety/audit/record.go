package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// The kinds of record.
const (
	KindIntent  = "intent"
	KindOutcome = "outcome"
	KindEvent   = "event"
)

// GenesisPrev is the prev of the first record of a chain: 64 zeros.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// record is one line of the log, in the order its fields are written.
type record struct {
	Seq    int64          `json:"seq"`
	Time   string         `json:"time"`
	Kind   string         `json:"kind"`
	Server string         `json:"server"`
	Action string         `json:"action"`
	Intent *string        `json:"intent,omitempty"`
	Code   *result.Code   `json:"code,omitempty"`
	Fields map[string]any `json:"fields"`
	Prev   string         `json:"prev"`
}

// hashLine returns the lowercase hex SHA-256 of line (without its newline).
func hashLine(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// intentID is the id of the intent written with seq.
func intentID(seq int64) string { return "i-" + strconv.FormatInt(seq, 10) }

// parsedRecord is what Verify and the tail reader need from a line.
type parsedRecord struct {
	Seq    int64
	Prev   string
	Kind   string
	Action string
}

// wireRecord decodes a line strictly enough to tell a record from anything
// else: every field must be present with the right JSON type.
type wireRecord struct {
	Seq    json.RawMessage  `json:"seq"`
	Time   *string          `json:"time"`
	Kind   *string          `json:"kind"`
	Server *string          `json:"server"`
	Action *string          `json:"action"`
	Intent *string          `json:"intent"`
	Code   *string          `json:"code"`
	Fields *json.RawMessage `json:"fields"`
	Prev   *string          `json:"prev"`
}

// parseRecord checks that line is a well-formed record and returns its seq,
// prev and kind, or a reason it is not one. It does not check the chain.
func parseRecord(line []byte) (parsedRecord, string) {
	var w wireRecord
	if len(line) == 0 {
		return parsedRecord{}, "the line is empty"
	}
	if line[0] != '{' {
		return parsedRecord{}, "the line is not a JSON object"
	}
	if err := json.Unmarshal(line, &w); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
			return parsedRecord{}, "the line is not valid JSON"
		}
		return parsedRecord{}, "a field has the wrong JSON type"
	}
	seq, ok := parseSeq(w.Seq)
	if !ok {
		return parsedRecord{}, "seq is missing or not a positive integer"
	}
	if w.Prev == nil || !isHash(*w.Prev) {
		return parsedRecord{}, "prev is missing or not 64 lowercase hex digits"
	}
	if w.Time == nil {
		return parsedRecord{}, "time is missing"
	}
	if _, err := time.Parse(time.RFC3339Nano, *w.Time); err != nil {
		return parsedRecord{}, "time is not an RFC 3339 timestamp"
	}
	if w.Kind == nil {
		return parsedRecord{}, "kind is missing"
	}
	switch *w.Kind {
	case KindIntent, KindEvent:
	case KindOutcome:
		if w.Intent == nil || w.Code == nil {
			return parsedRecord{}, "an outcome record lacks its intent or its code"
		}
	default:
		return parsedRecord{}, "kind " + strconv.Quote(*w.Kind) + " is not intent, outcome or event"
	}
	if w.Server == nil || w.Action == nil {
		return parsedRecord{}, "server or action is missing"
	}
	if w.Fields == nil || !bytes.HasPrefix(bytes.TrimLeft(*w.Fields, " \t\r\n"), []byte("{")) {
		return parsedRecord{}, "fields is missing or not a JSON object"
	}
	return parsedRecord{Seq: seq, Prev: *w.Prev, Kind: *w.Kind, Action: *w.Action}, ""
}

// parseSeq accepts a bare JSON integer from 1 to MaxInt64 (no sign, no
// fraction, no exponent, no quotes).
func parseSeq(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || raw[0] < '1' || raw[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil && n > 0
}

// isHash reports whether s is 64 lowercase hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	return strings.IndexFunc(s, func(c rune) bool {
		return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')
	}) < 0
}

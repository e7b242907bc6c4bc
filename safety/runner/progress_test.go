package runner

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/redact"
)

// TestProgressNeverShowsASecretCutByTheTail: the progress tail keeps only
// the last bytes of the output; a secret whose start fell off the tail is
// not shown (the first line of a wrapped tail is dropped), nor is a line
// still being written, nor a long base64 line (a key body without its
// PEM header), and control characters are shown as escapes.
func TestProgressNeverShowsASecretCutByTheTail(t *testing.T) {
	set := redact.Default()
	var tail outputTail
	key := "AK" + "IA" + "EXAMPLEKEY234567"
	_, _ = tail.Write([]byte("key id " + key + " in use\n"))
	_, _ = tail.Write([]byte(strings.Repeat("x", progressTail-len(key)/2) + key + " cut\n"))
	_, _ = tail.Write([]byte(strings.Repeat("QUJD", 20) + "\nbell\x07 here\nstill-writ"))
	got := strings.Join(tail.lines(set, false), "\n")
	if strings.Contains(got, "EXAMPLEKEY") || strings.Contains(got, "KEY234567") || strings.Contains(got, "still-writ") ||
		strings.Contains(got, "QUJDQUJD") || !strings.Contains(got, `bell\x07 here`) || !strings.Contains(got, "left out of progress") {
		t.Fatalf("progress lines %q", got)
	}
	var fresh outputTail
	_, _ = fresh.Write([]byte("key id " + key + " in use\n"))
	if got := fresh.lines(set, false); len(got) != 1 || !strings.Contains(got[0], "[REDACTED:") || strings.Contains(got[0], key) {
		t.Fatalf("a whole line with a key: %q", got)
	}
}

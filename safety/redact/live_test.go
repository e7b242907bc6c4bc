package redact

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// liveSink collects what a LiveWriter releases.
type liveSink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *liveSink) add(p []byte) {
	s.mu.Lock()
	s.b.Write(p)
	s.mu.Unlock()
}

func (s *liveSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLiveSecretSplitAcrossWritesIsRedacted: a key id written in two
// parts 100 ms apart, read in between, is never released in part.
func TestLiveSecretSplitAcrossWritesIsRedacted(t *testing.T) {
	var sink liveSink
	w := Default().NewLiveWriter(true, sink.add)
	w.Write([]byte("first line\nkey id " + fakeAKIA[:10]))
	if got := sink.String(); got != "first line\n" {
		t.Fatalf("released %q before the line was complete, want only the whole line", got)
	}
	time.Sleep(100 * time.Millisecond)
	w.Write([]byte(fakeAKIA[10:] + " in use\n"))
	got := sink.String()
	if strings.Contains(got, fakeAKIA[:10]) || !strings.Contains(got, "[REDACTED:") {
		t.Fatalf("split secret not redacted: %q", got)
	}
	w.Close()
	if w.Redactions() != 1 || w.TotalIn() != int64(len("first line\nkey id ")+len(fakeAKIA)+len(" in use\n")) {
		t.Fatalf("redactions %d, total %d", w.Redactions(), w.TotalIn())
	}
}

// TestLivePromptIsReleasedWhenQuiet: an unfinished line (a REPL's prompt)
// comes out once the stream has been quiet for QuietHold.
func TestLivePromptIsReleasedWhenQuiet(t *testing.T) {
	var sink liveSink
	w := Default().NewLiveWriter(true, sink.add)
	defer w.Close()
	w.Write([]byte("2\n>>> "))
	if got := sink.String(); got != "2\n" {
		t.Fatalf("released %q at once, want %q", got, "2\n")
	}
	deadline := time.Now().Add(10 * QuietHold)
	for sink.String() != "2\n>>> " {
		if time.Now().After(deadline) {
			t.Fatalf("the prompt was never released: %q", sink.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLivePrivateKeyIsHeldUntilItsEnd: the body of a private key block is
// not released line by line before its END line makes it recognisable.
func TestLivePrivateKeyIsHeldUntilItsEnd(t *testing.T) {
	var sink liveSink
	w := Default().NewLiveWriter(true, sink.add)
	begin := "-----BEGIN RSA " + "PRIVATE KEY-----\n"
	body := "MIIEowIBAAKCAQEAsecretsecretsecretsecretsecretsecret\n"
	w.Write([]byte("before\n" + begin + body))
	if got := sink.String(); got != "before\n" {
		t.Fatalf("released %q while the key block was open", got)
	}
	w.Write([]byte("-----END RSA " + "PRIVATE KEY-----\nafter\n"))
	w.Close()
	got := sink.String()
	if strings.Contains(got, "secretsecret") || !strings.Contains(got, "after\n") {
		t.Fatalf("key block: %q", got)
	}
}

// TestLiveControlCharactersAreNeutralised: an escape sequence comes out as
// visible text.
func TestLiveControlCharactersAreNeutralised(t *testing.T) {
	var sink liveSink
	w := Default().NewLiveWriter(true, sink.add)
	w.Write([]byte("\x1b]52;c;aGk=\x07\n"))
	w.Close()
	if got := sink.String(); strings.ContainsAny(got, "\x1b\x07") || w.Neutralised() != 2 {
		t.Fatalf("got %q, neutralised %d", got, w.Neutralised())
	}
}

package redact

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// attackOutput is what a hostile command prints to a client's terminal:
// a clipboard write, a link, screen clearing and cursor movement that hide
// text, a bell, a NUL, a bidi override that reverses a file name, C1 CSI
// as a rune and as a raw 8-bit byte, and ordinary text around them.
var attackOutput = "ok \x1b]52;c;cm0gLXJmIH4=\x07 then \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ " +
	"\x1b[2J\x1b[1;1Hhidden\rover\x08\x00 file\u202egpj.exe 世界 👨‍👩‍👧 \u009b31m \x9b31m done\n\ttab\n"

func TestNeutraliseShowsEveryControlClass(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		n              int
	}{
		{"osc 52 clipboard write", "\x1b]52;c;SGVsbG8=\x07", `\x1b]52;c;SGVsbG8=\x07`, 2},
		{"osc 8 link", "\x1b]8;;http://x/\x1b\\t\x1b]8;;\x1b\\", `\x1b]8;;http://x/\x1b\t\x1b]8;;\x1b\`, 4},
		{"csi cursor movement", "a\x1b[2J\x1b[Hb", `a\x1b[2J\x1b[Hb`, 2},
		{"carriage return overwrite", "rm -rf /\rls", `rm -rf /\x0dls`, 1},
		{"nul bel backspace del", "a\x00b\x07c\x08d\x7f", `a\x00b\x07c\x08d\x7f`, 4},
		{"every other c0", "\x01\x0b\x0c\x1f", `\x01\x0b\x0c\x1f`, 4},
		{"c1 csi as a rune", "a\u009bb\u0080\u0085", `a\u009bb\u0080\u0085`, 3},
		{"c1 csi as a raw byte", "a\x9b31mb", `a\x9b31mb`, 1},
		{"bidi override", "evil\u202egpj.exe", `evil\u202egpj.exe`, 1},
		{"bidi isolates and embeddings", "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069`, 8},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, 3},
		{"latin-1 byte", "caf\xe9!", `caf\xe9!`, 1},
		{"cut rune at the end", "ab\xe4\xb8", `ab\xe4\xb8`, 2},
		{"encoded surrogate", "\xed\xa0\x80", `\xed\xa0\x80`, 3},
		{"overlong slash", "\xc0\xaf", `\xc0\xaf`, 2},
		{"newline and tab stay", "a\nb\tc\n", "a\nb\tc\n", 0},
		{"cjk emoji and joiners stay", "世界 👍🏽 👨‍👩‍👧 é\u0301 \ufeff\ufffd", "世界 👍🏽 👨‍👩‍👧 é\u0301 \ufeff\ufffd", 0},
		{"latin-1 supplement letters stay", "\u00a0\u00e9\u00ff", "\u00a0\u00e9\u00ff", 0},
		{"backslash text stays", `C:\x1b\path`, `C:\x1b\path`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, n := Neutralise([]byte(c.in))
			if string(got) != c.want || n != c.n {
				t.Fatalf("Neutralise(%q) = %q, %d; want %q, %d", c.in, got, n, c.want, c.n)
			}
			checkHarmless(t, got)
		})
	}
}

// checkHarmless requires valid UTF-8 without any control character but
// newline and tab, and without a bidi control.
func checkHarmless(t testing.TB, b []byte) {
	t.Helper()
	if !utf8.Valid(b) {
		t.Fatalf("output is not valid UTF-8: %q", b)
	}
	for _, r := range string(b) {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || isBidiControl(r) {
			t.Fatalf("control %U reaches the output: %q", r, b)
		}
	}
}

// streamed writes in through an uncapped neutralising writer cut at the
// given offsets.
func streamed(in []byte, cuts ...int) *CappedWriter {
	w := Default().NewOutputWriter(-1, true)
	prev := 0
	for _, c := range cuts {
		w.Write(in[prev:c])
		prev = c
	}
	w.Write(in[prev:])
	w.Close()
	return w
}

func TestNeutraliseSplitAtEveryOffsetEqualsOneShot(t *testing.T) {
	in := []byte(attackOutput + "\xe4\xb8\x96\xf0\x9f\x98\x80\xf0\x9f\x98\xe2\x80\xae\xc2\x9b\xe2\x80")
	want, n := Neutralise(in)
	checkHarmless(t, want)
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in) && j <= i+5; j++ {
			w := streamed(in, i, j)
			if !bytes.Equal(w.Bytes(), want) || w.Neutralised() != n {
				t.Fatalf("cut at %d and %d: %q (%d), want %q (%d)", i, j, w.Bytes(), w.Neutralised(), want, n)
			}
		}
	}
	one := make([]int, len(in))
	for i := range one {
		one[i] = i
	}
	if w := streamed(in, one...); !bytes.Equal(w.Bytes(), want) {
		t.Fatalf("byte by byte: %q, want %q", w.Bytes(), want)
	}
}

func TestNeutraliseKeepsNormalTextByteForByte(t *testing.T) {
	in := []byte(strings.Repeat("héllo wörld, 世界, Ελληνικά, עברית, 😀👍🏽👨‍👩‍👧, ok\n\t", 200))
	w := Default().NewOutputWriter(-1, true)
	for len(in) > 0 { // odd-sized chunks, so runes are split
		k := min(len(in), 7)
		w.Write(in[:k])
		in = in[k:]
	}
	w.Close()
	if want := strings.Repeat("héllo wörld, 世界, Ελληνικά, עברית, 😀👍🏽👨‍👩‍👧, ok\n\t", 200); string(w.Bytes()) != want || w.Neutralised() != 0 {
		t.Fatalf("normal text changed (%d neutralised)", w.Neutralised())
	}
}

func TestSecretBesideEscapesIsRedactedBeforeNeutralising(t *testing.T) {
	in := "key \x1b[31m " + fakeAKIA + " \x1b[0m\n" + "\x07 " + fakeGHP + " \u202e\n"
	for cut := 0; cut <= len(in); cut++ {
		w := streamed([]byte(in), cut)
		got := string(w.Bytes())
		want := `key \x1b[31m ` + Marker("aws-access-key-id") + ` \x1b[0m` + "\n" + `\x07 ` + Marker("github-token") + ` \u202e` + "\n"
		if strings.Contains(got, fakeAKIA) || strings.Contains(got, fakeGHP) {
			t.Fatalf("cut %d: a secret survived: %q", cut, got)
		}
		if got != want || w.Redactions() != 2 || w.Neutralised() != 4 {
			t.Fatalf("cut %d: %q (%d redactions, %d neutralised), want %q", cut, got, w.Redactions(), w.Neutralised(), want)
		}
	}
}

func TestCapBoundsNeutralisedOutputAndNeverCutsAnEscape(t *testing.T) {
	in := []byte(strings.Repeat("\x1b", 100))
	for limit := 0; limit <= 20; limit++ {
		w := Default().NewOutputWriter(limit, true)
		w.Write(in)
		w.Close()
		got := w.Bytes()
		if len(got) > limit || !w.Truncated() || w.TotalIn() != 100 {
			t.Fatalf("limit %d: %d bytes kept, truncated %v, total %d", limit, len(got), w.Truncated(), w.TotalIn())
		}
		if want := strings.Repeat(`\x1b`, limit/4); string(got) != want || w.Neutralised() != limit/4 {
			t.Fatalf("limit %d: %q (%d), want %q: an escape was cut or miscounted", limit, got, w.Neutralised(), want)
		}
	}
	// A stream whose escapes fit exactly is not truncated.
	w := Default().NewOutputWriter(8, true)
	w.Write([]byte("\x1b\x07"))
	w.Close()
	if string(w.Bytes()) != `\x1b\x07` || w.Truncated() {
		t.Fatalf("exact fit: %q truncated %v", w.Bytes(), w.Truncated())
	}
}

func TestWriterWithoutNeutralisingPassesControlsRaw(t *testing.T) {
	w := Default().NewOutputWriter(-1, false)
	w.Write([]byte(attackOutput))
	w.Close()
	if string(w.Bytes()) != attackOutput || w.Neutralised() != 0 {
		t.Fatalf("raw output changed: %q", w.Bytes())
	}
}

func FuzzNeutralise(f *testing.F) {
	f.Add([]byte(attackOutput), 3)
	f.Add([]byte("\xf0\x9f\x98\x80\xe2\x80\xae"), 1)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		want, n := Neutralise(in)
		checkHarmless(t, want)
		if cut < 0 || cut > len(in) {
			cut = len(in) / 2
		}
		if w := streamed(in, cut); !bytes.Equal(w.Bytes(), want) || w.Neutralised() != n {
			t.Fatalf("cut %d: %q, want %q", cut, w.Bytes(), want)
		}
	})
}

// BenchmarkOutputWriter compares the writer with and without neutralising
// on 1 MiB of mixed text (ASCII, UTF-8 and a few colour sequences),
// written in 32 KiB reads as the sandbox delivers them.
func BenchmarkOutputWriter(b *testing.B) {
	line := "main.go:12: \x1b[32mok\x1b[0m héllo 世界 some ordinary build output text here\n"
	in := []byte(strings.Repeat(line, (1<<20)/len(line)))
	for _, neutralise := range []bool{false, true} {
		b.Run(map[bool]string{false: "raw", true: "neutralised"}[neutralise], func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				w := Default().NewOutputWriter(-1, neutralise)
				for p := in; len(p) > 0; {
					k := min(len(p), 32<<10)
					w.Write(p[:k])
					p = p[k:]
				}
				w.Close()
			}
		})
	}
}

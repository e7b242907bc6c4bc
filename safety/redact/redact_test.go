package redact

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// regexes returns extra patterns without names.
func regexes(res ...string) []Extra {
	var out []Extra
	for _, r := range res {
		out = append(out, Extra{Regex: r})
	}
	return out
}

func mustCompile(t testing.TB, extra []Extra, opt Options) *Set {
	t.Helper()
	s, err := CompileWith(extra, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeChunks writes in to a fresh writer split at the given offsets.
func writeChunks(t testing.TB, s *Set, limit int, in []byte, cuts ...int) *CappedWriter {
	t.Helper()
	w := s.NewCappedWriter(limit)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		n, err := w.Write(in[prev:c])
		if n != c-prev || err != nil {
			t.Fatalf("Write returned (%d, %v), want (%d, nil)", n, err, c-prev)
		}
		prev = c
	}
	w.Close()
	return w
}

func TestEveryPatternFamilyRedacts(t *testing.T) {
	for _, f := range families {
		t.Run(f.family, func(t *testing.T) {
			if !strings.Contains(f.text, f.secret) {
				t.Fatalf("fixture: secret not in text")
			}
			want := strings.Replace(f.text, f.secret, Marker(f.name), 1)
			got, n := Default().Redact([]byte(f.text))
			if string(got) != want || n != 1 {
				t.Fatalf("Redact =\n%q (%d redactions)\nwant\n%q (1)", got, n, want)
			}
			fs := Default().Find([]byte(f.text))
			if len(fs) != 1 || fs[0].Name != f.name || fs[0].Label == "" ||
				f.text[fs[0].Start:fs[0].End] != f.secret ||
				fs[0].Line != 1+strings.Count(f.text[:fs[0].Start], "\n") {
				t.Fatalf("Find = %+v, want one %s finding at the secret", fs, f.name)
			}
		})
	}
}

func TestBuiltinCoversEveryRequiredFamily(t *testing.T) {
	have := map[string]bool{}
	for _, p := range Builtin() {
		if have[p.Name] {
			t.Errorf("duplicate pattern name %q", p.Name)
		}
		have[p.Name] = true
		if p.Label == "" || p.Re == nil {
			t.Errorf("pattern %q lacks a label or expression", p.Name)
		}
	}
	tested := map[string]bool{}
	for _, f := range families {
		tested[f.name] = true
	}
	for name := range have {
		if !tested[name] {
			t.Errorf("builtin pattern %q has no fixture in families", name)
		}
	}
}

func TestNearMissesAreNotRedacted(t *testing.T) {
	for i, in := range nearMisses {
		t.Run(fmt.Sprintf("miss%d", i), func(t *testing.T) {
			got, n := Default().Redact([]byte(in))
			if n != 0 || string(got) != in {
				t.Errorf("near miss redacted:\n in  %q\n out %q", in, got)
			}
		})
	}
}

func TestEntropyFallbackIsOffByDefaultAndTakesRandomTokens(t *testing.T) {
	tok := j("q7Xv2LmP9sKd4RtW", "8zNb3YhJ6cFg1AeU5oIi0Tp")
	in := "value " + tok + " end"
	if _, n := Default().Redact([]byte(in)); n != 0 {
		t.Fatalf("default set redacted a bare random token")
	}
	ent := mustCompile(t, nil, Options{Entropy: true})
	got, n := ent.Redact([]byte(in))
	if n != 1 || string(got) != "value "+Marker("high-entropy")+" end" {
		t.Fatalf("entropy set: %q (%d)", got, n)
	}
	for _, c := range []struct{ name, miss string }{
		{"commit hash", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8"},
		{"library path", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"},
		{"identifier", "ThisIsJustAVeryLongCamelCaseIdentifierName"},
		{"repetition", strings.Repeat("ab", 30)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, n := ent.Redact([]byte(c.miss)); n != 0 {
				t.Errorf("entropy fallback took %q -> %q", c.miss, got)
			}
		})
	}
}

func TestRedactDoesNotModifyInput(t *testing.T) {
	in := []byte("password = hunter2fake " + fakeGHP)
	orig := bytes.Clone(in)
	Default().Redact(in)
	Default().Find(in)
	if !bytes.Equal(in, orig) {
		t.Fatal("input changed")
	}
}

func TestFindNeverCarriesTheValue(t *testing.T) {
	in := "x\npassword = hunter2fake\n" + fakeAKIA
	for _, f := range Default().Find([]byte(in)) {
		if strings.Contains(fmt.Sprintf("%+v", f), "hunter2") || strings.Contains(fmt.Sprintf("%+v", f), fakeAKIA) {
			t.Fatalf("finding carries the secret: %+v", f)
		}
	}
	fs := Default().Find([]byte(in))
	if len(fs) != 2 || fs[0].Line != 2 || fs[1].Line != 3 {
		t.Fatalf("Find = %+v", fs)
	}
}

// mixed builds deterministic command-like output of about size bytes with
// every family's fixture sprinkled through it, and returns the secrets.
func mixed(size int, seed uint64) ([]byte, []string) {
	r := rand.New(rand.NewPCG(seed, 7))
	lines := []string{
		"drwxr-xr-x  5 user staff   160 Mar  3 12:01 src",
		"-rw-r--r--  1 user staff  2048 Mar  3 12:01 go.mod",
		"2026-03-03T12:01:02Z INFO request served path=/api/v1/items status=200 dur=3.2ms",
		`{"level":"debug","msg":"cache miss","key":"user:42","ttl":300}`,
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
		"    at com.example.Service.handle(Service.java:118)",
		"+ func (s *Server) Serve(ctx context.Context) error {",
		"tokens: 5  the password was changed  see https://example.com/docs",
	}
	var b bytes.Buffer
	var secrets []string
	for b.Len() < size {
		if r.IntN(40) == 0 {
			f := families[r.IntN(len(families))]
			b.WriteString(f.text)
			b.WriteByte('\n')
			secrets = append(secrets, f.secret)
			continue
		}
		b.WriteString(lines[r.IntN(len(lines))])
		b.WriteByte('\n')
	}
	return b.Bytes(), secrets
}

func assertNoSecret(t *testing.T, out []byte, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if bytes.Contains(out, []byte(s)) {
			t.Fatalf("secret leaked: %.20q...", s)
		}
	}
}

func TestEverySecretInLargeMixedOutputIsRedacted(t *testing.T) {
	in, secrets := mixed(600<<10, 1)
	out, n := Default().Redact(in)
	// Adjacent secrets may merge into one redaction, so n can be smaller.
	if n == 0 || len(secrets) < 100 {
		t.Fatalf("%d redactions for %d planted secrets", n, len(secrets))
	}
	assertNoSecret(t, out, secrets)
}

// TestSecretStraddlingChunkBoundaryIsRedacted splits the input into two
// writes at every byte offset in and around each secret, with the secret
// also placed across a search-block boundary, and requires the same output
// as the one-shot Redact, with no secret in it.
func TestSecretStraddlingChunkBoundaryIsRedacted(t *testing.T) {
	for _, f := range families {
		t.Run(f.family, func(t *testing.T) {
			for _, pad := range []int{3, BlockSize - len(f.text)/2, 2*BlockSize + MaxSpan - len(f.text)/2} {
				in := []byte(strings.Repeat("a b\n", pad/4+1)[:pad] + "\n" + f.text + "\nthe end\n")
				want, _ := Default().Redact(in)
				assertNoSecret(t, want, []string{f.secret})
				start := pad + 1 + strings.Index(f.text, f.secret)
				for cut := start - 2; cut <= start+len(f.secret)+2; cut++ {
					w := writeChunks(t, Default(), -1, in, cut)
					if !bytes.Equal(w.Bytes(), want) {
						t.Fatalf("pad %d cut %d: streamed output differs from Redact", pad, cut)
					}
				}
			}
		})
	}
}

// TestSecretStraddlingCapDoesNotLeakPrefix puts the cap at every offset
// inside each secret, with the secret before and across a block boundary:
// the kept output may end in a cut marker but holds no 5 bytes of the
// secret.
func TestSecretStraddlingCapDoesNotLeakPrefix(t *testing.T) {
	for _, f := range families {
		t.Run(f.family, func(t *testing.T) {
			for _, pad := range []int{10, BlockSize - len(f.secret)/2} {
				in := []byte(strings.Repeat("x", pad) + "\n" + f.text + "\nmore output after\n")
				full, _ := Default().Redact(in)
				start := pad + 1 + strings.Index(f.text, f.secret)
				// Text that is not the secret: surrounding words and the marker.
				context := strings.Replace(f.text, f.secret, "", 1) + Marker(f.name)
				for limit := start - 1; limit <= start+len(f.secret); limit++ {
					w := writeChunks(t, Default(), limit, in, start+len(f.secret)/2)
					checkInvariant(t, w, full, 1, limit, len(in))
					for i := 0; i+5 <= len(f.secret); i++ {
						g := f.secret[i : i+5]
						if bytes.Contains(w.Bytes(), []byte(g)) && !strings.Contains(context, g) {
							t.Fatalf("limit %d: %q of the secret leaked", limit, g)
						}
					}
				}
			}
		})
	}
}

func TestWriterKeepsDrainingPastCap(t *testing.T) {
	const limit = 1000
	w := Default().NewCappedWriter(limit)
	chunk := bytes.Repeat([]byte("password = hunter2fake and more\n"), 128) // 4 KiB
	var total int64
	for range 2560 { // 10 MiB
		n, err := w.Write(chunk)
		if n != len(chunk) || err != nil {
			t.Fatalf("Write = (%d, %v)", n, err)
		}
		total += int64(n)
		if total > 1<<20 && (w.e.buf != nil || cap(w.out) > 4*limit) {
			t.Fatalf("writer still holds %d input bytes after the cap", len(w.e.buf))
		}
	}
	w.Close()
	if w.TotalIn() != total || len(w.Bytes()) != limit || !w.Truncated() {
		t.Fatalf("TotalIn %d (want %d), kept %d, truncated %v", w.TotalIn(), total, len(w.Bytes()), w.Truncated())
	}
	if bytes.Contains(w.Bytes(), []byte("hunter2")) || w.Redactions() == 0 {
		t.Fatalf("kept output not redacted (%d redactions)", w.Redactions())
	}
	if n, err := w.Write([]byte("late")); n != 4 || err != nil || w.TotalIn() != total+4 {
		t.Fatal("a write after Close must still be accepted and counted")
	}
}

func TestOutputExactlyAtLimitIsNotTruncated(t *testing.T) {
	in := []byte("0123456789")
	w := writeChunks(t, Default(), len(in), in, 3)
	if w.Truncated() || string(w.Bytes()) != string(in) {
		t.Fatalf("got %q truncated=%v", w.Bytes(), w.Truncated())
	}
	w = writeChunks(t, Default(), 0, nil)
	if w.Truncated() || len(w.Bytes()) != 0 {
		t.Fatal("empty input under a zero cap must not be truncated")
	}
}

func TestPrivateKeyLongerThanMaxSpanIsCoveredByContinuation(t *testing.T) {
	body := strings.Repeat(j("MIIEFAKE", strings.Repeat("QUJD", 14), "\n"), (MaxSpan+MaxSpan/2)/65)
	key := j("-----BEGIN ", "RSA PRIVATE KEY-----\n", body, "-----END RSA ", "PRIVATE KEY-----")
	for _, pad := range []int{0, BlockSize - 4000, BlockSize - 100} {
		t.Run(fmt.Sprintf("pad%d", pad), func(t *testing.T) {
			in := []byte(strings.Repeat("y", pad) + "\n" + key + "\nok\n")
			want := strings.Repeat("y", pad) + "\n" + Marker("private-key") + "\nok\n"
			got, n := Default().Redact(in)
			if string(got) != want || n != 1 {
				t.Fatalf("pad %d: key of %d bytes not redacted whole (%d redactions)", pad, len(key), n)
			}
			w := writeChunks(t, Default(), -1, in, pad+len(key)/3, pad+len(key)/2)
			if string(w.Bytes()) != want {
				t.Fatalf("pad %d: streamed output differs", pad)
			}
		})
	}
}

func TestOperatorPatternApplies(t *testing.T) {
	s := mustCompile(t, regexes(`ACME-[0-9]{6}`, `internal_id=(\w+)`), Options{})
	got, n := s.Redact([]byte("order ACME-123456 internal_id=abc42 " + fakeGHP))
	want := "order " + Marker("operator") + " internal_id=" + Marker("operator") + " " + Marker("github-token")
	if string(got) != want || n != 3 {
		t.Fatalf("got %q (%d)", got, n)
	}
	if fs := s.Find([]byte("x ACME-000001")); len(fs) != 1 || fs[0].Label != "operator pattern 0" {
		t.Fatalf("Find = %+v", fs)
	}
}

func TestNamedOperatorPatternNamesItsRedactions(t *testing.T) {
	s := mustCompile(t, []Extra{{Name: "acme-order", Regex: `ACME-[0-9]{6}`}, {Regex: `internal_id=(\w+)`}}, Options{})
	got, n := s.Redact([]byte("order ACME-123456 internal_id=abc42"))
	want := "order " + Marker("acme-order") + " internal_id=" + Marker("operator")
	if string(got) != want || n != 2 {
		t.Fatalf("got %q (%d), want %q", got, n, want)
	}
	if fs := s.Find([]byte("x ACME-000001")); len(fs) != 1 || fs[0].Name != "acme-order" || fs[0].Label != "operator pattern acme-order" {
		t.Fatalf("Find = %+v", fs)
	}
}

func TestBadOperatorPatternIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []Extra
		index string
	}{
		{"unclosed group", regexes(`ok-[0-9]+`, `(unclosed`), "patterns[1]"},
		{"repeat too large", regexes(`a{2,99999}`), "patterns[0]"},
		{"matches empty", regexes(`x`, `y`, `a*`), "patterns[2]"},
		{"empty", regexes(``), "patterns[0]"},
		{"named and bad", []Extra{{Name: "acme", Regex: `(`}}, `patterns[0] ("acme")`},
		{"builtin name", []Extra{{Name: "github-token", Regex: `x`}}, `patterns[0] ("github-token")`},
		{"reserved name", []Extra{{Name: "operator", Regex: `x`}}, `patterns[0] ("operator")`},
		{"duplicate name", []Extra{{Name: "a", Regex: `x`}, {Name: "a", Regex: `y`}}, `patterns[1] ("a")`},
		{"name with a bracket", []Extra{{Name: "a]b", Regex: `x`}}, `patterns[0] ("a]b")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(tc.extra)
			var re *result.Error
			var pe *PatternError
			if s != nil || !errors.As(err, &re) || re.Code != result.InvalidRequest || !strings.Contains(re.Reason, tc.index) {
				t.Fatalf("Compile(%+v) = (%v, %v), want INVALID_REQUEST naming %s", tc.extra, s, err, tc.index)
			}
			if !errors.As(err, &pe) || pe.Name != tc.extra[pe.Index].Name || pe.Why == "" {
				t.Errorf("not a *PatternError naming the entry: %#v", err)
			}
			if Check(tc.extra) == nil {
				t.Errorf("Check accepted what Compile refused")
			}
		})
	}
}

// TestStreamingEqualsOneShotOnMixedOutput checks the package invariant on a
// large input under random chunkings and caps.
func TestStreamingEqualsOneShotOnMixedOutput(t *testing.T) {
	in, _ := mixed(400<<10, 2)
	want, wantN := Default().Redact(in)
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 12 {
		var cuts []int
		for c := r.IntN(5000); c < len(in); c += 1 + r.IntN(1<<uint(4+trial%14)) {
			cuts = append(cuts, c)
		}
		limit := -1
		if trial%3 != 0 {
			limit = r.IntN(len(want) + 100)
		}
		w := writeChunks(t, Default(), limit, in, cuts...)
		checkInvariant(t, w, want, wantN, limit, len(in))
	}
}

func checkInvariant(t testing.TB, w *CappedWriter, want []byte, wantN, limit, inLen int) {
	t.Helper()
	keep := want
	if limit >= 0 && limit < len(want) {
		keep = want[:limit]
	}
	if !bytes.Equal(w.Bytes(), keep) {
		t.Fatalf("limit %d: streamed output (%d bytes) is not the prefix of Redact (%d bytes)", limit, len(w.Bytes()), len(keep))
	}
	if w.Truncated() != (limit >= 0 && len(want) > limit) {
		t.Fatalf("limit %d: Truncated = %v with %d redacted bytes", limit, w.Truncated(), len(want))
	}
	if w.TotalIn() != int64(inLen) {
		t.Fatalf("TotalIn = %d, want %d", w.TotalIn(), inLen)
	}
	if !w.Truncated() && w.Redactions() != wantN {
		t.Fatalf("Redactions = %d, want %d", w.Redactions(), wantN)
	}
	if w.Redactions() > wantN {
		t.Fatalf("Redactions = %d exceeds the one-shot count %d", w.Redactions(), wantN)
	}
}

// FuzzCappedWriter checks the exact invariant stated in the package doc:
// for any input, any split into writes and any cap L, the writer keeps
// Redact(input)[:L], reports truncation iff the redacted stream is longer
// than L, counts every input byte, and (when not truncated) counts the same
// redactions. The input may be shifted to straddle the first block boundary.
func FuzzCappedWriter(f *testing.F) {
	for i, fx := range families {
		f.Add([]byte("a\n"+fx.text+"\nb"), uint64(i), uint32(i*7), int32(-1), i%2 == 0)
	}
	for _, m := range nearMisses[:5] {
		f.Add([]byte(m), uint64(1), uint32(3), int32(20), true)
	}
	s := mustCompile(f, regexes(`ACME-[0-9]{6}`), Options{Entropy: true})
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, cutSpread uint32, limit int32, shift bool) {
		in := data
		if shift {
			in = append(bytes.Repeat([]byte("pad "), (BlockSize-len(data)/2)/4), data...)
		}
		want, wantN := s.Redact(in)
		r := rand.New(rand.NewPCG(seed, 11))
		spread := int(cutSpread%4096) + 1
		var cuts []int
		for c := r.IntN(spread); c < len(in); c += 1 + r.IntN(spread) {
			cuts = append(cuts, c)
		}
		l := int(limit)
		if l >= 0 {
			l %= len(want) + 8
		}
		w := writeChunks(t, s, l, in, cuts...)
		checkInvariant(t, w, want, wantN, l, len(in))
	})
}

func BenchmarkCappedWriter(b *testing.B) {
	in, _ := mixed(1<<20, 9)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		w := Default().NewCappedWriter(-1)
		for c := 0; c < len(in); c += 32 << 10 {
			w.Write(in[c:min(c+32<<10, len(in))])
		}
		w.Close()
	}
}

func BenchmarkCappedWriterDrainPastCap(b *testing.B) {
	in, _ := mixed(1<<20, 9)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		w := Default().NewCappedWriter(64 << 10)
		for c := 0; c < len(in); c += 32 << 10 {
			w.Write(in[c:min(c+32<<10, len(in))])
		}
		w.Close()
	}
}

func BenchmarkRedactPlainText(b *testing.B) {
	in := bytes.Repeat([]byte("drwxr-xr-x  5 user staff   160 Mar  3 12:01 src\n"), (1<<20)/48)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		Default().Redact(in)
	}
}

// TestDocsNameEveryBuiltinPattern keeps docs/terminald.md's list of marker
// names (which an operator's pattern names may not repeat) complete.
func TestDocsNameEveryBuiltinPattern(t *testing.T) {
	doc, err := os.ReadFile("../../docs/terminald.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(Builtin(), EntropyPattern) {
		t.Run(p.Name, func(t *testing.T) {
			if !bytes.Contains(doc, []byte("`"+p.Name+"`")) {
				t.Errorf("docs/terminald.md does not name the builtin pattern %q", p.Name)
			}
		})
	}
}

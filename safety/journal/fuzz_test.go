package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// fuzzSeeds are journals a fuzz run starts from (and go test runs): whole,
// torn, with garbage after the end, damaged in the middle, and records
// that parse as JSON but are not records this journal writes.
var fuzzSeeds = []string{
	"",
	"{\"t\":\"state\",\"next\":3,\"undo\":[{\"id\":2,\"tool\":\"move_file\",\"time\":\"2026-12-01T00:00:00Z\",\"moves\":[{\"src\":\"a\",\"dst\":\"b\",\"state\":{}}]}]}\n",
	"{\"t\":\"state\",\"next\":1}\n{\"t\":\"begin\",\"id\":1,\"op\":\"do\",\"tool\":\"apply_plan\",\"moves\":[{\"src\":\"a.pdf\",\"dst\":\"Documents/a.pdf\",\"state\":{}}],\"mkdirs\":[\"Documents\"]}\n{\"t\":\"done\",\"id\":1,\"i\":[0]}\n{\"t\":\"commit\",\"id\":1,\"all\":true}\n",
	"{\"t\":\"state\",\"next\":1}\n{\"t\":\"begin\",\"id\":1,\"op\":\"do\",\"tool\":\"move_file\",\"moves\":[{\"src\":\"../x\",\"dst\":\"/etc/y\",\"state\":{}}]}\n",
	"{\"t\":\"state\",\"next\":1}\n{\"t\":\"begin\",\"id\":1,\"op\":\"undo\",\"of\":9,\"moves\":[{\"src\":\"a\",\"dst\":\"b\",\"state\":{}}]}\n{\"t\":\"commit\",\"id\":1,\"keep\":[5,-1]}\n",
	"{\"t\":\"state\",\"next\":1}\n{\"t\":\"begin\",\"id\":1,\"op\":\"do\",\"to",
	"{\"t\":\"state\",\"next\":1}\ngarbage\n\x00\x00\x00\n",
	"garbage\n{\"t\":\"state\"}\n",
	"{\"t\":\"state\",\"undo\":[null]}\n",
	"{\"t\":\"commit\",\"id\":4}\n",
	"null\n[]\n\"s\"\n",
	"{\"t\":\"state\",\"next\":2}\n{\"t\":\"begin\",\"id\":2,\"op\":\"do\",\"moves\":[{\"src\":\"a\",\"dst\":\"b\",\"state\":{}}]}\n{\"t\":\"abort\",\"id\":2}\n",
}

// FuzzDecode: decode never panics; what it keeps decodes again to the same
// records with nothing left over, and a journal it refuses is refused as
// damaged in the middle.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, keep, err := decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode refused with %v, not ErrCorrupt", err)
			}
			return
		}
		if keep < 0 || keep > len(data) {
			t.Fatalf("keep %d outside 0..%d", keep, len(data))
		}
		again, keep2, err := decode(data[:keep])
		if err != nil || keep2 != keep || len(again) != len(recs) {
			t.Fatalf("the kept prefix decodes to %d records, keep %d, %v; want %d, %d", len(again), keep2, err, len(recs), keep)
		}
		if keep == 0 && len(recs) > 0 {
			t.Fatalf("%d records kept but no byte of the file", len(recs))
		}
	})
}

// FuzzOpen: a journal of arbitrary bytes, over an empty workspace, either
// opens or is refused as damaged in the middle, never panics, and never
// loses what it sets aside: the sidecar holds exactly the bytes after the
// kept ones. Once opened, it opens again with nothing to set aside and
// the same stacks.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := jail.OpenRoot(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		path := filepath.Join(t.TempDir(), "j.journal")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		j, _, err := Open(path, root, Options{})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open refused with %v, not ErrCorrupt", err)
			}
			return
		}
		if tail := j.Tail(); tail != nil {
			side, err := os.ReadFile(tail.Sidecar)
			if err != nil || !bytes.Equal(side, data[tail.Offset:]) {
				t.Fatalf("the sidecar does not hold the bytes after offset %d: %v", tail.Offset, err)
			}
		}
		u, r := j.Depth()
		j.Close()
		j, _, err = Open(path, root, Options{})
		if err != nil {
			t.Fatalf("the journal Open rewrote does not open: %v", err)
		}
		defer j.Close()
		if j.Tail() != nil {
			t.Fatalf("the journal Open rewrote has a damaged tail: %+v", j.Tail())
		}
		if u2, r2 := j.Depth(); u2 != u || r2 != r {
			t.Fatalf("stacks %d/%d after reopening, were %d/%d", u2, r2, u, r)
		}
	})
}

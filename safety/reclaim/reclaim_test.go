package reclaim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// fixture is a root with node projects, a reclaimer over it, and its audit log.
type fixture struct {
	root      *jail.Root
	dir       string
	auditPath string
	r         *Reclaimer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, err := jail.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	f := &fixture{root: root, dir: dir, auditPath: filepath.Join(t.TempDir(), "sweepd.audit.jsonl")}
	alog, err := audit.Open(audit.Options{Path: f.auditPath, Server: "sweepd", Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	f.r = New(Options{Kinds: map[string]Kind{"node_modules": {Markers: []string{"package.json"}}},
		KeepFile: ".bastion-keep", Audit: alog})
	return f
}

// find makes project/node_modules and issues a ticket of kind for it, as a
// scan would.
func (f *fixture) find(t *testing.T, project, kind string) string {
	t.Helper()
	testfs.Write(t, filepath.Join(f.dir, project, "package.json"), "{}")
	testfs.Write(t, filepath.Join(f.dir, project, "node_modules", "left-pad", "index.js"), "module.exports = 1")
	rel := project + "/node_modules"
	d, err := f.root.OpenDir(rel)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return f.r.Issue(Ticket{Root: f.root, Rel: rel, Project: project, Kind: kind, ID: d.Info().ID, Size: 1})
}

func (f *fixture) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(f.dir, rel))
	return err == nil
}

// records returns the audit log's kind/action pairs.
func (f *fixture) records(t *testing.T) []string {
	t.Helper()
	fh, err := os.Open(f.auditPath)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var r struct{ Kind, Action string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Action == "reclaim" {
			out = append(out, r.Kind)
		}
	}
	return out
}

func ptr(s string) *string { return &s }

func TestRunDeletesOnlyWithTheExactConfirmation(t *testing.T) {
	for _, c := range []struct {
		name    string
		confirm *string
		dry     bool
	}{
		{"no confirm is a dry run", nil, true},
		{"empty confirm is a dry run", ptr(""), true},
		{"capitalised confirm is a dry run", ptr("Delete"), true},
		{"padded confirm is a dry run", ptr("delete "), true},
		{"exact confirm deletes", ptr("delete"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.find(t, "proj", "node_modules")
			res, err := f.r.Run(context.Background(), Request{IDs: []string{id}, Confirm: c.confirm})
			if err != nil {
				t.Fatal(err)
			}
			if res.DryRun != c.dry || res.OK != 1 || res.FirstRefusal() != result.OK {
				t.Fatalf("result %+v, want dry run %v and one OK", res, c.dry)
			}
			if f.exists("proj/node_modules") != c.dry {
				t.Fatalf("node_modules exists %v after a run with dry run %v", f.exists("proj/node_modules"), c.dry)
			}
			wantRecords := "intent,outcome"
			if c.dry {
				wantRecords = ""
			}
			if got := strings.Join(f.records(t), ","); got != wantRecords {
				t.Fatalf("audit records %q, want %q", got, wantRecords)
			}
			if !f.exists("proj/package.json") {
				t.Fatal("the project's own file was touched")
			}
		})
	}
}

func TestRunRefusesPerIdAndKeepsTheRequestOrder(t *testing.T) {
	f := newFixture(t)
	good := f.find(t, "good", "node_modules")
	disabled := f.find(t, "off", "cargo")
	kept := f.find(t, "kept", "node_modules")
	testfs.Write(t, filepath.Join(f.dir, "kept", ".bastion-keep"), "")
	unknown := "f-0123456789abcdef01234567"
	res, err := f.r.Run(context.Background(), Request{IDs: []string{unknown, good, disabled, good, kept, "nonsense"}, Confirm: ptr("delete")})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name string
		want result.Code
	}{
		{"unknown", result.NotFound},
		{"good", result.OK},
		{"disabled kind", result.PolicyDenied},
		{"twice", result.InvalidRequest},
		{"kept", result.PolicyDenied},
		{"malformed", result.InvalidRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			if o := res.Outcomes[i]; o.Code != c.want {
				t.Fatalf("outcome %d: %+v, want %s", i, o, c.want)
			}
		})
	}
	if res.OK != 1 || res.FirstRefusal() != result.NotFound || f.exists("good/node_modules") || !f.exists("off/node_modules") || !f.exists("kept/node_modules") {
		t.Fatalf("result %+v", res)
	}
}

func TestRunRefusesAWholeRequestWithoutIdsOrWithTooMany(t *testing.T) {
	for _, c := range []struct {
		name string
		ids  []string
		want error
	}{
		{"none", nil, ErrNoIDs},
		{"empty", []string{}, ErrNoIDs},
		{"too many", make([]string, MaxIDs+1), ErrTooMany},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if _, err := f.r.Run(context.Background(), Request{IDs: c.ids, Confirm: ptr("delete")}); !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
}

func TestRunUsesUpAnIdOnlyWhenDeleting(t *testing.T) {
	f := newFixture(t)
	id := f.find(t, "proj", "node_modules")
	for _, step := range []struct {
		name    string
		confirm *string
		want    result.Code
	}{
		{"dry run", nil, result.OK},
		{"second dry run", nil, result.OK},
		{"delete", ptr("delete"), result.OK},
		{"used id in a dry run", nil, result.Stale},
		{"used id deleting", ptr("delete"), result.Stale},
	} {
		t.Run(step.name, func(t *testing.T) {
			res, err := f.r.Run(context.Background(), Request{IDs: []string{id}, Confirm: step.confirm})
			if err != nil || res.Outcomes[0].Code != step.want {
				t.Fatalf("%+v, %v: want %s", res, err, step.want)
			}
		})
	}
}

func TestRunOfACancelledRequestDeletesNothing(t *testing.T) {
	f := newFixture(t)
	id := f.find(t, "proj", "node_modules")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := f.r.Run(ctx, Request{IDs: []string{id}, Confirm: ptr("delete")})
	if err != nil || res.Outcomes[0].Code != result.OperationFailed || !f.exists("proj/node_modules") {
		t.Fatalf("%+v, %v", res, err)
	}
}

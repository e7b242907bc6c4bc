package sweep

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// scanOne scans the project dir (relative to the root) and returns the id
// of the find at its node_modules.
func (e *env) scanOne(project string) findOut {
	e.t.Helper()
	s := e.scanOK(map[string]any{"path": project})
	return findAt(e.t, s, filepath.Join(e.root, project, "node_modules"))
}

func (e *env) reclaim(args map[string]any) (opResult, reclaimOut) {
	e.t.Helper()
	r := e.call("reclaim", args)
	return r, reclaimOf(e.t, r)
}

// oneOutcome requires a single per-id result and returns it.
func oneOutcome(t *testing.T, d reclaimOut) outcomeOut {
	t.Helper()
	if len(d.Results) != 1 {
		t.Fatalf("want one result, got %+v", d.Results)
	}
	return d.Results[0]
}

func TestNoWayToDeleteByPath(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	f := e.scanOne("proj")
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"path instead of ids", map[string]any{"path": nm, "confirm": "delete"}},
		{"path beside ids", map[string]any{"ids": []string{f.ID}, "path": nm, "confirm": "delete"}},
		{"paths", map[string]any{"paths": []string{nm}, "confirm": "delete"}},
		{"dir", map[string]any{"dir": nm, "confirm": "delete"}},
		{"target", map[string]any{"target": "proj/node_modules", "confirm": "delete"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("reclaim", c.args), "INVALID_REQUEST")
		})
	}
	// Paths passed where ids go are refused one by one.
	bad := []string{nm, "proj/node_modules", "../" + filepath.Base(e.outside), "/", "f-" + nm, "f-../../etc",
		"f-000000000000000000000000", strings.ToUpper(f.ID), f.ID + " ", " " + f.ID, f.ID + "\x00"}
	r, d := e.reclaim(map[string]any{"ids": bad, "confirm": "delete"})
	if r.OK || len(d.Results) != len(bad) || d.ReclaimedBytes != 0 {
		t.Fatalf("reclaim of non-ids: %s %s", r.Code, r.Detail)
	}
	for i, o := range d.Results {
		if o.Code == "OK" || o.Path != "" {
			t.Fatalf("id %q: %+v", bad[i], o)
		}
	}
	mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
	// The schema offers nothing but ids and confirm.
	for _, tool := range wireTools(t, e.srv) {
		props := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
		if tool["name"] == "reclaim" && (len(props) != 2 || props["ids"] == nil || props["confirm"] == nil) {
			t.Fatalf("reclaim accepts more than ids and confirm: %v", props)
		}
	}
	// And the real id still works: nothing above used it up.
	r, d = e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "OK")
	if exists(nm) {
		t.Fatal("the find survived its own reclaim")
	}
}

func TestWrongConfirmationStaysDryRun(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	f := e.scanOne("proj")
	for _, c := range []struct {
		name    string
		confirm any
	}{
		{"yes", "yes"}, {"upper case", "DELETE"}, {"capitalised", "Delete"}, {"trailing space", "delete "},
		{"leading space", " delete"}, {"trailing newline", "delete\n"}, {"trailing NUL", "delete\x00"},
		{"empty", ""}, {"true as text", "true"}, {"exclamation", "delete!"}, {"quoted", "\"delete\""},
		{"full width", "ｄｅｌｅｔｅ"}, {"absent", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"ids": []string{f.ID}}
			if c.confirm != nil {
				args["confirm"] = c.confirm
			}
			r, d := e.reclaim(args)
			wantCode(t, r, "OK")
			if !d.DryRun || d.ReclaimedBytes != 0 {
				t.Fatalf("confirm %q: dry_run=%v reclaimed=%d", c.confirm, d.DryRun, d.ReclaimedBytes)
			}
			if o := oneOutcome(t, d); o.Code != "OK" || o.Path != nm {
				t.Fatalf("confirm %q: %+v", c.confirm, o)
			}
			if !strings.Contains(r.Reason, `confirm: "delete"`) || !strings.Contains(r.Reason, "nothing was deleted") {
				t.Fatalf("confirm %q: the reason does not say how to confirm: %s", c.confirm, r.Reason)
			}
			mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
		})
	}
	// Confirm of another type is not a confirmation either.
	for _, c := range []struct {
		name    string
		confirm any
	}{
		{"boolean", true}, {"number", 1}, {"array", []string{"delete"}}, {"object", map[string]any{"delete": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("reclaim", map[string]any{"ids": []string{f.ID}, "confirm": c.confirm}), "INVALID_REQUEST")
			mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
		})
	}
	// Dry runs do not use the id up.
	r, d := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "OK")
	if d.DryRun || exists(nm) || d.ReclaimedBytes <= 0 {
		t.Fatalf("real reclaim: dry_run=%v exists=%v reclaimed=%d", d.DryRun, exists(nm), d.ReclaimedBytes)
	}
	mustExist(t, filepath.Join(e.root, "proj", "package.json"))
}

func TestReclaimRefusesDirectorySwappedForSymlink(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	f := e.scanOne("proj")
	canary := filepath.Join(e.outside, "canary")
	check := canaryTree(t, canary)
	if err := os.Rename(nm, nm+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(canary, nm); err != nil {
		t.Fatal(err)
	}
	// The dry run sees it too.
	_, d := e.reclaim(map[string]any{"ids": []string{f.ID}})
	if o := oneOutcome(t, d); o.Code != "STALE" {
		t.Fatalf("dry run: %+v", o)
	}
	r, d := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "STALE")
	if o := oneOutcome(t, d); o.Code != "STALE" || !strings.Contains(o.Reason, "symbolic link") {
		t.Fatalf("%+v", o)
	}
	check()
	mustExist(t, filepath.Join(nm+".moved", "left-pad", "index.js"))
	if fi, err := os.Lstat(nm); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink itself was touched: %v", err)
	}
}

func TestReclaimRefusesParentSwappedForSymlink(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Join(e.root, "proj")
	nodeProject(t, proj)
	f := e.scanOne("proj")
	// An outside project with the same layout; the project directory itself
	// is replaced by a link to it.
	victim := filepath.Join(e.outside, "victim")
	nodeProject(t, victim)
	check := canaryTree(t, filepath.Join(victim, "node_modules", "c"))
	if err := os.Rename(proj, proj+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, proj); err != nil {
		t.Fatal(err)
	}
	r, _ := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "STALE")
	check()
	mustExist(t, filepath.Join(victim, "node_modules", "left-pad", "index.js"))
	mustExist(t, filepath.Join(proj+".moved", "node_modules", "left-pad", "index.js"))
}

func TestReclaimRefusesDirectoryReplacedByAnotherDirectory(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	f := e.scanOne("proj")
	if err := os.Rename(nm, filepath.Join(e.root, "proj", "old_modules")); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(nm, "my-work.txt"), "the user's new files")
	r, d := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "STALE")
	if o := oneOutcome(t, d); o.Code != "STALE" {
		t.Fatalf("%+v", o)
	}
	mustExist(t, filepath.Join(nm, "my-work.txt"))
	mustExist(t, filepath.Join(e.root, "proj", "old_modules", "left-pad", "index.js"))
	// Moving the original back does not revive a used id.
	os.RemoveAll(nm)
	if err := os.Rename(filepath.Join(e.root, "proj", "old_modules"), nm); err != nil {
		t.Fatal(err)
	}
	r, _ = e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "STALE")
	mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
}

func TestReclaimRefusesWhenMarkerRemovedAfterScan(t *testing.T) {
	for name, tamper := range map[string]func(t *testing.T, marker, outside string){
		"removed": func(t *testing.T, marker, _ string) {
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}
		},
		"replaced-by-directory": func(t *testing.T, marker, _ string) {
			os.Remove(marker)
			mkdir(t, marker)
		},
		"replaced-by-symlink": func(t *testing.T, marker, outside string) {
			os.Remove(marker)
			testfs.Write(t, filepath.Join(outside, "package.json"), "{}")
			if err := os.Symlink(filepath.Join(outside, "package.json"), marker); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			nm := nodeProject(t, filepath.Join(e.root, "proj"))
			f := e.scanOne("proj")
			tamper(t, filepath.Join(e.root, "proj", "package.json"), e.outside)
			r, d := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
			wantCode(t, r, "STALE")
			if o := oneOutcome(t, d); !strings.Contains(o.Reason, "marker") {
				t.Fatalf("reason does not name the marker: %+v", o)
			}
			mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
		})
	}
}

func TestReclaimDoesNotFollowLinksInsideTheFind(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	canary := filepath.Join(e.outside, "canary")
	check := canaryTree(t, canary)
	// Symlinks to outside directories and files, and a hard link to an
	// outside file, all inside the artifact.
	if err := os.Symlink(canary, filepath.Join(nm, "linked-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(canary, "precious.txt"), filepath.Join(nm, ".bin", "linked-file")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../"+filepath.Base(e.outside), filepath.Join(nm, "left-pad", "rel")); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(e.root, "hardlink-source.txt")
	testfs.Write(t, hard, "shared inode")
	if err := os.Link(hard, filepath.Join(nm, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	f := e.scanOne("proj")
	r, _ := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "OK")
	if exists(nm) {
		t.Fatal("the find survived")
	}
	check()
	if b, err := os.ReadFile(hard); err != nil || string(b) != "shared inode" {
		t.Fatalf("hard-linked file damaged: %v", err)
	}
}

func TestKeepFileMakesFindListedButNeverReclaimable(t *testing.T) {
	e := newEnv(t)
	inArtifact := nodeProject(t, filepath.Join(e.root, "a"))
	testfs.Write(t, filepath.Join(inArtifact, KeepFile), "")
	inProject := nodeProject(t, filepath.Join(e.root, "b"))
	testfs.Write(t, filepath.Join(e.root, "b", KeepFile), "")
	inAncestor := nodeProject(t, filepath.Join(e.root, "anc", "deep", "c"))
	testfs.Write(t, filepath.Join(e.root, "anc", KeepFile), "")
	free := nodeProject(t, filepath.Join(e.root, "d"))
	later := nodeProject(t, filepath.Join(e.root, "e"))

	s := e.scanOK(nil)
	var ids []string
	for _, p := range []string{inArtifact, inProject, inAncestor} {
		f := findAt(t, s, p)
		if !f.Keep {
			t.Fatalf("%s: keep=false", p)
		}
		ids = append(ids, f.ID)
	}
	for _, p := range []string{free, later} {
		if f := findAt(t, s, p); f.Keep {
			t.Fatalf("%s: keep=true", p)
		}
	}
	// Scanning below the keep file still sees it.
	if sub := e.scanOK(map[string]any{"path": "anc/deep/c"}); !findAt(t, sub, inAncestor).Keep {
		t.Fatal("scan below an ancestor's keep file reports keep=false")
	}
	// A keep file that appears after the scan protects too.
	testfs.Write(t, filepath.Join(later, KeepFile), "")
	ids = append(ids, findAt(t, s, later).ID, findAt(t, s, free).ID)

	for _, c := range []struct{ name, confirm string }{{"dry run", ""}, {"delete", "delete"}} {
		t.Run(c.name, func(t *testing.T) {
			r, d := e.reclaim(map[string]any{"ids": ids, "confirm": c.confirm})
			wantCode(t, r, "POLICY_DENIED")
			for i, o := range d.Results {
				want := "POLICY_DENIED"
				if i == 4 {
					want = "OK"
				}
				if o.Code != want {
					t.Fatalf("confirm %q, %s: %s (%s)", c.confirm, o.Path, o.Code, o.Reason)
				}
				if want != "OK" && !strings.Contains(o.Reason, KeepFile) {
					t.Fatalf("reason does not name %s: %s", KeepFile, o.Reason)
				}
			}
		})
	}
	for _, p := range []string{inArtifact, inProject, inAncestor, later} {
		mustExist(t, filepath.Join(p, "left-pad", "index.js"))
	}
	if exists(free) {
		t.Fatal("the unprotected find survived")
	}
}

func TestUnknownUsedAndExpiredIdsAreRefusedPerId(t *testing.T) {
	e := newEnv(t)
	one := nodeProject(t, filepath.Join(e.root, "one"))
	two := nodeProject(t, filepath.Join(e.root, "two"))
	s := e.scanOK(nil)
	id1, id2 := findAt(t, s, one).ID, findAt(t, s, two).ID

	// An id from another server (another process, or a restart) is unknown here.
	other := newEnv(t)
	nodeProject(t, filepath.Join(other.root, "x"))
	foreign := other.scanOne("x").ID

	unknown := "f-0123456789abcdef01234567"
	r, d := e.reclaim(map[string]any{"ids": []string{unknown, id1, foreign, "nonsense", id1}, "confirm": "delete"})
	if r.OK {
		t.Fatalf("mixed request reported OK: %s", r.Detail)
	}
	want := []string{"NOT_FOUND", "OK", "NOT_FOUND", "INVALID_REQUEST", "INVALID_REQUEST"}
	for i, o := range d.Results {
		if o.Code != want[i] {
			t.Fatalf("result %d: %s (%s), want %s", i, o.Code, o.Reason, want[i])
		}
	}
	if exists(one) {
		t.Fatal("the valid id was not reclaimed")
	}
	mustExist(t, filepath.Join(other.root, "x", "node_modules"))

	// Used.
	testfs.Write(t, filepath.Join(one, "recreated.js"), "npm install ran again")
	r, d = e.reclaim(map[string]any{"ids": []string{id1}, "confirm": "delete"})
	wantCode(t, r, "STALE")
	if o := oneOutcome(t, d); !strings.Contains(o.Reason, "already used") {
		t.Fatalf("%+v", o)
	}
	mustExist(t, filepath.Join(one, "recreated.js"))
	// The dry run refuses a used id too.
	_, d = e.reclaim(map[string]any{"ids": []string{id1}})
	if o := oneOutcome(t, d); o.Code != "STALE" {
		t.Fatalf("dry run of a used id: %+v", o)
	}
	mustExist(t, filepath.Join(two, "left-pad"))
	_ = id2

	// Expired.
	x := newEnv(t, withTTL(50*time.Millisecond))
	nm := nodeProject(t, filepath.Join(x.root, "p"))
	f := x.scanOne("p")
	time.Sleep(150 * time.Millisecond)
	for _, confirm := range []string{"", "delete"} {
		r, d := x.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": confirm})
		wantCode(t, r, "STALE")
		if o := oneOutcome(t, d); !strings.Contains(o.Reason, "expired") {
			t.Fatalf("%+v", o)
		}
	}
	mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
}

func TestReclaimWithoutIdsIsInvalid(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"no arguments", nil}, {"empty arguments", map[string]any{}}, {"empty ids", map[string]any{"ids": []string{}}},
		{"null ids", map[string]any{"ids": nil}}, {"only confirm", map[string]any{"confirm": "delete"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("reclaim", c.args), "INVALID_REQUEST")
		})
	}
	many := make([]string, 1001)
	for i := range many {
		many[i] = "f-000000000000000000000000"
	}
	wantCode(t, e.call("reclaim", map[string]any{"ids": many}), "INVALID_REQUEST")
}

func TestReclaimFailsClosedWhenAuditUnavailable(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	f := e.scanOne("proj")
	bindReadOnly(t, filepath.Dir(e.auditPath))
	r, d := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "AUDIT_UNAVAILABLE")
	if o := oneOutcome(t, d); o.Code != "AUDIT_UNAVAILABLE" || d.ReclaimedBytes != 0 {
		t.Fatalf("%+v", d)
	}
	for _, p := range []string{"left-pad/index.js", "left-pad/package.json", ".bin/tool"} {
		mustExist(t, filepath.Join(nm, p))
	}
	if strings.Contains(r.Reason+string(r.Detail), filepath.Dir(e.auditPath)) {
		t.Fatalf("the audit path leaked to the client: %s %s", r.Reason, r.Detail)
	}
}

type auditLine struct {
	Seq    int64          `json:"seq"`
	Kind   string         `json:"kind"`
	Action string         `json:"action"`
	Intent string         `json:"intent"`
	Code   string         `json:"code"`
	Fields map[string]any `json:"fields"`
}

func readAudit(t *testing.T, path string) []auditLine {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []auditLine
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line: %v", err)
		}
		out = append(out, l)
	}
	return out
}

func TestReclaimDeletesAndAudits(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	f := e.scanOne("proj")
	// A dry run records no intent.
	e.reclaim(map[string]any{"ids": []string{f.ID}})
	if exists(e.auditPath) {
		for _, l := range readAudit(t, e.auditPath) {
			if l.Kind == "intent" {
				t.Fatalf("a dry run wrote an intent: %+v", l)
			}
		}
	}
	r, d := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "OK")
	o := oneOutcome(t, d)
	if o.Code != "OK" || o.Path != nm || d.DryRun || d.ReclaimedBytes <= 0 || o.SizeBytes != d.ReclaimedBytes {
		t.Fatalf("%+v", d)
	}
	if exists(nm) {
		t.Fatal("not deleted")
	}
	mustExist(t, filepath.Join(e.root, "proj", "package.json"))

	lines := readAudit(t, e.auditPath)
	var intent *auditLine
	for i := range lines {
		l := &lines[i]
		if l.Kind == "intent" && l.Action == "reclaim" && l.Fields["id"] == f.ID && l.Fields["path"] == nm {
			intent = l
			continue
		}
		if l.Kind == "outcome" && intent != nil && l.Intent == "i-"+itoa(intent.Seq) {
			if l.Code != "OK" || l.Seq <= intent.Seq || l.Fields["removed_bytes"] == nil {
				t.Fatalf("outcome record %+v", l)
			}
			rep, err := audit.VerifyFile(e.auditPath)
			if err != nil || !rep.OK {
				t.Fatalf("audit chain: %+v %v", rep, err)
			}
			return
		}
	}
	t.Fatalf("no intent followed by its outcome in %+v", lines)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// noFindUnder fails if any find lies at or beneath dir.
func noFindUnder(t *testing.T, s scanOut, dir string) {
	t.Helper()
	for _, f := range s.Finds {
		if f.Path == dir || strings.HasPrefix(f.Path, dir+string(filepath.Separator)) {
			t.Fatalf("find %s lies beneath %s", f.Path, dir)
		}
	}
}

func TestEmptyRootListDeniesEveryPath(t *testing.T) {
	e := newEnv(t, withoutRoots)
	// A project the server could find if it fell back to anything.
	nodeProject(t, filepath.Join(e.root, "proj"))
	nodeProject(t, filepath.Join(e.outside, "proj"))
	for _, c := range []pathCase{
		{"slash", "/"}, {"the root", e.root}, {"a project in the root", filepath.Join(e.root, "proj")},
		{"outside", e.outside}, {"dot", "."}, {"relative project", "proj"}, {"dot-dot", ".."},
		{"dot-dot project", "../proj"}, {"tmp", "/tmp"}, {"empty", ""},
		{"the find itself", filepath.Join(e.root, "proj", "node_modules")},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("scan", map[string]any{"path": c.path}), "PATH_ESCAPE", "INVALID_REQUEST")
		})
	}
	// Without a path the server walks its roots: none, so nothing is found.
	r := e.call("scan", map[string]any{})
	if r.OK {
		if s := scanOf(t, r); len(s.Finds) != 0 || s.Count != 0 {
			t.Fatalf("a server with no roots found %v", paths(s))
		}
	}
	mustExist(t, filepath.Join(e.root, "proj", "node_modules"))
}

func TestScanRefusesDotDotTraversal(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.root, "proj"))
	nodeProject(t, filepath.Join(e.outside, "victim"))
	rel, err := filepath.Rel(e.root, e.outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []pathCase{
		{"dot-dot", ".."}, {"dot-dot slash", "../"}, {"dot slash dot-dot", "./.."},
		{"up from a project", "proj/../.."}, {"up from a project slash", "proj/../../"},
		{"up into a sibling", "proj/../../" + filepath.Base(e.outside)},
		{"relative to outside", rel}, {"relative to the victim", rel + "/victim"},
		{"dot in the middle", "proj/./../../.."}, {"forty levels up", strings.Repeat("../", 40)},
		{"absolute root dot-dot", e.root + "/.."}, {"absolute up from a project", e.root + "/proj/../.."},
		{"absolute in and out again", e.root + "/../" + filepath.Base(e.root) + "/../" + filepath.Base(e.outside)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.call("scan", map[string]any{"path": c.path})
			wantCode(t, r, "PATH_ESCAPE")
			if strings.Contains(string(r.Detail), "victim") {
				t.Fatalf("scan(%q) mentions the outside project: %s", c.path, r.Detail)
			}
		})
	}
	// A ".." that stays inside the root is just a path.
	s := e.scanOK(map[string]any{"path": "proj/../proj"})
	findAt(t, s, filepath.Join(e.root, "proj", "node_modules"))
}

func TestScanRefusesAbsolutePathOutside(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.outside, "victim"))
	// Siblings whose names extend the root's name: a string-prefix check
	// would let them in.
	for _, sib := range []string{e.root + "-evil", e.root + "evil", e.root + ".bak"} {
		nodeProject(t, filepath.Join(sib, "p"))
		t.Cleanup(func() { os.RemoveAll(sib) })
	}
	for _, c := range []pathCase{
		{"slash", "/"}, {"etc", "/etc"}, {"proc cwd", "/proc/self/cwd"}, {"proc root", "/proc/self/root" + e.root},
		{"outside", e.outside}, {"the victim", filepath.Join(e.outside, "victim")},
		{"sibling with dash", e.root + "-evil"}, {"inside a sibling with dash", e.root + "-evil/p"},
		{"sibling extending the name", e.root + "evil"}, {"inside a backup sibling", e.root + ".bak/p"},
		{"the root's parent", filepath.Dir(e.root)}, {"double slash", "//" + e.outside},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("scan", map[string]any{"path": c.path}), "PATH_ESCAPE")
		})
	}
	s := e.scanOK(nil)
	if len(s.Finds) != 0 {
		t.Fatalf("the empty root yielded finds %v", paths(s))
	}
}

func TestScanRefusesNULAndControlCharacters(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.root, "proj"))
	for _, c := range []pathCase{
		{"trailing NUL", "proj\x00"}, {"NUL then dot-dot", "proj\x00/../.."}, {"NUL in an absolute path", e.root + "/proj\x00/x"},
		{"only NUL", "\x00"}, {"newline", "proj\n"}, {"CRLF then dot-dot", "proj\r\n../.."},
		{"escape sequence", "\x1b[31mproj"}, {"DEL", "proj\x7f"}, {"NEL", "proj\u0085"}, {"tab", "proj\t"},
		{"NUL after the root", e.root + "\x00/.."},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.call("scan", map[string]any{"path": c.path})
			wantCode(t, r, "INVALID_REQUEST")
			if strings.ContainsAny(r.Reason, "\x00\x1b") {
				t.Fatalf("reason echoes control characters: %q", r.Reason)
			}
		})
	}
	// A name with a control character inside the root is not entered either
	// (it could never be named in a result safely); nothing crashes.
	nodeProject(t, filepath.Join(e.root, "bad\x1bname"))
	s := e.scanOK(nil)
	for _, f := range s.Finds {
		if strings.ContainsAny(f.Path, "\x00\x1b") {
			t.Fatalf("a find's path carries control characters: %q", f.Path)
		}
	}
}

func TestScanDoesNotFollowSymlinkLeavingRoot(t *testing.T) {
	e := newEnv(t)
	victim := filepath.Join(e.outside, "victim")
	nodeProject(t, victim)
	nodeProject(t, filepath.Join(e.root, "mine"))
	link := filepath.Join(e.root, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.outside, filepath.Join(e.root, "mine", "up")); err != nil {
		t.Fatal(err)
	}
	// A relative link that climbs out.
	rel, _ := filepath.Rel(filepath.Join(e.root, "mine"), victim)
	if err := os.Symlink(rel, filepath.Join(e.root, "mine", "rel")); err != nil {
		t.Fatal(err)
	}
	s := e.scanOK(nil)
	noFindUnder(t, s, e.outside)
	noFindUnder(t, s, link)
	noFindUnder(t, s, filepath.Join(e.root, "mine", "up"))
	noFindUnder(t, s, filepath.Join(e.root, "mine", "rel"))
	if len(s.Finds) != 1 {
		t.Fatalf("want only mine/node_modules, got %v", paths(s))
	}
	for _, c := range []pathCase{
		{"absolute link", link}, {"relative link", "link"}, {"link slash", "link/"}, {"through the link", "link/node_modules"},
		{"link up", "mine/up"}, {"through the link up", "mine/up/victim"}, {"relative link out", "mine/rel"},
		{"absolute relative link out", filepath.Join(e.root, "mine", "rel") + "/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.call("scan", map[string]any{"path": c.path})
			wantCode(t, r, "PATH_ESCAPE")
			if strings.Contains(string(r.Detail), e.outside) {
				t.Fatalf("scan(%q) reported an outside path: %s", c.path, r.Detail)
			}
		})
	}
}

func TestSymlinkToADirectoryInsideTheRootIsNotFollowedEither(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.root, "a"))
	if err := os.Symlink(filepath.Join(e.root, "a"), filepath.Join(e.root, "alias")); err != nil {
		t.Fatal(err)
	}
	// A symlinked artifact directory beside a real marker.
	testfs.Write(t, filepath.Join(e.root, "b", "package.json"), "{}")
	if err := os.Symlink(filepath.Join(e.root, "a", "node_modules"), filepath.Join(e.root, "b", "node_modules")); err != nil {
		t.Fatal(err)
	}
	s := e.scanOK(nil)
	if len(s.Finds) != 1 || s.Finds[0].Path != filepath.Join(e.root, "a", "node_modules") {
		t.Fatalf("want a single find a/node_modules, got %v", paths(s))
	}
}

func TestScanOfAFileOrMissingPathIsRefused(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.root, "proj"))
	for _, c := range []pathCase{{"a file", "proj/package.json"}, {"missing", "missing"}, {"missing deeper", e.root + "/missing/deeper"}} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("scan", map[string]any{"path": c.path}), "NOT_FOUND", "INVALID_REQUEST")
		})
	}
}

func TestTargetWithoutMarkerIsNotAFind(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, filepath.Join(e.root, "bare", "target", "debug", "app"), "binary")
	testfs.Write(t, filepath.Join(e.root, "bare", "README.md"), "no marker here")
	// Markers that are not regular files do not count.
	mkdir(t, filepath.Join(e.root, "dirmarker", "Cargo.toml"))
	testfs.Write(t, filepath.Join(e.root, "dirmarker", "target", "x"), "x")
	testfs.Write(t, filepath.Join(e.outside, "Cargo.toml"), "[package]")
	mkdir(t, filepath.Join(e.root, "linkmarker"))
	if err := os.Symlink(filepath.Join(e.outside, "Cargo.toml"), filepath.Join(e.root, "linkmarker", "Cargo.toml")); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(e.root, "linkmarker", "target", "x"), "x")
	// A marker one level up is not beside the directory.
	testfs.Write(t, filepath.Join(e.root, "up", "Cargo.toml"), "[package]")
	testfs.Write(t, filepath.Join(e.root, "up", "sub", "target", "x"), "x")
	// node_modules without package.json.
	testfs.Write(t, filepath.Join(e.root, "loose", "node_modules", "x", "index.js"), "x")
	// The real ones.
	for dir, marker := range map[string]string{"rust": "Cargo.toml", "mvn": "pom.xml", "scala": "build.sbt"} {
		testfs.Write(t, filepath.Join(e.root, dir, marker), "m")
		testfs.Write(t, filepath.Join(e.root, dir, "target", "out"), "o")
	}
	s := e.scanOK(nil)
	for _, d := range []string{"bare", "dirmarker", "linkmarker", "loose", "up/sub"} {
		noFindUnder(t, s, filepath.Join(e.root, d))
	}
	for dir, kind := range map[string]string{"rust": "cargo", "mvn": "maven", "scala": "sbt"} {
		if f := findAt(t, s, filepath.Join(e.root, dir, "target")); f.Kind != kind {
			t.Fatalf("%s/target: kind %s, want %s", dir, f.Kind, kind)
		}
	}
	if len(s.Finds) != 3 {
		t.Fatalf("want 3 finds, got %v", paths(s))
	}
}

func TestVenvNeedsPyvenvCfg(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, filepath.Join(e.root, "nocfg", ".venv", "lib", "site.py"), "x")
	testfs.Write(t, filepath.Join(e.root, "dircfg", ".venv", "lib", "site.py"), "x")
	mkdir(t, filepath.Join(e.root, "dircfg", ".venv", "pyvenv.cfg"))
	testfs.Write(t, filepath.Join(e.outside, "pyvenv.cfg"), "home = /usr/bin")
	testfs.Write(t, filepath.Join(e.root, "linkcfg", "venv", "lib", "site.py"), "x")
	if err := os.Symlink(filepath.Join(e.outside, "pyvenv.cfg"), filepath.Join(e.root, "linkcfg", "venv", "pyvenv.cfg")); err != nil {
		t.Fatal(err)
	}
	// A user's own directory called venv with a config beside it, not inside.
	testfs.Write(t, filepath.Join(e.root, "beside", "pyvenv.cfg"), "home = /usr/bin")
	testfs.Write(t, filepath.Join(e.root, "beside", "venv", "notes.txt"), "mine")
	testfs.Write(t, filepath.Join(e.root, "real", ".venv", "pyvenv.cfg"), "home = /usr/bin")
	testfs.Write(t, filepath.Join(e.root, "real", ".venv", "lib", "site.py"), "x")
	testfs.Write(t, filepath.Join(e.root, "real2", "venv", "pyvenv.cfg"), "home = /usr/bin")
	s := e.scanOK(nil)
	for _, d := range []string{"nocfg", "dircfg", "linkcfg", "beside"} {
		noFindUnder(t, s, filepath.Join(e.root, d))
	}
	for _, p := range []string{"real/.venv", "real2/venv"} {
		if f := findAt(t, s, filepath.Join(e.root, p)); f.Kind != "venv" {
			t.Fatalf("%s: kind %s", p, f.Kind)
		}
	}
	// The check is repeated at reclaim: pyvenv.cfg removed after the scan.
	f := findAt(t, s, filepath.Join(e.root, "real", ".venv"))
	if err := os.Remove(filepath.Join(e.root, "real", ".venv", "pyvenv.cfg")); err != nil {
		t.Fatal(err)
	}
	r := e.call("reclaim", map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "STALE")
	mustExist(t, filepath.Join(e.root, "real", ".venv", "lib", "site.py"))
}

// markerFile turns a marker pattern into a file name it matches.
func markerFile(p string) string { return strings.ReplaceAll(p, "*", "x") }

func TestEveryCatalogKindIsFound(t *testing.T) {
	e := newEnv(t)
	type want struct{ kind, eco, regen string }
	wants := map[string]want{}
	for _, tg := range Catalog {
		for i, dir := range tg.Dirs {
			proj := filepath.Join(e.root, tg.Kind+"-"+string(rune('a'+i)))
			if len(tg.Markers) > 0 {
				testfs.Write(t, filepath.Join(proj, markerFile(tg.Markers[0])), "marker")
			}
			art := filepath.Join(proj, filepath.FromSlash(dir))
			testfs.Write(t, filepath.Join(art, "artifact.bin"), strings.Repeat("a", 100))
			for _, in := range tg.Inside {
				testfs.Write(t, filepath.Join(art, in), "home = /usr/bin")
			}
			wants[art] = want{tg.Kind, tg.Ecosystem, tg.Regenerate}
		}
	}
	s := e.scanOK(nil)
	for art, w := range wants {
		f := findAt(t, s, art)
		if f.Kind != w.kind || f.Ecosystem != w.eco || f.Regenerate != w.regen {
			t.Errorf("%s: got %s/%s %q, want %s/%s %q", art, f.Kind, f.Ecosystem, f.Regenerate, w.kind, w.eco, w.regen)
		}
		if !strings.HasPrefix(f.ID, "f-") || f.SizeBytes <= 0 || f.Keep {
			t.Errorf("%s: bad find %+v", art, f)
		}
	}
	if len(s.Finds) != len(wants) {
		t.Fatalf("%d finds, want %d", len(s.Finds), len(wants))
	}
	// list_targets lists the same catalog.
	r := e.call("list_targets", nil)
	wantCode(t, r, "OK")
	for _, tg := range Catalog {
		if !strings.Contains(string(r.Detail), `"kind":"`+tg.Kind+`"`) {
			t.Errorf("list_targets lacks %s", tg.Kind)
		}
	}
	if len(Catalog) < 20 {
		t.Fatalf("only %d kinds", len(Catalog))
	}
}

func TestScanOnlyFiltersByKindAndEcosystem(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.root, "js"))
	testfs.Write(t, filepath.Join(e.root, "rs", "Cargo.toml"), "[package]")
	testfs.Write(t, filepath.Join(e.root, "rs", "target", "x"), "x")
	s := e.scanOK(map[string]any{"only": []string{"rust"}})
	if len(s.Finds) != 1 || s.Finds[0].Kind != "cargo" {
		t.Fatalf("only rust: %v", paths(s))
	}
	s = e.scanOK(map[string]any{"only": []string{"node_modules"}})
	if len(s.Finds) != 1 || s.Finds[0].Kind != "node_modules" {
		t.Fatalf("only node_modules: %v", paths(s))
	}
}

func TestScanNeverDescendsIntoFinds(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	nodeProject(t, filepath.Join(nm, "inner"))
	nodeProject(t, filepath.Join(nm, "inner", "node_modules", "deeper"))
	testfs.Write(t, filepath.Join(nm, "py", "x.py"), "print(1)")
	testfs.Write(t, filepath.Join(nm, "py", "__pycache__", "x.pyc"), "c")
	testfs.Write(t, filepath.Join(e.root, "rs", "Cargo.toml"), "[package]")
	testfs.Write(t, filepath.Join(e.root, "rs", "target", "Cargo.toml"), "[package]")
	testfs.Write(t, filepath.Join(e.root, "rs", "target", "target", "x"), "x")
	s := e.scanOK(nil)
	if len(s.Finds) != 2 {
		t.Fatalf("want proj/node_modules and rs/target only, got %v", paths(s))
	}
	findAt(t, s, nm)
	findAt(t, s, filepath.Join(e.root, "rs", "target"))
}

func TestScanSkipsVCSDirectories(t *testing.T) {
	e := newEnv(t)
	for _, vcs := range []string{".git", ".hg", ".svn", ".jj", ".bzr", "_darcs", ".pijul"} {
		nodeProject(t, filepath.Join(e.root, "repo", vcs, "objects", "proj"))
		nodeProject(t, filepath.Join(e.root, "repo", vcs))
	}
	nm := nodeProject(t, filepath.Join(e.root, "repo"))
	s := e.scanOK(nil)
	if len(s.Finds) != 1 {
		t.Fatalf("want only repo/node_modules, got %v", paths(s))
	}
	findAt(t, s, nm)
}

func TestScanResultIsBoundedAndTruncated(t *testing.T) {
	e := newEnv(t, withMaxFinds(5))
	for i := 1; i <= 8; i++ {
		nm := nodeProject(t, filepath.Join(e.root, "p"+string(rune('0'+i))))
		testfs.Write(t, filepath.Join(nm, "blob"), strings.Repeat("b", i*64*1024))
	}
	s := e.scanOK(nil)
	if len(s.Finds) != 5 || !s.Truncated || s.Count != 8 {
		t.Fatalf("got %d finds, truncated=%v, count=%d; want 5, true, 8", len(s.Finds), s.Truncated, s.Count)
	}
	for i := 1; i < len(s.Finds); i++ {
		if s.Finds[i].SizeBytes > s.Finds[i-1].SizeBytes {
			t.Fatalf("not largest first: %+v", s.Finds)
		}
	}
	if s.Finds[0].Path != filepath.Join(e.root, "p8", "node_modules") {
		t.Fatalf("largest is %s", s.Finds[0].Path)
	}
	var sum int64
	for _, f := range s.Finds {
		sum += f.SizeBytes
	}
	if s.TotalBytes <= sum {
		t.Fatalf("total_bytes %d should count all 8 finds (shown sum %d)", s.TotalBytes, sum)
	}
	// min_size_mb filters before the bound.
	s = e.scanOK(map[string]any{"min_size_mb": 0.4})
	if s.Truncated || s.Count != len(s.Finds) {
		t.Fatalf("min_size_mb: %+v", s)
	}
	for _, f := range s.Finds {
		if f.SizeBytes < 419430 {
			t.Fatalf("min_size_mb let %d bytes through", f.SizeBytes)
		}
	}
}

func TestSeveralRootsKeepTheirBoundaries(t *testing.T) {
	base := canon(t, t.TempDir())
	// Two roots whose names share a prefix, and a directory outside both.
	r1, r2 := filepath.Join(base, "r"), filepath.Join(base, "r2")
	nodeProject(t, filepath.Join(r1, "p"))
	nodeProject(t, filepath.Join(r2, "p"))
	nodeProject(t, filepath.Join(base, "outside", "p"))
	e := newEnv(t, func(o *Options) {
		o.Roots = nil
		for _, r := range []string{r1, r2} {
			jr, err := jail.OpenRoot(r)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { jr.Close() })
			o.Roots = append(o.Roots, jr)
		}
	})
	s := e.scanOK(nil)
	if len(s.Finds) != 2 {
		t.Fatalf("finds %v", paths(s))
	}
	findAt(t, s, filepath.Join(r1, "p", "node_modules"))
	findAt(t, s, filepath.Join(r2, "p", "node_modules"))
	// A relative path is ambiguous with two roots.
	wantCode(t, e.call("scan", map[string]any{"path": "p"}), "INVALID_REQUEST")
	s = e.scanOK(map[string]any{"path": filepath.Join(r2, "p")})
	if s.Root != r2 || len(s.Finds) != 1 || s.Finds[0].Path != filepath.Join(r2, "p", "node_modules") {
		t.Fatalf("scan in r2: %+v", s)
	}
	for _, c := range []pathCase{
		{"the roots' parent", base}, {"outside both", filepath.Join(base, "outside")},
		{"out of the first", r1 + "/../outside"}, {"out of the second through the first", r2 + "/../r/../outside"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("scan", map[string]any{"path": c.path}), "PATH_ESCAPE")
		})
	}
}

func TestFindDirectlyUnderTheRootAndTheRootItselfIsNeverAFind(t *testing.T) {
	e := newEnv(t)
	// The root itself is a project; its node_modules is a find, the root never is.
	nm := nodeProject(t, e.root)
	testfs.Write(t, filepath.Join(e.root, "Cargo.toml"), "[package]")
	s := e.scanOK(map[string]any{"path": e.root})
	if len(s.Finds) != 1 || s.Finds[0].Path != nm {
		t.Fatalf("finds %v", paths(s))
	}
	r, _ := e.reclaim(map[string]any{"ids": []string{s.Finds[0].ID}, "confirm": "delete"})
	wantCode(t, r, "OK")
	mustExist(t, filepath.Join(e.root, "package.json"))
	mustExist(t, e.root)
}

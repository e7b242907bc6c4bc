package sweep

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/jail"
)

// benchTree writes projects node projects, each with a package.json, a
// little source and a node_modules of pkgs packages × files files.
func benchTree(b *testing.B, dir string, projects, pkgs, files int) int {
	b.Helper()
	n := 0
	payload := []byte(strings.Repeat("x", 300))
	for p := range projects {
		proj := filepath.Join(dir, fmt.Sprintf("group%02d", p%25), fmt.Sprintf("proj%03d", p))
		must(b, os.MkdirAll(filepath.Join(proj, "src"), 0o755))
		must(b, os.WriteFile(filepath.Join(proj, "package.json"), []byte(`{"name":"p"}`), 0o644))
		must(b, os.WriteFile(filepath.Join(proj, "src", "index.js"), payload, 0o644))
		n += 2
		for k := range pkgs {
			pd := filepath.Join(proj, "node_modules", fmt.Sprintf("pkg%02d", k), "lib")
			must(b, os.MkdirAll(pd, 0o755))
			for f := range files {
				must(b, os.WriteFile(filepath.Join(pd, fmt.Sprintf("f%02d.js", f)), payload, 0o644))
				n++
			}
		}
	}
	return n
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func timeIt(f func()) time.Duration { t := time.Now(); f(); return time.Since(t) }

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// baselineScan is `find ROOT -name node_modules -prune` then `du -s` of the finds.
func baselineScan(b *testing.B, root string) int {
	out, err := exec.Command("find", root, "-type", "d", "-name", "node_modules", "-prune", "-print").Output()
	must(b, err)
	finds := strings.Fields(string(out))
	must(b, exec.Command("du", append([]string{"-s"}, finds...)...).Run())
	return len(finds)
}

func benchServer(b *testing.B, root string) *Server {
	jr, err := jail.OpenRoot(root)
	must(b, err)
	log, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Server: "sweepd"})
	must(b, err)
	b.Cleanup(func() { log.Close(); jr.Close() })
	s, err := New(Options{Roots: []*jail.Root{jr}, Audit: log, MaxFinds: 100000})
	must(b, err)
	return s
}

func scanIDs(b *testing.B, s *Server) []string {
	r := s.scan(context.Background(), mcp.CallToolRequest{}, scanArgs{})
	if !r.OK {
		b.Fatalf("scan: %s %s", r.Code, r.Reason)
	}
	var out []string
	for _, f := range r.Detail.(map[string]any)["finds"].([]Find) {
		out = append(out, f.ID)
	}
	return out
}

// BenchmarkScanAndReclaimVsFindDuRm measures, on one generated tree of 500
// projects and 200,000+ files, sweepd's scan (discovery + disk usage + each
// find's radar view) against `find -prune` + `du -s` (sub-benchmark scan),
// and deleting every find against `rm -rf` of the same directories on an
// identical copy (sub-benchmark delete). It prints the ratios (goals: scan
// ≤ 1.0×, delete ≤ 1.25×). `-bench 'ScanAndReclaimVsFindDuRm/scan'` runs the
// scan alone.
func BenchmarkScanAndReclaimVsFindDuRm(b *testing.B) {
	base := b.TempDir()
	src := filepath.Join(base, "tree")
	files := benchTree(b, src, 500, 20, 20)
	b.Run("scan", func(b *testing.B) { benchScanVsFindDu(b, src, files) })
	b.Run("delete", func(b *testing.B) { benchReclaimVsRm(b, base, src) })
}

// benchScanVsFindDu times 5 alternating rounds of find+du and sweepd's scan
// of src and reports the ratio of the medians.
func benchScanVsFindDu(b *testing.B, src string, files int) {
	for range b.N {
		var ours, theirs []time.Duration
		s := benchServer(b, src)
		var nFinds, nOurs int
		for range 5 {
			theirs = append(theirs, timeIt(func() { nFinds = baselineScan(b, src) }))
			ours = append(ours, timeIt(func() { nOurs = len(scanIDs(b, s)) }))
		}
		if nFinds != nOurs {
			b.Fatalf("find saw %d node_modules, sweepd %d", nFinds, nOurs)
		}
		mo, mt := median(ours), median(theirs)
		fmt.Printf("scan: %d files, %d finds: sweepd %v, find+du %v, ratio %.2fx (goal <= 1.0x)\n", files, nOurs, mo, mt, float64(mo)/float64(mt))
		b.ReportMetric(float64(mo)/float64(mt), "scan-ratio")
	}
}

// benchReclaimVsRm times rm -rf of every find on one copy of src against
// sweepd's confirmed reclaim of every find on another.
func benchReclaimVsRm(b *testing.B, base, src string) {
	for range b.N {
		copyA, copyB := filepath.Join(base, "a"), filepath.Join(base, "b")
		must(b, exec.Command("cp", "-a", src, copyA).Run())
		must(b, exec.Command("cp", "-a", src, copyB).Run())
		out, err := exec.Command("find", copyA, "-type", "d", "-name", "node_modules", "-prune", "-print").Output()
		must(b, err)
		dirs := strings.Fields(string(out))
		exec.Command("sync").Run()
		rm := timeIt(func() { must(b, exec.Command("rm", append([]string{"-rf"}, dirs...)...).Run()) })
		sb := benchServer(b, copyB)
		ids := scanIDs(b, sb)
		exec.Command("sync").Run()
		confirm := "delete"
		del := timeIt(func() {
			res := sb.reclaim(context.Background(), mcp.CallToolRequest{}, reclaimArgs{IDs: ids, Confirm: &confirm})
			if !res.OK {
				b.Fatalf("reclaim: %s %s", res.Code, res.Reason)
			}
		})
		fmt.Printf("delete: %d dirs: sweepd reclaim %v, rm -rf %v, ratio %.2fx (goal <= 1.25x; includes 2 fsync'd audit records and the aside rename's directory fsyncs per find)\n", len(ids), del, rm, float64(del)/float64(rm))
		b.ReportMetric(float64(del)/float64(rm), "delete-ratio")
		os.RemoveAll(copyA)
		os.RemoveAll(copyB)
	}
}

// BenchmarkReposScanVsFindDu is the scan of BenchmarkScanAndReclaimVsFindDuRm
// on a ~/code root of 200 git repositories and 200,000 files: each project
// a repository (package.json, src and a .gitignore committed), every tenth
// also committing one package of its node_modules (that find is kept). The
// scan reads each repository's git files to count every find's tracked
// files; the goal is still ≤ 1.0× find -prune + du -s of the same tree.
func BenchmarkReposScanVsFindDu(b *testing.B) {
	src := filepath.Join(b.TempDir(), "code")
	files := benchTree(b, src, 200, 25, 40)
	projects, err := filepath.Glob(filepath.Join(src, "group*", "proj*"))
	must(b, err)
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	for i, p := range projects {
		must(b, os.WriteFile(filepath.Join(p, ".gitignore"), []byte("node_modules/\n"), 0o644))
		git(p, "init", "-q")
		git(p, "add", "package.json", "src", ".gitignore")
		if i%10 == 0 {
			git(p, "add", "-f", "node_modules/pkg00")
		}
	}
	benchScanVsFindDu(b, src, files)
}

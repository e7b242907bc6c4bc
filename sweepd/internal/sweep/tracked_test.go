package sweep

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/approval/approvaltest"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// gitIn runs git in dir, isolated from the machine's configuration.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "xdg"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, errb.String())
	}
}

// committedNodeModules makes root/<name>, a repository below the root
// (the root itself is none, as ~/code is not), with a node_modules its
// .gitignore ignores yet whose left-pad/index.js was added with git add
// -f and committed, as a JavaScript action commits its dependencies.
func committedNodeModules(t *testing.T, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	nm := nodeProject(t, dir)
	testfs.Write(t, filepath.Join(dir, ".gitignore"), "node_modules/\n")
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", ".gitignore", "package.json")
	gitIn(t, dir, "add", "-f", "node_modules/left-pad/index.js")
	gitIn(t, dir, "commit", "-q", "-m", "x")
	return nm
}

// TestCommittedNodeModulesUnderARepositoryIsKept: a find holding a file
// git tracks (added with -f despite an ignore rule) in a repository below
// the root is listed keep: true with a reason counting the tracked file
// and naming the repository; its reclaim is refused, dry run and
// confirmed, and nothing is deleted. A find in another repository whose
// node_modules git only ignores stays reclaimable.
func TestCommittedNodeModulesUnderARepositoryIsKept(t *testing.T) {
	e := newEnv(t)
	nm := committedNodeModules(t, e.root, "action")
	plain := filepath.Join(e.root, "webapp")
	plainNM := nodeProject(t, plain)
	testfs.Write(t, filepath.Join(plain, ".gitignore"), "node_modules/\n")
	gitIn(t, plain, "init", "-q")
	gitIn(t, plain, "add", ".gitignore", "package.json")

	r0 := e.call("scan", map[string]any{})
	wantCode(t, r0, "OK")
	if !strings.Contains(r0.Reason, "1 of the finds shown are kept because git tracks files in them") {
		t.Fatalf("scan reason %q does not say a find is kept for git", r0.Reason)
	}
	s := scanOf(t, r0)
	f := findAt(t, s, nm)
	if !f.Keep || !strings.Contains(f.KeepReason, "holds 1 file(s) tracked by git") || !strings.Contains(f.KeepReason, `"action"`) ||
		!strings.Contains(f.KeepReason, "allow_tracked") {
		t.Fatalf("committed node_modules: keep %v, reason %q", f.Keep, f.KeepReason)
	}
	if f.Inside == nil || f.Inside.TrackedCount != 1 || len(f.Inside.Tracked) != 1 || f.Inside.Tracked[0] != "left-pad/index.js" {
		t.Fatalf("inside %+v, want the tracked left-pad/index.js", f.Inside)
	}
	if g := findAt(t, s, plainNM); g.Keep || g.KeepReason != "" || g.Inside != nil {
		t.Fatalf("ignored, untracked node_modules: keep %v, reason %q, inside %+v", g.Keep, g.KeepReason, g.Inside)
	}
	r, d := e.reclaim(map[string]any{"ids": []string{f.ID}})
	wantCode(t, r, "POLICY_DENIED")
	if o := oneOutcome(t, d); !strings.Contains(o.Reason, "tracked by git") {
		t.Fatalf("dry run reason %q", o.Reason)
	}
	r, _ = e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "POLICY_DENIED")
	mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
	mustExist(t, filepath.Join(nm, ".bin", "tool"))
	g := findAt(t, s, plainNM)
	r, _ = e.reclaim(map[string]any{"ids": []string{g.ID}, "confirm": "delete"})
	wantCode(t, r, "OK")
	if exists(plainNM) {
		t.Fatal("the untracked node_modules was not deleted")
	}
}

// TestFindTrackedAfterTheScanIsRefused: a file git add -f'ed after the
// scan is seen by the reclaim's own look at the index: refused.
func TestFindTrackedAfterTheScanIsRefused(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.root, "late")
	nm := nodeProject(t, dir)
	gitIn(t, dir, "init", "-q")
	f := e.scanOne("late")
	if f.Keep {
		t.Fatalf("nothing tracked yet, but keep: %q", f.KeepReason)
	}
	gitIn(t, dir, "add", "-f", "node_modules/left-pad/package.json")
	r, _ := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
	wantCode(t, r, "POLICY_DENIED")
	mustExist(t, filepath.Join(nm, "left-pad", "package.json"))
}

func withAllowTracked(o *Options) { o.AllowTracked = true }

// TestAllowTrackedReclaimDeclinedDeletesNothing: with [sweep]
// allow_tracked, a tracked find is reclaimable, the person's question
// counts and names the tracked files that would go, and a person who
// declines deletes nothing.
func TestAllowTrackedReclaimDeclinedDeletesNothing(t *testing.T) {
	for _, er := range approvaltest.Eras {
		t.Run(er.Name, func(t *testing.T) {
			p := &approvaltest.Person{Action: mcp.ElicitationResponseActionDecline}
			e := newEnv(t, withAsker(approval.FallbackRefuse, time.Minute), withAllowTracked)
			e.c = approvaltest.Connect(t, e.srv.MCP(), er, p)
			nm := committedNodeModules(t, e.root, "action")
			f := e.scanOne("action")
			if f.Keep || !strings.Contains(f.KeepReason, "allow_tracked = true lets it be reclaimed") {
				t.Fatalf("allow_tracked: keep %v, reason %q", f.Keep, f.KeepReason)
			}
			r, _ := e.deleteIDs(f.ID)
			wantCode(t, r, "POLICY_DENIED")
			msgs := p.Messages()
			if len(msgs) != 1 || !strings.Contains(msgs[0], "Files tracked by git that go with them ([sweep] allow_tracked): 1") ||
				!strings.Contains(msgs[0], `left-pad/index.js`) {
				t.Fatalf("the person was asked %q", msgs)
			}
			mustExist(t, filepath.Join(nm, "left-pad", "index.js"))
			mustExist(t, filepath.Join(nm, "left-pad", "package.json"))
		})
	}
}

// TestQuestionNamesHighRiskAndTrackedFilesInside: the .env a scan's radar
// flags inside a find and the file git tracks there are both named in
// the dry run's answer and in the person's question, not only "N
// directories, M KiB".
func TestQuestionNamesHighRiskAndTrackedFilesInside(t *testing.T) {
	for _, er := range approvaltest.Eras {
		t.Run(er.Name, func(t *testing.T) {
			p := &approvaltest.Person{Action: mcp.ElicitationResponseActionDecline}
			e := newEnv(t, withAsker(approval.FallbackRefuse, time.Minute), withAllowTracked)
			e.c = approvaltest.Connect(t, e.srv.MCP(), er, p)
			nm := committedNodeModules(t, e.root, "webapp")
			testfs.Write(t, filepath.Join(nm, ".env"), "API_TOKEN=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n")
			f := e.scanOne("webapp")
			_, d := e.reclaim(map[string]any{"ids": []string{f.ID}})
			o := oneOutcome(t, d)
			if o.Inside == nil || o.Inside.HighRiskCount != 1 || len(o.Inside.HighRisk) != 1 || o.Inside.HighRisk[0] != ".env" ||
				o.Inside.TrackedCount != 1 || o.Inside.Tracked[0] != "left-pad/index.js" {
				t.Fatalf("dry run's inside %+v", o.Inside)
			}
			r, _ := e.deleteIDs(f.ID)
			wantCode(t, r, "POLICY_DENIED")
			msgs := p.Messages()
			if len(msgs) != 1 || !strings.Contains(msgs[0], `HIGH_RISK inside (risk radar): 1 file(s): ".env"`) ||
				!strings.Contains(msgs[0], `tracked by git in "webapp": 1 file(s): "left-pad/index.js"`) ||
				!strings.Contains(msgs[0], "HIGH_RISK files inside (risk radar): 1") {
				t.Fatalf("the person was asked %q", msgs)
			}
			mustExist(t, filepath.Join(nm, ".env"))
		})
	}
}

// TestFindRadarCountsAreListedOrExplained: a .env.local holding only
// placeholders is lowered to NORMAL; counted in not_ignorable, it is not
// listed, and the radar says so and why (not_ignorable: 1 with no item and
// no word was what a person saw).
func TestFindRadarCountsAreListedOrExplained(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "p"))
	testfs.Write(t, filepath.Join(nm, "a", ".env.local"), "API_KEY=changeme\n")
	f := e.scanOne("p")
	fr := f.Radar
	if fr == nil || fr.NotIgnorable != 1 || len(fr.Items) != 0 || fr.Normal != 1 || !strings.Contains(fr.Unlisted, "1 NORMAL file(s) are counted in not_ignorable but not listed") {
		t.Fatalf("radar %+v: want the lowered .env.local counted as NORMAL and its absence from items explained", fr)
	}
}

// gitOut runs git in dir, isolated, and returns its output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "xdg"), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// TestEveryFindHoldingTrackedFilesIsKept: on a ~/code root of
// repositories (node_modules committed, ignored, or untracked; a linked
// worktree of a committing repository; a submodule that commits its
// node_modules; a .git file pointing outside the root), every find is kept
// exactly when git ls-files in its own repository lists a path in it, or
// its repository's git files cannot be read, and the reason says so.
func TestEveryFindHoldingTrackedFilesIsKept(t *testing.T) {
	e := newEnv(t)
	var committing []string
	for i := range 9 {
		name := filepath.Join(e.root, "r"+strconv.Itoa(i))
		switch i % 3 {
		case 0:
			committedNodeModules(t, e.root, "r"+strconv.Itoa(i))
			committing = append(committing, name)
		case 1:
			nodeProject(t, name)
			testfs.Write(t, filepath.Join(name, ".gitignore"), "node_modules/\n")
			gitIn(t, name, "init", "-q")
			gitIn(t, name, "add", ".gitignore", "package.json")
			gitIn(t, name, "commit", "-q", "-m", "x")
		default:
			nodeProject(t, name)
			gitIn(t, name, "init", "-q")
		}
	}
	gitIn(t, committing[0], "worktree", "add", "-q", filepath.Join(e.root, "wt"))
	src := filepath.Join(e.outside, "subsrc")
	committedNodeModules(t, e.outside, "subsrc")
	gitIn(t, committing[1], "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
	nodeProject(t, filepath.Join(e.root, "escape"))
	testfs.Write(t, filepath.Join(e.root, "escape", ".git"), "gitdir: "+filepath.Join(e.outside, "subsrc", ".git")+"\n")

	s := e.scanOK(map[string]any{})
	if len(s.Finds) != 12 {
		t.Fatalf("%d finds, want 12: %v", len(s.Finds), paths(s))
	}
	for _, f := range s.Finds {
		project := filepath.Dir(f.Path)
		var tracked int
		if filepath.Base(project) != "escape" {
			tracked = len(strings.Fields(gitOut(t, project, "ls-files", "--", "node_modules")))
		}
		switch {
		case filepath.Base(project) == "escape":
			if !f.Keep || !strings.Contains(f.KeepReason, "whose git files were not read") {
				t.Errorf("%s (a .git file pointing outside): keep %v, reason %q", f.Path, f.Keep, f.KeepReason)
			}
		case tracked > 0:
			want := "holds " + strconv.Itoa(tracked) + " file(s) tracked by git"
			if !f.Keep || !strings.Contains(f.KeepReason, want) {
				t.Errorf("%s (git tracks %d): keep %v, reason %q", f.Path, tracked, f.Keep, f.KeepReason)
			}
		default:
			if f.Keep {
				t.Errorf("%s (nothing tracked): keep, reason %q", f.Path, f.KeepReason)
			}
		}
	}
}

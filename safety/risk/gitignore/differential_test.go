package gitignore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// names are the path components the corpus builds trees from: ordinary
// names, dotfiles, names holding gitignore metacharacters, and names with
// leading/trailing spaces.
var names = []string{
	"a", "b", "c", "ab", "abc", "ba", "foo", "bar", "baz", "Foo", "ten", "t3",
	"foo.txt", "bar.txt", "a.pem", "x.key", "b.key.bak", ".env", ".env.local",
	"id_rsa", "id_rsa.pub", "node_modules", "build", "dist", "src", "lib",
	"logs", "x.log", "#x", "!x", "a b", "b ", " c", "[a]", "a*b", "a?b",
	`x\y`, "-a", "]", "1", "v9", "foo.bar.baz", "doc", "sub", "deep",
}

type corpusCase struct {
	lines []string
	paths []string        // every path, ancestors included, sorted
	isDir map[string]bool // by path
}

// genCase builds one deterministic case: a small tree and a pattern list
// made mostly from that tree's own names, so that matches are common.
func genCase(r *rand.Rand) corpusCase {
	c := corpusCase{isDir: map[string]bool{}}
	leaves := 3 + r.IntN(8)
	var treeNames []string
	for range leaves {
		depth := 1 + r.IntN(4)
		var parts []string
		for range depth {
			n := names[r.IntN(len(names))]
			parts = append(parts, n)
			treeNames = append(treeNames, n)
		}
		p := strings.Join(parts, "/")
		for i := range parts[:len(parts)-1] {
			c.isDir[strings.Join(parts[:i+1], "/")] = true
		}
		if _, seen := c.isDir[p]; !seen {
			c.isDir[p] = r.IntN(3) == 0
		}
	}
	// A path first generated as a file may have become an ancestor.
	for p := range c.isDir {
		for i := 0; i < len(p); i++ {
			if p[i] == '/' {
				c.isDir[p[:i]] = true
			}
		}
	}
	for p := range c.isDir {
		c.paths = append(c.paths, p)
	}
	sort.Strings(c.paths)
	nlines := 1 + r.IntN(6)
	for range nlines {
		c.lines = append(c.lines, genLine(r, treeNames))
	}
	return c
}

func genLine(r *rand.Rand, treeNames []string) string {
	switch r.IntN(20) {
	case 0:
		return "# comment " + treeNames[r.IntN(len(treeNames))]
	case 1:
		return []string{"", "   ", "\t", "!", "/", "//", "**", "!**", "\\", "\r"}[r.IntN(10)]
	case 2:
		return `\#x`
	case 3:
		return `\!x`
	}
	p := genPattern(r, treeNames)
	if r.IntN(3) == 0 {
		p = "!" + p
	}
	switch r.IntN(12) {
	case 0:
		p += "  "
	case 1:
		p += `\ `
	case 2:
		p += `\  `
	case 3:
		p += "\t"
	case 4:
		p += "\r"
	}
	return p
}

func genPattern(r *rand.Rand, treeNames []string) string {
	var b strings.Builder
	switch r.IntN(6) {
	case 0:
		b.WriteString("/")
	case 1:
		b.WriteString("**/")
	}
	segs := 1
	if r.IntN(2) == 0 {
		segs += r.IntN(3)
	}
	for i := range segs {
		if i > 0 {
			b.WriteString("/")
			if r.IntN(8) == 0 {
				b.WriteString("**/")
			}
		}
		b.WriteString(genSegment(r, treeNames))
	}
	switch r.IntN(8) {
	case 0:
		b.WriteString("/")
	case 1:
		b.WriteString("/**")
	case 2:
		b.WriteString("/*")
	case 3:
		b.WriteString("**")
	}
	return b.String()
}

func genSegment(r *rand.Rand, treeNames []string) string {
	n := treeNames[r.IntN(len(treeNames))]
	if r.IntN(10) == 0 {
		n = names[r.IntN(len(names))]
	}
	switch r.IntN(14) {
	case 0:
		return "*"
	case 1:
		return "**"
	case 2:
		return "*" + n[len(n)/2:]
	case 3:
		return n[:len(n)/2] + "*"
	}
	var b strings.Builder
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch r.IntN(16) {
		case 0:
			b.WriteByte('?')
		case 1:
			b.WriteByte('*')
		case 2:
			fmt.Fprintf(&b, "[%c%c]", c, 'z')
		case 3:
			b.WriteString([]string{"[!a]", "[^b]", "[a-f]", "[!a-c]", "[]a]", "[!]]", "[-a]", "[a-]"}[r.IntN(8)])
		case 4:
			b.WriteString([]string{"[[:alpha:]]", "[[:digit:]]", "[[:alnum:]]", "[[:punct:]]", "[[:space:]]", "[[:upper:]]", "[[:lower:]]", "[[:xdigit:]]", "[[:bogus:]]", "[[:alpha:]0-9]", "[x[:]"}[r.IntN(11)])
		case 5:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			if c == '\\' && r.IntN(2) == 0 {
				b.WriteString(`\\`)
				continue
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// gitAnswer is what git check-ignore -v reports for one path.
type gitAnswer struct {
	excluded bool
	rule     int
}

func runGit(t *testing.T, gitDir, work string, paths []string) map[string]gitAnswer {
	cmd := exec.Command("git", "--git-dir="+gitDir, "--work-tree="+work,
		"check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	cmd.Dir = work
	cmd.Env = gitEnv(t)
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// Exit status 1 means "nothing ignored", which -n turns into output.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("git check-ignore: %v: %s", err, errb.String())
		}
	}
	fields := strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00")
	if len(fields)%4 != 0 {
		t.Fatalf("git check-ignore: unexpected output %q", out.String())
	}
	got := map[string]gitAnswer{}
	for i := 0; i < len(fields); i += 4 {
		lineno, pat, path := fields[i+1], fields[i+2], fields[i+3]
		a := gitAnswer{rule: -1}
		if lineno != "" {
			n, err := strconv.Atoi(lineno)
			if err != nil {
				t.Fatalf("git check-ignore: bad line number %q", lineno)
			}
			a.rule = n - 1
			a.excluded = !strings.HasPrefix(pat, "!")
		}
		got[path] = a
	}
	return got
}

var (
	envOnce sync.Once
	envVal  []string
)

// gitEnv isolates git from the machine's and the user's configuration, so
// no global excludes file takes part.
func gitEnv(t *testing.T) []string {
	envOnce.Do(func() {
		home := filepath.Join(os.TempDir(), "gitignore-test-home-"+strconv.Itoa(os.Getpid()))
		envVal = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"HOME="+home, "XDG_CONFIG_HOME="+home, "LC_ALL=C")
	})
	return envVal
}

func materialize(t *testing.T, dir string, c corpusCase) {
	for _, p := range c.paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if c.isDir[p] {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	content := strings.Join(c.lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMatchAgreesWithGitCheckIgnore compares Match with git itself on a
// generated corpus: every (pattern list, path) pair must get the same
// verdict and the same deciding line.
func TestMatchAgreesWithGitCheckIgnore(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required: it is the oracle of this differential test (install it; .ci/run does)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the corpus uses names Windows cannot create")
	}
	const nCases = 800
	base := t.TempDir()
	gitDir := initBareRepo(t, base)

	r := rand.New(rand.NewPCG(20260501, 5))
	cases := make([]corpusCase, nCases)
	for i := range cases {
		cases[i] = genCase(r)
	}

	var (
		mu       sync.Mutex
		tally    gitTally
		failures []string
	)
	inParallel(len(cases), func(i int) {
		c := cases[i]
		dir := filepath.Join(base, "case"+strconv.Itoa(i))
		materialize(t, dir, c)
		want := runGit(t, gitDir, dir, c.paths)
		m, err := Compile(c.lines)
		if err != nil {
			t.Errorf("case %d: Compile: %v", i, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, f := range tally.compare(fmt.Sprintf("case %d", i), m, c.paths, c.isDir, want) {
			failures = append(failures, f+"\npatterns:\n"+quoteLines(c.lines))
		}
	})
	pairs, excluded, negated := tally.pairs, tally.excluded, tally.negated
	t.Logf("%d cases, %d (pattern list, path) pairs: %d excluded, %d re-included by a negation", nCases, pairs, excluded, negated)
	if excluded < pairs/10 || negated < pairs/100 {
		t.Errorf("corpus too weak: %d excluded, %d negated of %d", excluded, negated, pairs)
	}
	for i, f := range failures {
		if i == 20 {
			t.Errorf("... and %d more disagreements", len(failures)-20)
			break
		}
		t.Error(f)
	}
}

// gitTally counts the (pattern list, path) pairs compared with git.
type gitTally struct{ pairs, excluded, negated int }

// compare checks Match, and a Set carried down the tree as the walker
// carries it, against git's answers want for paths; it counts the pairs in
// g and returns each disagreement, prefixed by name. Lines are numbered
// from 1 (0: no line decided).
func (g *gitTally) compare(name string, m *Matcher, paths []string, isDir map[string]bool, want map[string]gitAnswer) []string {
	carried := carry(NewSet(m), paths, isDir)
	var out []string
	for _, p := range paths {
		w, ok := want[p]
		if !ok {
			out = append(out, fmt.Sprintf("%s: git gave no answer for %q", name, p))
			continue
		}
		g.pairs++
		if w.excluded {
			g.excluded++
		} else if w.rule >= 0 {
			g.negated++
		}
		gotEx, gotRule := m.Match(p, isDir[p])
		set := carried[p][0]
		setOK := !w.excluded && set == -1 || w.excluded && set == int32(w.rule)
		if gotEx != w.excluded || gotRule != w.rule || !setOK {
			out = append(out, fmt.Sprintf(
				"%s: path %q (dir=%v): git says excluded=%v line=%d; Match says excluded=%v line=%d; Set.Child says line %d",
				name, p, isDir[p], w.excluded, w.rule+1, gotEx, gotRule+1, set+1))
		}
	}
	return out
}

func quoteLines(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "  %d: %q\n", i+1, l)
	}
	return b.String()
}

// inParallel calls f(0) … f(n-1), as many at once as there are CPUs, and
// returns when all have.
func inParallel(n int, f func(i int)) {
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

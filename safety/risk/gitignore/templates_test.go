package gitignore

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// templateDir holds github/gitignore's templates (see its README).
const templateDir = "testdata/github-gitignore"

// templateFiles lists every vendored *.gitignore template, relative to
// templateDir.
func templateFiles(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir(templateDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".gitignore") {
			rel, _ := filepath.Rel(templateDir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// templateLines splits a template the way Compile's callers do: on "\n",
// without the empty piece after the last newline.
func templateLines(data []byte) []string {
	lines := strings.Split(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	return lines
}

// instantiate turns a pattern body into a path that exercises it: each
// wildcard is replaced by the variant's choice ("*" by "", "x" or "ab";
// "**" by "", "d" or "d/e"; "?" by "q"; a bracket class by one of its
// members or, negated, by a byte it excludes); a backslash keeps the
// byte after it.
func instantiate(body string, variant int) string {
	star := []string{"", "x", "ab"}[variant%3]
	stars := []string{"", "d", "d/e"}[variant%3]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '*':
			if i+1 < len(body) && body[i+1] == '*' {
				b.WriteString(stars)
				for i+1 < len(body) && body[i+1] == '*' {
					i++
				}
				continue
			}
			b.WriteString(star)
		case '?':
			b.WriteByte('q')
		case '\\':
			if i+1 < len(body) {
				i++
				b.WriteByte(body[i])
			}
		case '[':
			end := strings.IndexByte(body[i+1:], ']')
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			class := body[i+1 : i+1+end]
			if end == 0 { // "[]...]": ']' is the first member
				if e2 := strings.IndexByte(body[i+2:], ']'); e2 >= 0 {
					class = body[i+1 : i+2+e2]
				}
			}
			i += len(class) + 1
			b.WriteByte(classMember(class, variant))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// classMember picks a byte a bracket class matches (or, for some
// variants, a byte it does not), without parsing ranges exactly: git is
// the judge of what matches.
func classMember(class string, variant int) byte {
	if class != "" && (class[0] == '!' || class[0] == '^') {
		return 'Z'
	}
	if class == "" || variant == 2 {
		return '_'
	}
	if strings.HasPrefix(class, "[:") {
		return 'a'
	}
	return class[variant%len(class)]
}

// templatePaths generates the paths for one template: for each pattern,
// instances and near misses (a byte added before or after, nested under a
// directory, a child below it, other case), ancestors included.
func templatePaths(lines []string) (paths []string, isDir map[string]bool) {
	isDir = map[string]bool{}
	seen := map[string]bool{}
	add := func(p string, dir bool) {
		p = strings.Trim(p, "/")
		for strings.Contains(p, "//") {
			p = strings.ReplaceAll(p, "//", "/")
		}
		if p == "" || len(p) > 200 || strings.ContainsAny(p, "\x00\n") {
			return
		}
		if p == ".gitignore" || strings.HasPrefix(p, ".gitignore/") {
			return // the template itself sits there
		}
		for _, part := range strings.Split(p, "/") {
			if part == "." || part == ".." || part == ".git" {
				return
			}
		}
		for i := 0; i < len(p); i++ {
			if p[i] == '/' {
				isDir[p[:i]] = true
			}
		}
		if !seen[p] {
			seen[p] = true
			isDir[p] = isDir[p] || dir
		}
	}
	for _, line := range lines {
		body := strings.TrimRight(strings.TrimSuffix(line, "\r"), " ")
		if body == "" || body[0] == '#' {
			continue
		}
		body = strings.TrimPrefix(body, "!")
		for v := range 3 {
			p := instantiate(body, v)
			add(p, v == 1)
			add(p+"x", false)
			add("x"+p, false)
			add("sub/"+p, v == 2)
			add(p+"/child", false)
			add(strings.ToUpper(p), false)
		}
	}
	for p := range isDir {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, isDir
}

// TestMatchAgreesWithGitOnEveryTemplate compares Match (and the Set's
// carried answers) with git check-ignore --no-index on every template of
// github/gitignore: one git process per template, every generated path
// compared, verdict and deciding line.
func TestMatchAgreesWithGitOnEveryTemplate(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required: it is the oracle of this differential test (install it; .ci/run does)")
	}
	files := templateFiles(t)
	if len(files) < 250 {
		t.Fatalf("only %d templates under %s", len(files), templateDir)
	}
	base := t.TempDir()
	gitDir := initBareRepo(t, base)
	var (
		mu       sync.Mutex
		tally    gitTally
		failures []string
	)
	inParallel(len(files), func(i int) {
		name := files[i]
		data, err := os.ReadFile(filepath.Join(templateDir, filepath.FromSlash(name)))
		if err != nil {
			t.Error(err)
			return
		}
		lines := templateLines(data)
		m, err := Compile(lines)
		if err != nil {
			mu.Lock()
			failures = append(failures, fmt.Sprintf("%s: Compile refused the template: %v", name, err))
			mu.Unlock()
			return
		}
		paths, isDir := templatePaths(lines)
		dir := filepath.Join(base, "t"+strconv.Itoa(i))
		materializeDirs(t, dir, data, paths, isDir)
		want := runGit(t, gitDir, dir, paths)
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, tally.compare(name, m, paths, isDir, want)...)
	})
	pairs, excluded := tally.pairs, tally.excluded
	t.Logf("%d templates, %d paths compared, %d excluded by git", len(files), pairs, excluded)
	if pairs < 20000 || excluded < pairs/5 {
		t.Errorf("corpus too weak: %d paths, %d excluded", pairs, excluded)
	}
	for i, f := range failures {
		if i == 30 {
			t.Errorf("... and %d more", len(failures)-30)
			break
		}
		t.Error(f)
	}
}

// initBareRepo makes the bare repository whose --work-tree each case
// borrows, with an empty info/exclude and case-sensitive matching.
func initBareRepo(t *testing.T, base string) string {
	gitDir := filepath.Join(base, "repo.git")
	for _, args := range [][]string{
		{"init", "-q", "--bare", gitDir},
		{"--git-dir=" + gitDir, "config", "core.ignorecase", "false"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = gitEnv(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(gitDir, "info", "exclude"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return gitDir
}

// materializeDirs writes the template as the tree's .gitignore and
// creates the tree's directories only: git check-ignore takes a path that
// does not exist for a file, which is what the other paths are.
func materializeDirs(t *testing.T, dir string, template []byte, paths []string, isDir map[string]bool) {
	for _, p := range paths {
		if isDir[p] {
			if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(p)), 0o755); err != nil {
				t.Error(err)
				return
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), template, 0o644); err != nil {
		t.Error(err)
	}
}

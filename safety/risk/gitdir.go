package risk

import (
	"io"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// maxGitLinkBytes bounds a .git file or a commondir file the radar reads.
const maxGitLinkBytes = 4096

// locateGitDir finds the git directory of the repository whose top is the
// root-relative directory top ("" for the root): top/.git when it is a
// directory; when it is a file (a linked worktree or a submodule
// checkout), the directory its "gitdir: " line names, and the common
// directory that one's commondir file names (a linked worktree's info/
// lives there). Both must lie inside the root: the path is resolved
// lexically and refused when it leaves the root, before anything at it is
// opened; what is then opened goes through jail, which refuses symbolic
// links and mounts. none reports that top holds no .git at all.
func locateGitDir(root *jail.Root, top string) (gitDir, common, refused string, none bool) {
	dotGit := joinRel(top, ".git")
	fi, err := root.Lstat(dotGit)
	switch {
	case err != nil:
		return "", "", "", true
	case fi.IsDir():
		return dotGit, dotGit, "", false
	case !fi.IsRegular():
		return "", "", ".git is neither a directory nor a regular file; the repository is not read", false
	}
	line, ok := readGitLink(root, dotGit, "gitdir: ")
	if !ok {
		return "", "", "the .git file holds no gitdir line the radar reads; the repository is not read", false
	}
	gitDir, ok = insideRoot(root, top, line)
	if !ok {
		return "", "", "the .git file points outside the roots (gitdir: " + shorten(line, 120) + "); nothing there is read", false
	}
	if di, err := root.Lstat(gitDir); err != nil || !di.IsDir() {
		return "", "", "the .git file's gitdir is not a directory inside the root; the repository is not read", false
	}
	common = gitDir
	if ci, err := root.Lstat(gitDir + "/commondir"); err == nil {
		if !ci.IsRegular() {
			return "", "", "the git directory's commondir is not a regular file; the repository is not read", false
		}
		c, ok := readGitLink(root, gitDir+"/commondir", "")
		if !ok {
			return "", "", "the git directory's commondir could not be read; the repository is not read", false
		}
		if common, ok = insideRoot(root, gitDir, c); !ok {
			return "", "", "the git directory's commondir points outside the roots (" + shorten(c, 120) + "); nothing there is read", false
		}
	}
	return gitDir, common, "", false
}

// readGitLink reads the first line of the small regular file rel, which
// must start with prefix, and returns the rest of it.
func readGitLink(root *jail.Root, rel, prefix string) (string, bool) {
	f, err := root.OpenFile(rel)
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGitLinkBytes+1))
	if err != nil || len(data) > maxGitLinkBytes || !utf8.Valid(data) {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimRight(line, "\r")
	rest, ok := strings.CutPrefix(line, prefix)
	rest = strings.TrimSpace(rest)
	if !ok || rest == "" || strings.ContainsAny(rest, "\x00") {
		return "", false
	}
	return rest, true
}

// insideRoot resolves p, absolute or relative to the root-relative
// directory base, to a root-relative path; false when it leaves the root.
// It is lexical: nothing is opened.
func insideRoot(root *jail.Root, base, p string) (string, bool) {
	if filepath.IsAbs(p) {
		rel, err := root.Clean(p)
		if err != nil || rel == "." {
			return "", false
		}
		return rel, true
	}
	c := path.Clean(path.Join(base, filepath.ToSlash(p)))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.HasPrefix(c, "/") {
		return "", false
	}
	return c, true
}

// joinRel joins a root-relative directory ("" for the root) and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// shorten cuts s to n bytes (at a rune boundary) with an ellipsis.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

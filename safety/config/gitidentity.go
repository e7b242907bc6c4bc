package config

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
)

// GitIdentityFile is the file in terminald's state directory that holds
// the person's git identity for commands ([terminal.sandbox]
// git_identity): a git configuration file with user.name and user.email
// and nothing else.
const GitIdentityFile = "git-identity.gitconfig"

// gitIdentityKeys are the only keys git_identity passes on.
var gitIdentityKeys = []string{"user.name", "user.email"}

// hostGitValue is how a key of the host's global git configuration is
// read; tests replace it.
var hostGitValue = func(key string) string {
	git, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	c := exec.Command(git, "config", "--global", "--includes", "--get", key)
	c.Dir = "/" // never a repository's own configuration
	out, err := c.Output()
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(out), "\n")
}

// GitIdentity reads user.name and user.email from the host's global git
// configuration (git config --global --includes --get, run by the server
// with its own environment), and returns them with the keys it could not
// use and why: unset, or holding a control character. Nothing else of the
// configuration is read.
func GitIdentity() (values map[string]string, skipped []string) {
	values = map[string]string{}
	for _, k := range gitIdentityKeys {
		v := hostGitValue(k)
		switch {
		case v == "":
			skipped = append(skipped, k+" is not set in your global git configuration")
		case strings.IndexFunc(v, unicode.IsControl) >= 0:
			skipped = append(skipped, k+" holds a control character")
		default:
			values[k] = v
		}
	}
	return values, skipped
}

// writeGitIdentity writes the git configuration file of values (user.name
// and user.email) into stateDir, replacing it whole, and returns its path;
// "" when there is nothing to write (and any old file is removed).
func writeGitIdentity(stateDir string, values map[string]string) (string, error) {
	path := filepath.Join(stateDir, GitIdentityFile)
	if len(values) == 0 {
		_ = os.Remove(path)
		return "", nil
	}
	var b strings.Builder
	b.WriteString("# Written by terminald from your global git configuration ([terminal.sandbox] git_identity): user.name and user.email only.\n[user]\n")
	for _, k := range gitIdentityKeys {
		if v, ok := values[k]; ok {
			q := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v)
			fmt.Fprintf(&b, "\t%s = \"%s\"\n", strings.TrimPrefix(k, "user."), q)
		}
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return path, nil
}

package risk

import (
	"os"
	"path/filepath"
	"strings"
)

// maxGitConfigBytes bounds a user git config file the radar reads.
const maxGitConfigBytes = 1 << 20

// globalExcludesFile names the user's global excludes file as git finds
// it: core.excludesFile in $XDG_CONFIG_HOME/git/config (or
// ~/.config/git/config), then ~/.gitconfig (the later file wins), else
// $XDG_CONFIG_HOME/git/ignore (or ~/.config/git/ignore). Only the user's
// files are read, never a repository's own config, which a repository
// author controls. ok is false when a config file holds something this
// small reader does not follow (an include, an escape, a relative path):
// the radar then uses no global excludes rather than guess.
func globalExcludesFile(getenv func(string) string) (name string, ok bool) {
	home := getenv("HOME")
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	var configs []string
	if xdg != "" {
		configs = append(configs, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		configs = append(configs, filepath.Join(home, ".gitconfig"))
	}
	for _, c := range configs {
		data, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		if len(data) > maxGitConfigBytes {
			return "", false
		}
		v, found, good := configExcludesFile(string(data))
		if !good {
			return "", false
		}
		if found {
			name = v
		}
	}
	if name == "" {
		if xdg == "" {
			return "", true
		}
		return filepath.Join(xdg, "git", "ignore"), true
	}
	if rest, ok := strings.CutPrefix(name, "~/"); ok {
		if home == "" {
			return "", false
		}
		name = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(name) {
		return "", false
	}
	return name, true
}

// configExcludesFile finds the last core.excludesFile in one git config
// file. good is false for what it does not follow: include sections,
// continuation lines, escapes, a key without a value.
func configExcludesFile(text string) (value string, found, good bool) {
	inCore := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			return "", false, false
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return "", false, false
			}
			head := strings.ToLower(strings.TrimSpace(line[1:end]))
			if strings.HasPrefix(head, "include") {
				return "", false, false
			}
			inCore = head == "core"
			if rest := strings.TrimSpace(line[end+1:]); rest != "" && rest[0] != '#' && rest[0] != ';' {
				return "", false, false // "[core] key = value" on one line
			}
			continue
		}
		if !inCore {
			continue
		}
		key, val, hasEq := strings.Cut(line, "=")
		if !strings.EqualFold(strings.TrimSpace(key), "excludesfile") {
			continue
		}
		v, ok := configValue(val)
		if !hasEq || !ok {
			return "", false, false
		}
		value, found = v, true
	}
	return value, found, true
}

// configValue reads a plain value: surrounding blanks and a trailing
// comment dropped, one pair of double quotes around the whole allowed, no
// backslash.
func configValue(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if strings.ContainsRune(v, '\\') {
		return "", false
	}
	if strings.HasPrefix(v, "\"") {
		end := strings.IndexByte(v[1:], '"')
		if end < 0 {
			return "", false
		}
		rest := strings.TrimSpace(v[end+2:])
		if rest != "" && rest[0] != '#' && rest[0] != ';' {
			return "", false
		}
		return v[1 : end+1], v[1:end+1] != ""
	}
	if strings.ContainsRune(v, '"') {
		return "", false
	}
	if i := strings.IndexAny(v, "#;"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, v != ""
}

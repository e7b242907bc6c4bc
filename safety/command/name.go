package command

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
)

// aliases maps other names of a program to the one the policy speaks of.
// Prefixed GNU tools (Homebrew's g-prefixed coreutils) are listed one by
// one: a general "strip a leading g" would turn git into it.
var aliases = map[string]string{
	"gawk": "awk", "mawk": "awk", "nawk": "awk", "original-awk": "awk", "busybox-awk": "awk",
	"gfind": "find", "bfind": "find",
	"gtar": "tar", "bsdtar": "tar",
	"gsed": "sed", "ssed": "sed",
	"ggrep": "grep", "egrep": "grep", "fgrep": "grep", "rgrep": "grep",
	"gsort": "sort", "gls": "ls", "gcat": "cat", "ghead": "head", "gtail": "tail", "gwc": "wc",
	"gtouch": "touch", "gmkdir": "mkdir", "gcp": "cp", "gmv": "mv", "gstat": "stat", "gdiff": "diff",
	"gecho": "echo", "gpwd": "pwd", "grm": "rm", "gchmod": "chmod", "gchown": "chown", "gdd": "dd",
	"genv": "env", "gxargs": "xargs", "gtimeout": "timeout", "gnice": "nice", "gnohup": "nohup",
	"gstdbuf": "stdbuf", "gtime": "time", "gchroot": "chroot", "gln": "ln", "gshred": "shred",
	"nodejs": "node", "iojs": "node",
	"pythonw": "python", "pypy": "python", "ipython": "python", "bpython": "python",
	"luajit": "lua",
	"vi":     "vim", "nvim": "vim", "view": "vim", "ex": "vim", "rvim": "vim", "vimdiff": "vim", "gvim": "vim",
	"rbash": "bash", "mksh": "ksh", "pdksh": "ksh", "ksh93": "ksh", "oksh": "ksh",
	"pwsh": "powershell", "sudoedit": "sudo",
}

// versioned names are programs that install under a versioned name
// (python3.12, pip3, perl5.36, php8.2, lua5.4, tclsh8.6, node18).
var versioned = map[string]bool{
	"python": true, "pip": true, "pypy": true, "perl": true, "ruby": true, "php": true,
	"lua": true, "node": true, "tclsh": true, "wish": true, "irb": true, "pydoc": true,
	"ksh": true, "gawk": true,
}

// dotted names are families installed as base.variant (mkfs.ext4, vim.basic).
var dotted = map[string]bool{"mkfs": true, "fsck": true, "vim": true, "mount": true, "umount": true, "python": true}

// Name returns the normalised name of a program: the last element of a
// path, lower-cased, without a trailing ".exe" or trailing dots and spaces,
// with known aliases and version suffixes folded (gawk → awk, python3.12 →
// python, vim.basic → vim). It is the one normalisation of program names:
// argv[0] and every allowlist, denylist and rule entry go through it, so
// an operator writes names as typed (python3) and they match every
// spelling of the program.
func Name(argv0 string) string {
	s := argv0
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	if !plain(s) {
		s = strings.ToLower(strings.TrimRight(s, ". "))
		s = strings.TrimRight(strings.TrimSuffix(s, ".exe"), ". ")
	}
	if a, ok := aliases[s]; ok {
		return a
	}
	if base, _, ok := strings.Cut(s, "."); ok && dotted[base] {
		return fold(base)
	}
	if base := stripVersion(s); base != "" && versioned[base] {
		return fold(base)
	}
	return s
}

// plain reports whether s is lower-case letters, digits, '-', '_' and
// inner dots, and not ending in ".exe": nothing to trim or fold.
func plain(s string) bool {
	if s == "" || s[len(s)-1] == '.' || strings.HasSuffix(s, ".exe") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func fold(s string) string {
	if a, ok := aliases[s]; ok {
		return a
	}
	return s
}

// stripVersion returns the letters before a version suffix such as "3",
// "3.12", "-5.4" or "3.13t", or "" when s has no such suffix.
func stripVersion(s string) string {
	i := 0
	for i < len(s) && s[i] >= 'a' && s[i] <= 'z' {
		i++
	}
	if i == 0 || i == len(s) {
		return ""
	}
	rest := strings.TrimPrefix(s[i:], "-")
	if rest == "" || rest[0] < '0' || rest[0] > '9' {
		return ""
	}
	if n := len(rest); n > 1 && rest[n-1] >= 'a' && rest[n-1] <= 'z' && rest[n-2] >= '0' && rest[n-2] <= '9' {
		rest = rest[:n-1] // python3.13t, python3.7m
	}
	if strings.Trim(rest, "0123456789.") != "" {
		return ""
	}
	return s[:i]
}

// errPathProgram is the refusal for a program named by a path.
var errPathProgram = result.New(result.PolicyDenied,
	"run commands by name; paths to programs are not allowed (./ls or /tmp/x/ls is not ls): "+
		"the program is looked up only in the server's PATH")

// DefaultPath is the scrubbed PATH commands are resolved on when the
// operator sets none ([terminal.env] path).
var DefaultPath = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// Resolve finds the executable for name in the given PATH directories and
// nowhere else. Relative or empty directories are ignored, so the working
// directory is never searched. A name containing a path separator is
// refused (POLICY_DENIED); a name found nowhere is NOT_FOUND.
func Resolve(name string, path []string) (string, error) {
	if name == "" || name == "." || name == ".." {
		return "", result.New(result.InvalidRequest, "the program name is empty")
	}
	if strings.ContainsAny(name, `/\`) {
		return "", errPathProgram
	}
	for _, dir := range path {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		cands := []string{name}
		if runtime.GOOS == "windows" && filepath.Ext(name) == "" {
			cands = []string{name + ".exe", name}
		}
		for _, c := range cands {
			p := filepath.Join(dir, c)
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
				continue
			}
			return p, nil
		}
	}
	return "", result.New(result.NotFound, "the program "+quote(name)+
		" was not found in the server's PATH; check the name, or ask the operator to install it")
}

func quote(s string) string { return "`" + s + "`" }

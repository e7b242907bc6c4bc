package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/result"
)

// DefaultDir returns the directory for Bastion's state files:
// $XDG_STATE_HOME/bastion when XDG_STATE_HOME is set to an absolute path,
// else $HOME/.local/state/bastion. It refuses (INVALID_REQUEST) when there
// is no absolute home directory, rather than fall back to a relative path.
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "bastion"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", result.Wrap(result.InvalidRequest,
			"there is no absolute home directory (HOME) for the default state directory; name the audit log explicitly", err)
	}
	return filepath.Join(home, ".local", "state", "bastion"), nil
}

// checkRoots refuses (POLICY_DENIED) a log directory that lies inside any
// root. Both sides are compared as written (made absolute and cleaned) and
// resolved (symbolic links followed in the part that exists), and every
// symbolic link the directory's path passes through must lie outside the
// roots too: a server could retarget a link inside its root and move the
// log into its reach.
func checkRoots(dir string, roots []string) error {
	if len(roots) == 0 {
		return nil
	}
	resolved, links, err := config.Resolve(dir)
	if err != nil {
		return result.Wrap(result.AuditUnavailable,
			fmt.Sprintf("cannot resolve the audit log directory %s", dir), err)
	}
	type place struct{ path, desc string }
	places := []place{{dir, "the audit log directory " + dir}}
	if resolved != dir {
		places = append(places, place{resolved, "the audit log directory " + dir + " (resolved: " + resolved + ")"})
	}
	for _, ln := range links {
		places = append(places, place{ln, "the audit log path goes through the symbolic link " + ln + ", which"})
	}
	for _, r := range roots {
		if r == "" {
			return result.New(result.InvalidRequest, "an operator root is empty")
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return result.Wrap(result.InvalidRequest, fmt.Sprintf("the root %s cannot be made absolute", r), err)
		}
		rres, _, err := config.Resolve(abs)
		if err != nil {
			return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot resolve the root %s", r), err)
		}
		for _, form := range []string{abs, rres} {
			for _, p := range places {
				if within(p.path, form) {
					return result.New(result.PolicyDenied, fmt.Sprintf(
						"%s lies inside the root %s: a server that may write there could rewrite or delete its own audit log; keep the log outside every root",
						p.desc, r))
				}
			}
		}
	}
	return nil
}

// within reports whether p is root or lies beneath it. Both are absolute
// and clean.
func within(p, root string) bool {
	if p == root {
		return true
	}
	sep := string(filepath.Separator)
	if strings.HasSuffix(root, sep) { // "/" or a volume root
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+sep)
}

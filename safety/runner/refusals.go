package runner

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/proxy"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// Refusal is one thing the sandbox refused a command during its run, as
// the answer's detail.sandbox_refused and the outcome record list it. It
// is reported only from a signal of the refusal itself, never guessed
// from a failure: a name the view's resolver was asked for, a request the
// proxy refused for this run's helper, a program the command (or a script
// it ran) could not find that is on the host outside the view, a write to
// a protected path that was undone.
type Refusal struct {
	// Kind is RefusedLookup, RefusedProxy, RefusedNotInView or
	// RefusedProtected.
	Kind string `json:"kind"`
	// What is the host name, host:port, program path or protected path.
	What string `json:"what"`
	// Key is the policy key that would allow it; empty when none can.
	Key string `json:"key"`
}

// Kinds of Refusal.
const (
	// RefusedLookup: the command looked a host name up; the sandbox's
	// resolver answered "refused" (network "deny", or "proxy", where only
	// the proxy resolves names).
	RefusedLookup = "dns_lookup"
	// RefusedProxy: the proxy refused a request of this run.
	RefusedProxy = "proxy"
	// RefusedNotInView: an allowlisted program resolves on the host, on
	// the scrubbed PATH, outside the read paths, and the command could not
	// find it in its view.
	RefusedNotInView = "not_in_view"
	// RefusedProtected: the command wrote to a protected path, which was
	// undone (Outcome.Protected has the details).
	RefusedProtected = "protected_path"
)

// Bounds of what is remembered about proxy refusals between their report
// and the end of the run they belong to.
const (
	maxRefusalsPerRun = 32
	maxRefusalRuns    = 256
)

// proxyRefusals holds the proxy's refusals by the process id of the
// helper that relayed them, until the run of that helper ends.
type proxyRefusals struct {
	mu    sync.Mutex
	byPID map[int][]proxy.Refusal
	order []int
}

// NoteProxyRefusal records a refusal of the filtering proxy for the run
// whose helper made the request (Refusal.PeerPID, the helper's process
// id); the run's answer and outcome record list it. Refusals without a
// process id, or for no run that ends, are kept within fixed bounds and
// otherwise dropped. Safe for concurrent use (the proxy calls it).
func (r *Runner) NoteProxyRefusal(ref proxy.Refusal) {
	if ref.PeerPID <= 0 {
		return
	}
	p := &r.proxyRefused
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byPID == nil {
		p.byPID = map[int][]proxy.Refusal{}
	}
	list, ok := p.byPID[ref.PeerPID]
	if !ok {
		if len(p.order) >= maxRefusalRuns {
			delete(p.byPID, p.order[0])
			p.order = p.order[1:]
		}
		p.order = append(p.order, ref.PeerPID)
	}
	if len(list) < maxRefusalsPerRun {
		p.byPID[ref.PeerPID] = append(list, ref)
	}
}

// take removes and returns the refusals recorded for pid.
func (p *proxyRefusals) take(pid int) []proxy.Refusal {
	if pid <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list, ok := p.byPID[pid]
	if !ok {
		return nil
	}
	delete(p.byPID, pid)
	for i, o := range p.order {
		if o == pid {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
	return list
}

// outsideView returns the allowlisted (and asked-about) programs that
// resolve on the scrubbed PATH to a file outside the read paths, by name:
// in namespaces isolation the command's view does not show them.
func outsideView(o Options) map[string]string {
	if o.Isolation != "" && o.Isolation != sandbox.IsolationNamespaces {
		return nil
	}
	out := map[string]string{}
	for _, name := range append(append([]string(nil), o.Policy.Allow...), o.Policy.Ask...) {
		exe, err := command.Resolve(name, o.Path)
		if err == nil && !sandbox.Covered(exe, o.ReadPaths) {
			out[name] = exe
		}
	}
	return out
}

// refusalsOf collects what the sandbox refused during a run: the names
// its resolver was asked for, the proxy's refusals for its helper, the
// programs outside the view the command could not find (the executable
// itself, when starting it failed with NOT_FOUND, or a name the command's
// error output says was not found), and the protected paths it wrote.
func (r *Runner) refusalsOf(executable string, outc sandbox.Outcome, err error, stderr []byte) []Refusal {
	var out []Refusal
	for _, name := range outc.Lookups {
		out = append(out, Refusal{Kind: RefusedLookup, What: name, Key: "[terminal.sandbox] network"})
	}
	for _, ref := range r.proxyRefused.take(outc.HelperPID) {
		key := "[terminal.sandbox] allowed_hosts"
		switch ref.Kind {
		case proxy.RefusedPort, proxy.RefusedAddress:
			key = ""
		}
		out = append(out, Refusal{Kind: RefusedProxy, What: fmt.Sprintf("%s:%d", ref.Host, ref.Port), Key: key})
	}
	if outc.HelperPID > 0 {
		seen := map[string]bool{}
		if err != nil && result.CodeOf(err) == result.NotFound && executable != "" && isFile(executable) &&
			!sandbox.Covered(executable, r.o.ReadPaths) {
			out = append(out, Refusal{Kind: RefusedNotInView, What: executable, Key: "[terminal.sandbox] read_paths"})
			seen[executable] = true
		}
		names := make([]string, 0, len(r.outside))
		for n := range r.outside {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if exe := r.outside[n]; !seen[exe] && notFoundIn(stderr, n) {
				out = append(out, Refusal{Kind: RefusedNotInView, What: exe, Key: "[terminal.sandbox] read_paths"})
				seen[exe] = true
			}
		}
	}
	for _, c := range outc.Protected {
		out = append(out, Refusal{Kind: RefusedProtected, What: c.Path, Key: "[terminal.sandbox] unprotect"})
	}
	return out
}

// notFoundIn reports whether stderr carries a "not found" message about
// the program name, as shells, runtimes and exec wrappers print it.
func notFoundIn(stderr []byte, name string) bool {
	for _, f := range []string{"%s: command not found", "%s: not found", `exec: "%s": executable file not found`,
		"No such file or directory: '%s'", "spawn %s ENOENT", "%s: No such file or directory"} {
		msg := []byte(fmt.Sprintf(f, name))
		for rest := stderr; ; {
			i := bytes.Index(rest, msg)
			if i < 0 {
				break
			}
			if i == 0 || !wordByte(rest[i-1]) || f[0] != '%' {
				return true
			}
			rest = rest[i+1:]
		}
	}
	return false
}

// isFile reports whether path is, on the host, a regular file (links
// followed).
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/'
}

// refusalNote is what the answer's reason adds about the sandbox's
// refusals: one clause per kind, naming what was refused and the key that
// would allow it. Protected paths have their own note (protectedNote).
func refusalNote(refs []Refusal, net sandbox.NetMode) string {
	by := map[string][]string{}
	for _, f := range refs {
		by[f.Kind] = append(by[f.Kind], f.What)
	}
	var parts []string
	if names := by[RefusedLookup]; len(names) > 0 {
		if net == sandbox.NetProxy {
			parts = append(parts, fmt.Sprintf("looked up %s directly, which the sandbox does not resolve: with "+
				`[terminal.sandbox] network = "proxy" only HTTP(S) through the proxy (HTTPS_PROXY) reaches the network`, strings.Join(names, ", ")))
		} else {
			parts = append(parts, fmt.Sprintf("looked up %s, which the sandbox does not resolve: the network is denied "+
				`([terminal.sandbox] network = "deny"); network = "proxy" with registries or allowed_hosts lets HTTP(S) reach named hosts`,
				strings.Join(names, ", ")))
		}
	}
	if hosts := by[RefusedProxy]; len(hosts) > 0 {
		parts = append(parts, fmt.Sprintf("the proxy refused %s (add the host to [terminal.sandbox] allowed_hosts, or its registry to registries; "+
			"ports other than 80 and 443 and non-public addresses are never allowed)", strings.Join(hosts, ", ")))
	}
	if progs := by[RefusedNotInView]; len(progs) > 0 {
		parts = append(parts, fmt.Sprintf("%s exists on this machine but not in the command's view (add its directory to [terminal.sandbox] read_paths)",
			strings.Join(progs, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the sandbox refused during this run (detail.sandbox_refused): " + strings.Join(parts, "; ")
}

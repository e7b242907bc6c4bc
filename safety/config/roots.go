package config

import (
	"os"
	"path/filepath"
	"strings"
)

// Every server takes its main folder (sweepd's roots, terminald's jail,
// organizerd's workspace) the same three ways besides the policy file:
// --root DIR, DIR as an argument, and an environment variable. These
// helpers keep the three servers alike.

// RootEnv returns the environment variable that names server's main
// folder ("" for an unknown server).
func RootEnv(server string) string {
	switch server {
	case "sweepd":
		return EnvSweepRoots
	case "terminald":
		return EnvJailRoot
	case "organizerd":
		return EnvWorkspaceRoot
	}
	return ""
}

// RootKey returns the policy key that names server's main folder.
func RootKey(server string) string {
	switch server {
	case "sweepd":
		return "[sweep] roots"
	case "terminald":
		return "[terminal] jail_root"
	case "organizerd":
		return "[organizer] workspace_root"
	}
	return ""
}

// MainRoots returns the folders server works in, as the policy, the
// environment and UseCommandLineRoots left them (sweepd: its roots;
// terminald: the jail; organizerd: the workspace). Nil when none is set.
func (p *Policy) MainRoots(server string) []string {
	one := func(s string) []string {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	switch server {
	case "sweepd":
		return p.Sweep.Roots
	case "terminald":
		return one(p.Terminal.JailRoot)
	case "organizerd":
		return one(p.Organizer.WorkspaceRoot)
	}
	return nil
}

// UseCommandLineRoots applies the folders given on the command line
// (--root DIR and DIR arguments): sweepd adds them to its roots;
// terminald and organizerd, which have one folder, take it instead of the
// policy's and the environment's (the command line is the most specific
// place). A server of one folder given two different ones is refused.
func (p *Policy) UseCommandLineRoots(server string, dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	if server == "sweepd" {
		p.Sweep.Roots = append(p.Sweep.Roots, dirs...)
		return nil
	}
	for _, d := range dirs[1:] {
		if filepath.Clean(d) != filepath.Clean(dirs[0]) {
			return Fatalf("%s works in one folder, and the command line names two: %q and %q", server, dirs[0], d)
		}
	}
	switch server {
	case "terminald":
		p.Terminal.JailRoot = dirs[0]
	case "organizerd":
		p.Organizer.WorkspaceRoot = dirs[0]
	}
	return nil
}

// pathEnv are the BASTION_* variables that hold paths (EnvSweepRoots a
// list of them).
var pathEnv = map[string]bool{EnvPolicyFile: true, EnvAuditLog: true, EnvSweepRoots: true, EnvJailRoot: true,
	EnvWorkspaceRoot: true, EnvJournal: true}

// AbsEnv returns the value of the environment variable name made
// absolute against the working directory when the variable holds paths
// (each element of a list), and v unchanged otherwise: a client
// application does not start in the shell's working directory.
func AbsEnv(name, v string) string {
	if !pathEnv[name] || v == "" {
		return v
	}
	parts := []string{v}
	if name == EnvSweepRoots {
		parts = filepath.SplitList(v)
	}
	for i, s := range parts {
		if s == "" {
			continue
		}
		if s == "~" || strings.HasPrefix(s, "~/") {
			if h, err := os.UserHomeDir(); err == nil {
				s = filepath.Join(h, strings.TrimPrefix(s, "~"))
			}
		}
		if a, err := filepath.Abs(s); err == nil {
			parts[i] = a
		}
	}
	return strings.Join(parts, string(filepath.ListSeparator))
}

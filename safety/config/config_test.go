package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/redact"
)

// write puts body in dir/name and returns its path.
func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// clearEnv unsets every variable config reads, for the test's duration.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{EnvPolicyFile, EnvAuditLog, EnvAuditFailMode, EnvSweepRoots,
		EnvJailRoot, EnvWorkspaceRoot, EnvJournal} {
		t.Setenv(k, "")
	}
}

func wantFatal(t *testing.T, err error, contains ...string) {
	t.Helper()
	var f *Fatal
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T) is not a Fatal", err, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error %q does not mention %q", err, c)
		}
	}
}

func TestUnknownKeyIsFatalAndNamesIt(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		body string
		want []string
	}{
		{"audit_fail_mode = \"closed\"\naudit_logg = \"x\"\n", []string{"audit_logg", "line 2"}},
		{"[sweep]\nroots = [\"/r\"]\n\nrootz = [\"/\"]\n", []string{"sweep.rootz", "line 4"}},
		{"[terminal.sandbox]\nlandlock = \"off\"\nnetwrok = \"allow\"\n", []string{"terminal.sandbox.netwrok", "line 3"}},
		{"[[terminal.rules]]\ncommand = \"git\"\nallow_args = [\"-c\"]\n", []string{"allow_args", "line 3"}},
		{"[sweeep]\nroots = [\"/\"]\n", []string{"sweeep"}},
	} {
		t.Run(c.want[0], func(t *testing.T) {
			p := write(t, dir, "policy.toml", c.body)
			_, err := LoadFile(p)
			wantFatal(t, err, append(c.want, "unknown key")...)
			if _, err := Parse([]byte(c.body)); err == nil {
				t.Errorf("Parse accepts %q", c.body)
			}
		})
	}
}

func TestTypeMismatchIsFatal(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body string }{
		{"string for a list", "[sweep]\nroots = \"/home\"\n"},
		{"string for an int", "[sweep]\nmax_finds = \"500\"\n"},
		{"string for a bool", "[redaction]\nentropy = \"yes\"\n"},
		{"list for a string", "audit_log = [\"a\", \"b\"]\n"},
		{"value for a table", "sweep = 3\n"},
		{"not TOML at all", "[sweep]\nroots = [\"a\"\n"},
		{"a table defined twice", "[sweep]\n[sweep]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, dir, "policy.toml", c.body)
			_, err := LoadFile(p)
			wantFatal(t, err, "line")
		})
	}
}

// TestRedactionPatternsTakeBothForms: an entry is a bare regular
// expression or a {name, regex} table, in one list.
func TestRedactionPatternsTakeBothForms(t *testing.T) {
	clearEnv(t)
	p := write(t, t.TempDir(), "policy.toml", `[redaction]
patterns = ["ACME-[0-9]{6}", {name = "order-id", regex = "ORD-[0-9]+"}]
`)
	pol, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []redact.Extra{{Regex: "ACME-[0-9]{6}"}, {Name: "order-id", Regex: "ORD-[0-9]+"}}
	if got := pol.Redaction.Extras(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Extras() = %+v, want %+v", got, want)
	}
	if _, err := Parse([]byte("[redaction]\npatterns = [{name = \"a\", regexp = \"x\"}]\n")); err == nil ||
		!strings.Contains(err.Error(), "regexp") {
		t.Errorf("a misspelt key in a pattern table was accepted: %v", err)
	}
}

// TestBadRedactionPatternStopsEveryServer: Load, which every server calls
// first, refuses a bad pattern with a Fatal naming it that unwraps to the
// typed *redact.PatternError.
func TestBadRedactionPatternStopsEveryServer(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name, body, want string
	}{
		{"bad regex", `patterns = ["ok", "(unclosed"]`, "patterns[1] is not a valid RE2 regular expression"},
		{"named bad regex", `patterns = [{name = "acme", regex = "a**"}]`, `patterns[0] ("acme") is not a valid RE2`},
		{"empty match", `patterns = ["x*"]`, "patterns[0] matches the empty string"},
		{"builtin name", `patterns = [{name = "jwt", regex = "x"}]`, `patterns[0] ("jwt") has a name already taken`},
		{"no regex", `patterns = [{name = "acme"}]`, `patterns[0] ("acme") is empty`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(write(t, dir, "policy.toml", "[redaction]\n"+c.body+"\n"))
			wantFatal(t, err, c.want)
			var pe *redact.PatternError
			if !errors.As(err, &pe) {
				t.Errorf("%v does not unwrap to a *redact.PatternError", err)
			}
		})
	}
}

func TestNULInPolicyIsRefused(t *testing.T) {
	p := write(t, t.TempDir(), "policy.toml", "[sweep]\nroots = [\"/tmp\x00/x\"]\n")
	_, err := LoadFile(p)
	wantFatal(t, err, "NUL")
}

func TestHugePolicyIsRefused(t *testing.T) {
	big := "# " + strings.Repeat("x", MaxPolicyBytes) + "\n"
	p := write(t, t.TempDir(), "policy.toml", big)
	_, err := LoadFile(p)
	wantFatal(t, err, "larger than")
}

func TestMissingPolicyFileIsFatal(t *testing.T) {
	clearEnv(t)
	p := filepath.Join(t.TempDir(), "nope.toml")
	_, err := LoadFile(p)
	wantFatal(t, err, "does not exist", p)
	_, err = Load(p)
	wantFatal(t, err, "does not exist")
	t.Setenv(EnvPolicyFile, p)
	_, err = Load("")
	wantFatal(t, err, "does not exist")
}

func TestPolicyDirectoryIsFatal(t *testing.T) {
	_, err := LoadFile(t.TempDir())
	wantFatal(t, err, "directory")
}

func TestPolicyFIFOIsRefusedWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy.toml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opening a FIFO with no writer blocks forever; the load must refuse
	// before it opens.
	done := make(chan error, 1)
	go func() { _, err := LoadFile(p); done <- err }()
	select {
	case err := <-done:
		wantFatal(t, err, "not a regular file")
	case <-time.After(5 * time.Second):
		// Unblock the stuck open so the test ends, then fail.
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("LoadFile blocked on a FIFO")
	}
}

func TestRelativePathsResolveAgainstPolicyDir(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	p := write(t, dir, "etc/policy.toml", `
audit_log = "state/audit.jsonl"
[sweep]
roots = ["../code", "/abs/root"]
[terminal]
jail_root = "jail"
[terminal.state]
dir = "tstate"
[organizer]
workspace_root = "ws"
journal = "../journal.jsonl"
[radar]
rule_files = ["rules/a.toml"]
`)
	// The working directory must not matter.
	t.Chdir(t.TempDir())
	pol, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(dir, "etc")
	for _, c := range [][2]string{
		{pol.File, p},
		{pol.AuditLog, filepath.Join(etc, "state/audit.jsonl")},
		{pol.Sweep.Roots[0], filepath.Join(dir, "code")},
		{pol.Sweep.Roots[1], "/abs/root"},
		{pol.Terminal.JailRoot, filepath.Join(etc, "jail")},
		{pol.Terminal.State.Dir, filepath.Join(etc, "tstate")},
		{pol.Organizer.WorkspaceRoot, filepath.Join(etc, "ws")},
		{pol.Organizer.Journal, filepath.Join(dir, "journal.jsonl")},
		{pol.Radar.RuleFiles[0], filepath.Join(etc, "rules/a.toml")},
	} {
		if c[0] != c[1] {
			t.Errorf("got %q, want %q", c[0], c[1])
		}
	}
}

func TestEnvOverridesWin(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	p := write(t, dir, "policy.toml", `
audit_log = "a.jsonl"
audit_fail_mode = "closed"
[sweep]
roots = ["/from/file"]
[terminal]
jail_root = "/file/jail"
[organizer]
workspace_root = "/file/ws"
journal = "/file/journal"
`)
	sep := string(filepath.ListSeparator)
	t.Setenv(EnvSweepRoots, "/env/one"+sep+sep+"/env/two"+sep)
	t.Setenv(EnvAuditLog, "/env/audit.jsonl")
	t.Setenv(EnvAuditFailMode, "open")
	t.Setenv(EnvJailRoot, "/env/jail")
	t.Setenv(EnvWorkspaceRoot, "/env/ws")
	t.Setenv(EnvJournal, "/env/journal")
	pol, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pol.Sweep.Roots, ","); got != "/env/one,/env/two" {
		t.Errorf("roots %q: want the env list without empty elements", got)
	}
	for _, c := range [][2]string{
		{pol.AuditLog, "/env/audit.jsonl"},
		{pol.AuditFailMode, "open"},
		{pol.Terminal.JailRoot, "/env/jail"},
		{pol.Organizer.WorkspaceRoot, "/env/ws"},
		{pol.Organizer.Journal, "/env/journal"},
	} {
		if c[0] != c[1] {
			t.Errorf("got %q, want %q", c[0], c[1])
		}
	}
	// An env value that is set but empty does not erase the file's value.
	clearEnv(t)
	pol, err = Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Terminal.JailRoot != "/file/jail" || pol.Sweep.Roots[0] != "/from/file" {
		t.Errorf("empty env erased file values: %+v", pol)
	}
	// A bad value from the environment is as fatal as one from the file.
	t.Setenv(EnvAuditFailMode, "sometimes")
	_, err = Load(p)
	wantFatal(t, err, "audit_fail_mode")
}

func TestPolicyFileFromEnv(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	envFile := write(t, dir, "env.toml", "[sweep]\nroots = [\"/from/env\"]\n")
	flagFile := write(t, dir, "flag.toml", "[sweep]\nroots = [\"/from/flag\"]\n")
	t.Setenv(EnvPolicyFile, envFile)
	pol, err := Load("")
	if err != nil || pol.File != envFile || pol.Sweep.Roots[0] != "/from/env" {
		t.Fatalf("Load(\"\") with %s set: %+v, %v", EnvPolicyFile, pol, err)
	}
	pol, err = Load(flagFile)
	if err != nil || pol.File != flagFile {
		t.Fatalf("--config must win over %s: %+v, %v", EnvPolicyFile, pol, err)
	}
	// No file at all: an empty policy, not an implicit ./policy.toml.
	clearEnv(t)
	wd := t.TempDir()
	write(t, wd, "policy.toml", "[sweep]\nroots = [\"/implicit\"]\n")
	t.Chdir(wd)
	pol, err = Load("")
	if err != nil || pol.File != "" || len(pol.Sweep.Roots) != 0 {
		t.Fatalf("Load(\"\") with nothing named picked up %+v, %v", pol, err)
	}
}

func TestBadAuditFailModeIsFatal(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, m := range []string{"Closed", "off", "none", " closed", "open\n"} {
		t.Run("refuses "+quote(m), func(t *testing.T) {
			p := write(t, dir, "p.toml", "audit_fail_mode = "+quote(m)+"\n")
			_, err := Load(p)
			wantFatal(t, err, "audit_fail_mode")
		})
	}
	for _, m := range []string{"closed", "open"} {
		t.Run("accepts "+m, func(t *testing.T) {
			p := write(t, dir, "p.toml", "audit_fail_mode = "+quote(m)+"\n")
			if _, err := Load(p); err != nil {
				t.Errorf("%q: %v", m, err)
			}
		})
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestBadTicketTTLIsFatal(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, ttl := range []string{"0s", "-1h", "forever", "1", "169h", "1ms", "999ms", "1h "} {
		t.Run("ticket_ttl "+quote(ttl), func(t *testing.T) {
			p := write(t, dir, "p.toml", "[sweep]\nticket_ttl = "+quote(ttl)+"\n")
			_, err := Load(p)
			wantFatal(t, err, "ticket_ttl")
		})
	}
	p := write(t, dir, "p.toml", "[sweep]\nticket_ttl = \"90m\"\n")
	pol, err := Load(p)
	if err != nil || pol.Sweep.TTL().Minutes() != 90 {
		t.Fatalf("90m: %v %v", pol, err)
	}
	if (Sweep{}).TTL().Hours() != 1 {
		t.Fatal("the default ticket TTL is not one hour")
	}
	for _, n := range []string{"-1", "100001"} {
		t.Run("max_finds "+n, func(t *testing.T) {
			p := write(t, dir, "p.toml", "[sweep]\nmax_finds = "+n+"\n")
			_, err := Load(p)
			wantFatal(t, err, "max_finds")
		})
	}
}

func TestCheckOutsideRefusesStateInsideRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(outside, "link") // outside/link -> root/sub
	if err := os.Symlink(filepath.Join(root, "sub"), link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(outside, "audit.jsonl") // -> root/created-through-link
	if err := os.Symlink(filepath.Join(root, "created-through-link"), dangling); err != nil {
		t.Fatal(err)
	}
	relDangling := filepath.Join(outside, "rel.jsonl") // -> ../root/x (relative)
	if err := os.Symlink(filepath.Join("..", "root", "x"), relDangling); err != nil {
		t.Fatal(err)
	}
	rootLink := filepath.Join(base, "rootlink") // a root named through a symlink
	if err := os.Symlink(root, rootLink); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"inside":                          filepath.Join(root, "audit.jsonl"),
		"the root itself":                 root,
		"not yet existing, deep":          filepath.Join(root, "state", "new", "audit.jsonl"),
		"via a symlinked parent":          filepath.Join(link, "audit.jsonl"),
		"via a symlinked parent, missing": filepath.Join(link, "not", "yet", "audit.jsonl"),
		"dotdot after a symlink":          filepath.Join(outside, "link") + "/../audit.jsonl",
		"dangling symlink into the root":  dangling,
		"relative dangling symlink":       relDangling,
		"dotdot lexically inside":         filepath.Join(outside, "..", "root", "a"),
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			if err := CheckOutside("audit_log", path, []string{"/nonexistent-root-for-test", root}); err == nil {
				t.Errorf("%s: %s accepted inside root %s", name, path, root)
			} else {
				wantFatal(t, err, "inside root")
			}
			if err := CheckOutside("audit_log", path, []string{rootLink}); err == nil {
				t.Errorf("%s: %s accepted inside a root named through a symlink", name, path)
			}
		})
	}
	for name, path := range map[string]string{
		"outside":               filepath.Join(outside, "audit.jsonl.real"),
		"sibling with prefix":   root + "-state/audit.jsonl",
		"sibling, not existing": filepath.Join(base, "rootx", "a"),
		"dotdot out":            filepath.Join(root, "..", "outside", "a"),
	} {
		t.Run("accepts "+name, func(t *testing.T) {
			if err := CheckOutside("journal", path, []string{root, ""}); err != nil {
				t.Errorf("%s: %s refused: %v", name, path, err)
			}
		})
	}
}

func TestSymlinkLoopDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	if IsWithin(filepath.Join(a, "x"), filepath.Join(dir, "elsewhere")) {
		t.Fatal("a looping path is within an unrelated directory")
	}
}

func TestAuditPathInsertsServerName(t *testing.T) {
	noDefault := func() (string, error) { return "", errors.New("no home") }
	for _, c := range []struct{ log, server, want string }{
		{"/state/audit.jsonl", "sweepd", "/state/audit.sweepd.jsonl"},
		{"/state/audit", "terminald", "/state/audit.terminald"},
		{"/state.d/audit.log", "organizerd", "/state.d/audit.organizerd.log"},
	} {
		t.Run(c.server, func(t *testing.T) {
			p := &Policy{AuditLog: c.log}
			got, err := p.AuditPath(c.server, noDefault)
			if err != nil || got != c.want {
				t.Errorf("AuditPath(%q, %q) = %q, %v; want %q", c.log, c.server, got, err, c.want)
			}
		})
	}
	p := &Policy{}
	got, err := p.AuditPath("sweepd", func() (string, error) { return "/xdg/bastion", nil })
	if err != nil || got != "/xdg/bastion/sweepd.audit.jsonl" {
		t.Errorf("default dir: %q, %v", got, err)
	}
	_, err = p.AuditPath("sweepd", noDefault)
	wantFatal(t, err, "audit_log")
	// Two servers never share a chain.
	p = &Policy{AuditLog: "/s/audit.jsonl"}
	a, _ := p.AuditPath("sweepd", noDefault)
	b, _ := p.AuditPath("terminald", noDefault)
	if a == b {
		t.Fatalf("two servers share %s", a)
	}
}

func TestExitPrintsOneFatalLine(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"one line", Fatalf("policy file %s does not exist", "/p.toml")},
		{"line breaks", Fatalf("line 1\nline 2\r\nline 3\rline 4")},
		{"plain error", errors.New("plain error\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if code := Exit(&buf, c.err); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			out := buf.String()
			if !strings.HasPrefix(out, "fatal: ") || !strings.HasSuffix(out, "\n") {
				t.Errorf("output %q is not a fatal: line", out)
			}
			if strings.Count(out, "\n") != 1 || strings.Contains(out, "\r") {
				t.Errorf("output %q is not exactly one line", out)
			}
		})
	}
}

// The shipped policies must parse strictly: an unknown key in them would be
// a startup failure for every user who copies them.
func TestShippedPoliciesParseStrictly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "policies", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped policies found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := LoadFile(f); err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
			}
		})
	}
}

func TestShippedPolicyHasNoRoots(t *testing.T) {
	clearEnv(t)
	pol, err := Load(filepath.Join("..", "..", "policies", "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Sweep.Roots) != 0 || pol.Terminal.JailRoot != "" || pol.Organizer.WorkspaceRoot != "" {
		t.Fatalf("policies/policy.toml ships with a root: %+v %q %q",
			pol.Sweep.Roots, pol.Terminal.JailRoot, pol.Organizer.WorkspaceRoot)
	}
}

// TestShippedPoliciesCarryTheGeneratedSections proves each shipped
// policy's [terminal] command policy is the safety/command section it is
// generated from (make policy-check also compares the bytes).
func TestShippedPoliciesCarryTheGeneratedSections(t *testing.T) {
	for _, c := range []struct {
		file    string
		section command.Section
	}{
		{"policy.toml", command.Standard()},
		{"policy.example.toml", command.Standard()},
		{"dev.example.toml", command.Dev()},
	} {
		t.Run(c.file, func(t *testing.T) {
			pol, err := LoadFile(filepath.Join("..", "..", "policies", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, want := pol.Terminal.CommandPolicy(), c.section.Policy()
			if !reflect.DeepEqual(got.Allow, want.Allow) || !reflect.DeepEqual(got.Deny, want.Deny) ||
				!reflect.DeepEqual(got.Rules, want.Rules) {
				t.Errorf("its command policy is not the generated one: run make policy-docs")
			}
		})
	}
}

// FuzzParse: no input makes Parse panic, and whatever it accepts has no NUL.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "audit_fail_mode = \"closed\"\n", "[sweep]\nroots = [\"/a\"]\nrootz = 1\n",
		"[[terminal.rules]]\ncommand = \"git\"\ndeny_args = [\"-c\"]\n", "[organizer.categories]\nDocs = [\"pdf\"]\n",
		"a = \x00", "[sweep\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err == nil && bytes.IndexByte(b, 0) >= 0 {
			t.Fatalf("accepted a NUL: %+v", p)
		}
	})
}

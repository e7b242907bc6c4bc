package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// loadTerminal loads a policy made of body (TOML) the way a server does.
func loadTerminal(t *testing.T, body string) (*Policy, error) {
	t.Helper()
	clearEnv(t)
	return Load(write(t, t.TempDir(), "policy.toml", body))
}

func wantLoadFatal(t *testing.T, body string, contains ...string) {
	t.Helper()
	_, err := loadTerminal(t, body)
	if err == nil {
		t.Fatalf("policy loaded:\n%s", body)
	}
	wantFatal(t, err, contains...)
}

func TestTerminalDefaults(t *testing.T) {
	pol, err := loadTerminal(t, "[terminal]\njail_root = \"/j\"\n")
	if err != nil {
		t.Fatal(err)
	}
	term := pol.Terminal
	if term.EffectiveProfile() != ProfileAllowlist || term.Sandboxed() {
		t.Errorf("default profile %q", term.EffectiveProfile())
	}
	s := term.Sandbox
	if s.EffectiveIsolation() != IsolationNamespaces || s.EffectiveNetwork() != NetworkDeny || s.EffectiveLandlock() != LandlockRequired {
		t.Errorf("defaults: isolation %q network %q landlock %q", s.EffectiveIsolation(), s.EffectiveNetwork(), s.EffectiveLandlock())
	}
	want := TerminalLimits{TimeoutSeconds: 30, MaxOutputBytes: 65536, MemoryMB: 2048, MaxProcesses: 1024,
		CPUSeconds: 600, MaxFileMB: 1024, MaxOpenFiles: 1024, MaxConcurrent: 2, MaxQueued: 8, DiskMB: 10240}
	if got := term.Limits.WithDefaults(); got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}
	set := TerminalLimits{TimeoutSeconds: 5, MaxOutputBytes: 10, MemoryMB: 64, MaxProcesses: 8, CPUSeconds: 1, MaxFileMB: 1, MaxOpenFiles: 16, MaxConcurrent: 1, MaxQueued: 1, DiskMB: 1}
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults changed set values: %+v", got)
	}
}

func TestTerminalNewKeysLoad(t *testing.T) {
	pol, err := loadTerminal(t, `
[terminal]
profile = "sandbox"
[terminal.limits]
memory_mb = 65536
max_processes = 8
cpu_seconds = 86400
max_file_mb = 1
max_open_files = 1048576
disk_mb = 1048576
[terminal.sandbox]
isolation = "namespaces"
landlock = "required"
network = "proxy"
allowed_hosts = ["Example.COM", "*.Example.org", "localhost", "192.0.2.7"]
caches = ["go", "npm", "pip", "cargo"]
`)
	if err != nil {
		t.Fatal(err)
	}
	term := pol.Terminal
	if !term.Sandboxed() || term.Limits.MemoryMB != 65536 || term.Limits.MaxProcesses != 8 || term.Limits.DiskMB != 1048576 || len(term.Sandbox.Caches) != 4 {
		t.Errorf("keys not read: %+v", term)
	}
	if got := strings.Join(term.Sandbox.AllowedHosts, " "); got != "example.com *.example.org localhost 192.0.2.7" {
		t.Errorf("allowed_hosts not lower-cased: %q", got)
	}
}

func TestUnknownProfileIsFatal(t *testing.T) {
	for _, v := range []string{"Sandbox", "permissive", "none", " allowlist"} {
		wantLoadFatal(t, "[terminal]\nprofile = "+quote(v)+"\n", "terminal.profile", `"allowlist"`, `"sandbox"`)
	}
}

func TestUnknownIsolationIsFatal(t *testing.T) {
	for _, v := range []string{"none", "bwrap", "Namespaces"} {
		wantLoadFatal(t, "[terminal.sandbox]\nisolation = "+quote(v)+"\n", "terminal.sandbox.isolation", `"namespaces"`, `"landlock"`)
	}
}

func TestUnknownNetworkIsFatal(t *testing.T) {
	for _, v := range []string{"maybe", "Proxy", "open"} {
		wantLoadFatal(t, "[terminal.sandbox]\nnetwork = "+quote(v)+"\n", "terminal.sandbox.network", `"deny"`, `"allow"`, `"proxy"`)
	}
}

func TestUnknownLandlockModeIsFatal(t *testing.T) {
	wantLoadFatal(t, "[terminal.sandbox]\nlandlock = \"bogus\"\n", "terminal.sandbox.landlock", `"required"`, `"best-effort"`, `"off"`)
}

func TestUnknownCacheIsFatal(t *testing.T) {
	for _, v := range []string{"maven", "Go", "", "~/.cache/go-build"} {
		wantLoadFatal(t, "[terminal.sandbox]\ncaches = ["+quote(v)+"]\n", "terminal.sandbox.caches", `"go"`, `"npm"`, `"pip"`, `"cargo"`)
	}
}

func TestDuplicateCacheIsFatal(t *testing.T) {
	wantLoadFatal(t, "[terminal.sandbox]\ncaches = [\"go\", \"npm\", \"go\"]\n", "terminal.sandbox.caches", `"go"`, "twice")
}

func TestLimitOutOfRangeIsFatal(t *testing.T) {
	for _, c := range []struct {
		key      string
		min, max int
	}{
		{"timeout_seconds", 1, 3600},
		{"max_output_bytes", 1, 16 << 20},
		{"memory_mb", 16, 65536},
		{"max_processes", 8, 65536},
		{"cpu_seconds", 1, 86400},
		{"max_file_mb", 1, 1048576},
		{"max_open_files", 16, 1048576},
		{"max_concurrent", 1, 64},
		{"max_queued", 1, 1024},
		{"disk_mb", 1, 1048576},
	} {
		for _, v := range []int{-1, c.min - 1, c.max + 1} {
			if v == 0 {
				continue // 0 means the default
			}
			wantLoadFatal(t, "[terminal.limits]\n"+c.key+" = "+strconv.Itoa(v)+"\n", "terminal.limits."+c.key, strconv.Itoa(c.min), strconv.Itoa(c.max))
		}
		for _, v := range []int{c.min, c.max} {
			if _, err := loadTerminal(t, "[terminal.limits]\n"+c.key+" = "+strconv.Itoa(v)+"\n"); err != nil {
				t.Errorf("%s = %d: %v", c.key, v, err)
			}
		}
	}
}

func TestBadAllowedHostIsFatal(t *testing.T) {
	for host, why := range map[string]string{
		"":                    "empty",
		"https://example.com": "scheme",
		"example.com/path":    "path",
		"user@example.com":    "user",
		"example.com:443":     "port",
		"[::1]":               "port",
		"*":                   "every host",
		"*.":                  "every host",
		"*.com":               "two labels",
		"*.1.2.3":             "two labels",
		".example.com":        "*.example.com",
		"example.com.":        "trailing dot",
		"foo*.example.com":    "leading",
		"*.*.example.com":     "leading",
		"*example.com":        "leading",
		"ex ample.com":        "character",
		"bücher.de":           "xn--",
		"a..b":                "empty label",
		"-a.example.com":      "'-'",
		"1.2.3.999":           "IPv4",
		"999":                 "IPv4",
	} {
		body := "[terminal.sandbox]\nnetwork = \"proxy\"\nallowed_hosts = [" + quote(host) + "]\n"
		wantLoadFatal(t, body, "allowed_hosts", why)
	}
}

func TestAllowedHostsWithoutProxyIsFatal(t *testing.T) {
	for _, nw := range []string{"", "deny", "allow"} {
		body := "[terminal.sandbox]\nallowed_hosts = [\"example.com\"]\n"
		if nw != "" {
			body += "network = " + quote(nw) + "\n"
		}
		wantLoadFatal(t, body, `allowed_hosts only applies to network = "proxy"`)
	}
}

func TestProxyWithoutAllowedHostsIsFatal(t *testing.T) {
	wantLoadFatal(t, "[terminal.sandbox]\nnetwork = \"proxy\"\n", `network = "proxy" needs registries, allowed_hosts`)
	wantLoadFatal(t, "[terminal.sandbox]\nnetwork = \"proxy\"\nallowed_hosts = []\n", "needs registries, allowed_hosts")
}

// TestRegistryPresetsExpandToTheirHosts: registries = ["go", "pip"] alone
// is a valid proxy configuration, and the proxy admits exactly those
// registries' hosts plus allowed_hosts, each once.
func TestRegistryPresetsExpandToTheirHosts(t *testing.T) {
	pol, err := loadTerminal(t, "[terminal.sandbox]\nnetwork = \"proxy\"\nregistries = [\"go\", \"pip\"]\nallowed_hosts = [\"example.com\", \"pypi.org\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	got := pol.Terminal.Sandbox.ProxyHosts()
	want := []string{"example.com", "pypi.org", "proxy.golang.org", "sum.golang.org", "files.pythonhosted.org"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("proxy hosts %v, want %v", got, want)
	}
	for _, name := range []string{"go", "npm", "pip", "cargo"} {
		if _, err := loadTerminal(t, "[terminal.sandbox]\nnetwork = \"proxy\"\nregistries = ["+quote(name)+"]\n"); err != nil {
			t.Fatalf("registries = [%q]: %v", name, err)
		}
	}
}

func TestUnknownRegistryPresetIsFatal(t *testing.T) {
	wantLoadFatal(t, "[terminal.sandbox]\nnetwork = \"proxy\"\nregistries = [\"maven\"]\n",
		"terminal.sandbox.registries", `"maven"`, `"cargo"`, `"go"`, `"npm"`, `"pip"`)
	wantLoadFatal(t, "[terminal.sandbox]\nnetwork = \"proxy\"\nregistries = [\"go\", \"go\"]\n", "twice")
}

func TestRegistriesWithoutProxyIsFatal(t *testing.T) {
	for _, nw := range []string{"", "deny", "allow"} {
		body := "[terminal.sandbox]\nregistries = [\"go\"]\n"
		if nw != "" {
			body += "network = " + quote(nw) + "\n"
		}
		wantLoadFatal(t, body, `registries only applies to network = "proxy"`)
	}
}

func TestProxyWithLandlockIsolationIsFatal(t *testing.T) {
	wantLoadFatal(t, "[terminal.sandbox]\nisolation = \"landlock\"\nnetwork = \"proxy\"\nallowed_hosts = [\"example.com\"]\n",
		`isolation = "namespaces"`, "only way out")
}

func TestSandboxProfileWithoutRequiredLandlockIsFatal(t *testing.T) {
	for _, ll := range []string{"best-effort", "off"} {
		wantLoadFatal(t, "[terminal]\nprofile = \"sandbox\"\n[terminal.sandbox]\nlandlock = "+quote(ll)+"\n",
			"terminal.profile", `landlock = "required"`, `isolation = "namespaces"`, "kernel boundary is the guarantee")
	}
}

func TestSandboxProfileWithLandlockIsolationIsFatal(t *testing.T) {
	wantLoadFatal(t, "[terminal]\nprofile = \"sandbox\"\n[terminal.sandbox]\nisolation = \"landlock\"\n",
		"terminal.profile", `landlock = "required"`, `isolation = "namespaces"`, "shells and interpreters")
}

func TestSandboxProfileAcceptsDefaults(t *testing.T) {
	for _, body := range []string{
		"[terminal]\nprofile = \"sandbox\"\n",
		"[terminal]\nprofile = \"sandbox\"\n[terminal.sandbox]\nlandlock = \"required\"\nisolation = \"namespaces\"\n",
		"[terminal]\nprofile = \"allowlist\"\n[terminal.sandbox]\nlandlock = \"off\"\nisolation = \"landlock\"\n",
	} {
		if _, err := loadTerminal(t, body); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
}

func TestHostPatternAcceptsHostsAndWildcards(t *testing.T) {
	for in, want := range map[string]string{
		"example.com": "example.com", "EXAMPLE.com": "example.com", "*.example.org": "*.example.org",
		"*.Sub.Example.org": "*.sub.example.org", "localhost": "localhost", "192.0.2.7": "192.0.2.7",
		"xn--bcher-kva.de": "xn--bcher-kva.de", "my_host.internal": "my_host.internal", "*.co.uk": "*.co.uk",
	} {
		got, err := HostPattern(in)
		if err != nil || got != want {
			t.Errorf("HostPattern(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestWildcardHostMatchesSubdomainsNotApex(t *testing.T) {
	pats := []string{"*.example.org", "example.com"}
	for host, want := range map[string]bool{
		"a.example.org": true, "a.b.example.org": true, "A.EXAMPLE.ORG": true, "a.example.org.": true,
		"example.org": false, "evilexample.org": false, "example.org.evil.com": false,
		"example.com": true, "Example.com.": true, "a.example.com": false, "example.com.evil": false,
		"": false, "*.example.org": false, "a.example.org\x00": false, "a b.example.org": false,
	} {
		if got := MatchHost(pats, host); got != want {
			t.Errorf("MatchHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestCheckShowsProfileIsolationNetworkCachesAndLimits(t *testing.T) {
	p := &Policy{}
	p.Terminal.JailRoot = t.TempDir()
	p.Terminal.Allowlist.Commands = []string{"ls"}
	p.Terminal.Limits.MemoryMB = 4096
	p.Terminal.Sandbox.Network = "proxy"
	p.Terminal.Sandbox.AllowedHosts = []string{"example.com", "*.example.org"}
	p.Terminal.Sandbox.Caches = []string{"go", "npm"}
	got := settingsOf(t, p)
	for k, want := range map[string]string{
		"terminal.profile":                 "allowlist",
		"terminal.sandbox.isolation":       "namespaces",
		"terminal.sandbox.landlock":        "required",
		"terminal.sandbox.network":         "proxy, 2 allowed host(s)",
		"terminal.sandbox.caches":          "[go, npm]",
		"terminal.limits.timeout_seconds":  "30s (default)",
		"terminal.limits.max_output_bytes": "65536 bytes (default)",
		"terminal.limits.memory_mb":        "4096 MiB",
		"terminal.limits.max_processes":    "1024 processes and threads (default)",
		"terminal.limits.cpu_seconds":      "600s of CPU (default)",
		"terminal.limits.max_file_mb":      "1024 MiB per file (default)",
		"terminal.limits.max_open_files":   "1024 descriptors per process (default)",
		"terminal.limits.max_concurrent":   "2 commands at once (default)",
		"terminal.limits.max_queued":       "8 calls waiting (default)",
		"terminal.raw_output":              "false (default)",
		"terminal.limits.disk_mb":          "10240 MiB written (default)",
	} {
		if !strings.HasPrefix(got[k], want) {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if strings.Contains(got["terminal.limits.memory_mb"], "default") {
		t.Errorf("a set limit is shown as the default: %q", got["terminal.limits.memory_mb"])
	}
	if _, ok := got["terminal.guarantee"]; ok {
		t.Errorf("the allowlist profile claims the kernel boundary as its guarantee")
	}
}

func TestCheckSandboxProfileSaysKernelBoundaryIsTheGuarantee(t *testing.T) {
	dir := t.TempDir()
	jail := filepath.Join(dir, "jail")
	os.Mkdir(jail, 0o755)
	pol := write(t, dir, "p.toml", "audit_log = \"state/audit.jsonl\"\n[terminal]\njail_root = \"jail\"\nprofile = \"sandbox\"\n"+
		"[terminal.allowlist]\ncommands = [\"bash\", \"python3\", \"make\", \"go\"]\n[terminal.sandbox]\ncaches = [\"go\"]\n")
	clearEnv(t)
	var out, errw bytes.Buffer
	if code := RunCheckCommand("terminald", []string{"--config", pol}, &out, &errw, nil, nil); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errw.String())
	}
	for _, want := range []string{"terminal.profile", "sandbox", "terminal.guarantee",
		"the kernel boundary (namespaces + Landlock + seccomp + limits), not the argument rules, is the guarantee",
		"terminal.limits.memory_mb", "2048 MiB (default)", "terminal.sandbox.caches", "[go]", "ok: terminald would start"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "allowlisted interpreter") {
		t.Errorf("the sandbox profile warns about the interpreters it exists to allow:\n%s", out.String())
	}
}

func TestCheckRefusesBadTerminalKeys(t *testing.T) {
	p := &Policy{}
	p.Terminal.JailRoot = t.TempDir()
	p.Terminal.Allowlist.Commands = []string{"ls"}
	p.Terminal.Profile = "sandbox"
	p.Terminal.Sandbox.Landlock = "off"
	e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
	if !has(e.Errors, "kernel boundary is the guarantee") {
		t.Fatalf("errors %q", e.Errors)
	}
}

// Every shipped policy must load as a server loads it, validation included.
func TestShippedPoliciesValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "policies", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped policies found: %v", err)
	}
	clearEnv(t)
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

// FuzzHostPattern: no input panics; an accepted pattern is lower case,
// names a host only, matches itself (or, as a wildcard, a subdomain and
// never its apex).
func FuzzHostPattern(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.org", "*.com", "*", "https://x", "a:1", "1.2.3.4", "bücher.de", "a..b"} {
		f.Add(s, "a.example.org")
	}
	f.Fuzz(func(t *testing.T, s, host string) {
		p, err := HostPattern(s)
		MatchHost([]string{p, s}, host)
		if err != nil {
			return
		}
		if p != strings.ToLower(p) || strings.ContainsAny(p, ":/@ ") || p == "*" {
			t.Fatalf("HostPattern(%q) = %q", s, p)
		}
		if apex, ok := strings.CutPrefix(p, "*."); ok {
			if MatchHost([]string{p}, apex) || (len(apex) <= 251 && !MatchHost([]string{p}, "x."+apex)) {
				t.Fatalf("wildcard %q: apex or subdomain wrong", p)
			}
		} else if !MatchHost([]string{p}, p) {
			t.Fatalf("%q does not match itself", p)
		}
	})
}

// settingsOf is terminald's effective settings of p by key; it fails the
// test when the policy has errors.
func settingsOf(t *testing.T, p *Policy) map[string]string {
	t.Helper()
	e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
	if len(e.Errors) != 0 {
		t.Fatalf("errors %q", e.Errors)
	}
	got := map[string]string{}
	for _, s := range e.Settings {
		got[s.Key] = s.Value
	}
	return got
}

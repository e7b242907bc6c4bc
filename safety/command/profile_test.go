package command

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// devTools is what a sandbox-profile policy allowlists to build and test.
var devTools = []string{"bash", "sh", "python3", "node", "make", "go", "cargo", "npm", "pytest", "env", "xargs", "git", "ls"}

func TestSandboxProfileAllowsInterpreters(t *testing.T) {
	p := &Policy{Allow: devTools, Sandboxed: true}
	if err := p.Validate(); err != nil {
		t.Fatalf("the sandbox profile refused a developer allowlist: %v", err)
	}
	mustAllow(t, p, `bash -c 'make test'`, "sh ./configure", "python3 -m unittest", "python3.11 x.py",
		"python x.py", "node index.js", "nodejs index.js", "make", "go test ./...", "cargo build",
		"npm test", "pytest -q", "env", "xargs -0 echo")
	d := p.Evaluate([]string{"python3", "-c", "1"})
	if !d.Allowed || !strings.Contains(d.Reason, "kernel boundary") || !strings.Contains(d.Reason, "not the argument rules") {
		t.Errorf("a sandboxed allow of an interpreter must say the kernel boundary is the guarantee: %+v", d)
	}
	if d := p.Evaluate([]string{"ls"}); !d.Allowed || !strings.Contains(d.Reason, "kernel boundary") {
		t.Errorf("a sandboxed allow must say the kernel boundary is the guarantee: %+v", d)
	}
}

func TestSandboxProfileStillRefusesWhatIsNotAllowlisted(t *testing.T) {
	p := &Policy{Allow: []string{"python3", "make"}, Sandboxed: true}
	for _, argv := range [][]string{{"bash", "-c", "id"}, {"perl", "-e", "1"}, {"sudo", "id"}, {"env", "rm", "x"}} {
		t.Run(argv[0], func(t *testing.T) {
			d := p.Evaluate(argv)
			if d.Allowed || d.Rule != "terminal.allowlist" || !strings.Contains(d.Reason, "not on the policy's allowlist") {
				t.Errorf("%q: %+v; want refused as not allowlisted", argv, d)
			}
		})
	}
}

func TestSandboxProfileStillAppliesDenylistAndRules(t *testing.T) {
	p := &Policy{Allow: []string{"bash", "python3", "git", "find"}, Deny: []string{"bash"}, Sandboxed: true,
		Rules: []Rule{{Command: "python3", DenyArgs: []string{"-c"}, Reason: "write the program to a file"}}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if d := p.Evaluate([]string{"bash", "-c", "id"}); d.Allowed || d.Rule != "terminal.denylist" {
		t.Errorf("denylisted bash ran under the sandbox profile: %+v", d)
	}
	if d := p.Evaluate([]string{"python3.12", "-c", "1"}); d.Allowed || !strings.HasPrefix(d.Rule, "terminal.rules[0]") {
		t.Errorf("a policy rule did not apply under the sandbox profile: %+v", d)
	}
	mustDeny(t, p, `git -c alias.x=!sh x`, `find . -exec id ;`)
	mustAllow(t, p, "python3 x.py", "git status")
}

func TestAllowlistProfileStillRefusesShells(t *testing.T) {
	p := &Policy{Allow: []string{"bash", "python3", "env", "ls"}}
	for _, argv := range [][]string{{"bash", "-c", "id"}, {"python3", "x.py"}, {"python", "x.py"}, {"env", "id"}} {
		t.Run(argv[0], func(t *testing.T) {
			if d := p.Evaluate(argv); d.Allowed || d.Rule != "builtin.never" {
				t.Errorf("%q: %+v; want builtin.never", argv, d)
			}
		})
	}
	err := p.Validate()
	if err == nil || result.CodeOf(err) != result.InvalidRequest {
		t.Fatalf("Validate accepted shells on the allowlist profile: %v", err)
	}
	for _, want := range []string{`"bash"`, `"python3"`, `"env"`, `profile = "sandbox"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate's refusal does not mention %s: %v", want, err)
		}
	}
	if d := p.Evaluate([]string{"ls"}); !d.Allowed || strings.Contains(d.Reason, "kernel boundary") {
		t.Errorf("the allowlist profile must not claim the kernel boundary as the guarantee: %+v", d)
	}
}

func TestAllowlistTakesPython3AsTyped(t *testing.T) {
	for _, typed := range []string{"python3", "python3.11", "Python3", "python3.exe"} {
		t.Run(typed, func(t *testing.T) {
			p := &Policy{Allow: []string{typed, "git"}, Sandboxed: true,
				Rules: []Rule{{Command: typed, DenyArgs: []string{"-c"}, Reason: "no inline programs"}}}
			if err := p.Validate(); err != nil {
				t.Fatalf("allowlist %q was refused: %v", typed, err)
			}
			mustAllow(t, p, "python3 x.py", "python3.11 x.py", "python x.py")
			mustDeny(t, p, "python3 -c 1", "perl x.pl")
		})
	}
	for _, typed := range []string{"gawk", "GAWK", "nodejs", "pip3", "gtar", "Git"} {
		t.Run(typed, func(t *testing.T) {
			if err := (&Policy{Allow: []string{typed}, Sandboxed: true}).Validate(); err != nil {
				t.Errorf("allowlist %q was refused: %v", typed, err)
			}
		})
	}
	p := &Policy{Allow: []string{"gtar", "Git"}}
	if err := p.Validate(); err != nil {
		t.Fatalf("gtar and Git on the allowlist profile: %v", err)
	}
	mustAllow(t, p, "tar -cf x.tar src", "gtar -cf x.tar src", "git status")
}

func TestDenylistNormalisesNamesAsTyped(t *testing.T) {
	p := &Policy{Allow: []string{"python", "awk", "node", "git"}, Deny: []string{"python3", "gawk", "nodejs"}, Sandboxed: true}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"python", "x"}, {"python3.12", "x"}, {"awk", "1"}, {"mawk", "1"}, {"node", "x"}} {
		t.Run(argv[0], func(t *testing.T) {
			if d := p.Evaluate(argv); d.Allowed || d.Rule != "terminal.denylist" {
				t.Errorf("%q: %+v; want the denylist", argv, d)
			}
		})
	}
	mustAllow(t, p, "git status")
}

func TestValidateRefusesNamesThatAreNotPrograms(t *testing.T) {
	for _, n := range []string{"", " ", "/usr/bin/python3", `bin\ls`, "ls -la", "FOO=1", "ls\x00", ".", "..."} {
		t.Run(caseName(n), func(t *testing.T) {
			if err := (&Policy{Allow: []string{n}, Sandboxed: true}).Validate(); err == nil {
				t.Errorf("allowlist entry %q was accepted", n)
			}
			if err := (&Policy{Deny: []string{n}}).Validate(); err == nil {
				t.Errorf("denylist entry %q was accepted", n)
			}
		})
	}
}

func TestNeverTableKeysAreNormalised(t *testing.T) {
	for k := range never {
		if Name(k) != k {
			t.Errorf("never-table key %q normalises to %q; Evaluate would never see it", k, Name(k))
		}
	}
	for _, n := range []string{"R", "Rscript", "python3.12", "pwsh", "gawk"} {
		t.Run(n, func(t *testing.T) {
			if _, ok := Never(n); !ok {
				t.Errorf("Never(%q) = false", n)
			}
		})
	}
	if _, ok := Never("git"); ok {
		t.Errorf("Never(git) = true")
	}
}

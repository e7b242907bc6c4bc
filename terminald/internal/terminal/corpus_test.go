package terminal

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/testfs"
)

const corpusPath = "../../../safety/command/testdata/corpus.tsv"

type corpusLine struct {
	code, line string
	no         int
}

func readCorpus(t *testing.T) []corpusLine {
	t.Helper()
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		code, line, ok := strings.Cut(text, "\t")
		if !ok {
			t.Fatalf("corpus line %d is malformed", n)
		}
		out = append(out, corpusLine{code, line, n})
	}
	return out
}

// TestShippedPolicyCorpusThroughServer proves the server path agrees with
// safety/command's corpus under the shipped example policy: every line
// through explain_command, every refused line and every allowed line that
// needs no network through run_command.
func TestShippedPolicyCorpusThroughServer(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, e.Jail+"/README.md", "# demo\n")
	testfs.Write(t, e.Jail+"/main.go", "package main\n// TODO\n")
	refused, allowed, ran := 0, 0, 0
	for _, c := range readCorpus(t) {
		x := e.explain(t, c.line)
		if x.Code != "OK" || x.str("code") != c.code {
			t.Errorf("corpus:%d %q: explain says %s (%s: %s), want %s", c.no, c.line, x.str("code"), x.str("rule"), x.str("reason"), c.code)
			continue
		}
		if (x.str("decision") == "allow") != (c.code == "OK") || (x.str("decision") == "ask") != (c.code == "NEEDS_EXPLICIT_REQUEST") {
			t.Errorf("corpus:%d %q: decision %s for %s", c.no, c.line, x.str("decision"), c.code)
		}
		if c.code != "OK" {
			refused++
			wantNothingRan(t, e.run(t, c.line), c.code)
			continue
		}
		allowed++
		if strings.Contains(c.line, "://") || runtime.GOOS != "linux" {
			continue // would try the network; the kernel refuses it anyway
		}
		r := e.run(t, c.line)
		if (r.Code != "OK" && r.Code != "OUTPUT_TRUNCATED") || r.Detail["exit_code"] == nil || r.str("confinement") == "" {
			t.Errorf("corpus:%d %q: run_command %s: %.300s", c.no, c.line, r.Code, r.text)
		}
		ran++
	}
	if refused < 150 || allowed < 50 {
		t.Fatalf("corpus has %d refused and %d allowed lines; want at least 150 and 50", refused, allowed)
	}
	t.Logf("corpus: %d refused (all through run_command), %d allowed (%d run through run_command)", refused, allowed, ran)
}

// TestShippedPoliciesCarryTheCommandSection keeps policy.toml and
// policy.example.toml's [terminal] policy equal to
// policies/terminal-section.toml, which the corpus is judged against.
func TestShippedPoliciesCarryTheCommandSection(t *testing.T) {
	b, err := os.ReadFile("../../../policies/terminal-section.toml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := commandLoadSection(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"../../../policies/policy.toml", examplePolicy} {
		p, err := configLoadFile(f)
		if err != nil {
			t.Fatalf("%s does not load strictly: %v", f, err)
		}
		got := p.Terminal.CommandPolicy()
		if !equalPolicy(got, want) {
			t.Errorf("%s: its [terminal] command policy differs from terminal-section.toml", f)
		}
		if p.Terminal.Limits.TimeoutSeconds != 30 || p.Terminal.Limits.MaxOutputBytes != 65536 ||
			p.Terminal.Sandbox.Landlock != "required" || p.Terminal.Sandbox.Network != "deny" {
			t.Errorf("%s: limits or sandbox are not the shipped defaults: %+v %+v", f, p.Terminal.Limits, p.Terminal.Sandbox)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

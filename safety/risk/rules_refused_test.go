package risk

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// TestProjectFileRefusesABadRuleAloneAndSaysSoInItsDescriptor: a bad rule
// of .bastion-risk.toml is refused alone; its other rule applies, and the
// file's own descriptor names the refused line and why.
func TestProjectFileRefusesABadRuleAloneAndSaysSoInItsDescriptor(t *testing.T) {
	root := t.TempDir()
	write(t, root, ProjectFile, "[[rule]]\npattern = \"deploy/\"\ncategory = \"RISK\"\nreason = \"Production deploy.\"\n\n"+
		"[[rule]]\npattern = \"x\"\ncategory = \"RISKY\"\nreason = \"typo\"\n")
	write(t, root, "deploy/run.sh", "echo\n")
	var logs bytes.Buffer
	e := newEngine(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r := openRoot(t, root)
	d, err := e.Classify(r, "deploy/run.sh")
	if err != nil || d.Metadata.Importance != HighRisk {
		t.Fatalf("the good rule does not apply: %v %+v", err, d.Metadata)
	}
	want := `rule file project:.bastion-risk.toml: line 6: rule 2 refused: category "RISKY" is not RISK, VALUE or IGNORE`
	for read := 1; read <= 2; read++ {
		d, err = e.Classify(r, ProjectFile)
		if err != nil || !hasReason(d, want) {
			t.Fatalf("read %d: descriptor reasons %q lack %q (%v)", read, d.Metadata.Reasons, want, err)
		}
	}
	if !strings.Contains(logs.String(), "line 6: rule 2 refused") {
		t.Errorf("the refusal is not logged:\n%s", logs.String())
	}
}

// TestProjectFileRefusedWholeSaysSoInItsDescriptor: a project file that is
// not TOML is refused whole, and its descriptor says so.
func TestProjectFileRefusedWholeSaysSoInItsDescriptor(t *testing.T) {
	root := t.TempDir()
	write(t, root, ProjectFile, "this is not toml [[[")
	e := newEngine(t, Options{})
	d, err := e.Classify(openRoot(t, root), ProjectFile)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(d.Metadata.Reasons, func(r string) bool {
		return strings.HasPrefix(r, "this rule file is refused whole: rule file project:.bastion-risk.toml is invalid: line 1")
	}) {
		t.Fatalf("reasons %q do not say the file is refused whole", d.Metadata.Reasons)
	}
}

// TestOperatorFileRefusesABadRuleAloneAndLogsIt: the server starts with an
// operator file holding one bad rule; the refusal is logged at load with
// its line, and the file's other rule applies.
func TestOperatorFileRefusesABadRuleAloneAndLogsIt(t *testing.T) {
	f := write(t, t.TempDir(), "team.toml", "[[rule]]\npattern = \"secrets/\"\ncategory = \"RISK\"\nreason = \"Team secrets.\"\n"+
		"[[rule]]\npattern = \"y\"\ncategory = \"RISK\"\nreason = \"r\"\nseverity = 3\n")
	var logs bytes.Buffer
	e, err := NewEngine(Options{RuleFiles: []string{f}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("one bad rule refused the whole operator file: %v", err)
	}
	if !strings.Contains(logs.String(), `rule file operator:team.toml: line 5: rule 2 refused: unknown key \"severity\"`) {
		t.Errorf("the refusal is not logged with its line:\n%s", logs.String())
	}
	root := t.TempDir()
	write(t, root, "secrets/a.txt", "x\n")
	if d := classifyPath(t, e, root, "secrets/a.txt", false); d.Metadata.Importance != HighRisk {
		t.Errorf("the good rule does not apply: %+v", d.Metadata)
	}
}

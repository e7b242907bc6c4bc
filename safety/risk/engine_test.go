package risk

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// TestBuiltinPacksParseAndNameThemselves checks every pack embedded from
// packs/*.toml: it parses, its [pack] name is its file name, and it says
// what it covers. The list comes from the embedded files, so a new pack is
// checked without editing this test; whether a pack is always on or has
// markers is checked against docs/radar.md by TestRadarDocListsEveryPack.
func TestBuiltinPacksParseAndNameThemselves(t *testing.T) {
	files, err := fs.Glob(packFS, "packs/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded packs: %v", err)
	}
	if _, err := builtinPacks(); err != nil {
		t.Fatalf("built-in packs do not load: %v", err)
	}
	byName := map[string]PackInfo{}
	for _, p := range BuiltinPacks() {
		byName[p.Name] = p
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "packs/"), ".toml")
		t.Run(name, func(t *testing.T) {
			p, ok := byName[name]
			if !ok {
				t.Fatalf("pack file %s does not name itself %q in its [pack] table", f, name)
			}
			if strings.TrimSpace(p.Description) == "" {
				t.Errorf("pack %q has no description", name)
			}
		})
	}
}

func TestSecretFilesAreHighRiskByName(t *testing.T) {
	e := newEngine(t, Options{})
	root := t.TempDir()
	for _, rel := range []string{".env", "app/.env.local", "certs/server.pem", "tls.key", "home/.ssh/id_rsa",
		"id_ed25519", ".npmrc", ".pypirc", ".netrc", ".git-credentials", "kubeconfig", "infra/terraform.tfstate",
		"prod.tfvars", "credentials.json", "cert.p12", "cert.pfx", "release.keystore", "store.jks"} {
		t.Run(caseName(rel), func(t *testing.T) {
			d := classifyPath(t, e, root, rel, false)
			if d.Metadata.Importance != HighRisk || d.Metadata.Category != "RISK" {
				t.Errorf("%s: importance %s, want HIGH_RISK", rel, d.Metadata.Importance)
			}
			if len(d.Metadata.MatchedRules) == 0 || d.Metadata.MatchedRules[0].Source != "builtin:secrets" {
				t.Fatalf("%s: matched rules %+v, want builtin:secrets first", rel, d.Metadata.MatchedRules)
			}
			if len(d.Metadata.Reasons) == 0 || d.Metadata.Reasons[0] != d.Metadata.MatchedRules[0].Reason {
				t.Errorf("%s: reasons %q do not start with the winning rule's reason", rel, d.Metadata.Reasons)
			}
		})
	}
	if d := classifyPath(t, e, root, ".env", false); d.Metadata.SuggestedAction != ReadOnly || d.URI != "file-context://.env" {
		t.Errorf(".env: %+v", d)
	}
}

func TestEnvExampleIsReincludedAsNotSecret(t *testing.T) {
	e := newEngine(t, Options{})
	if d := classifyPath(t, e, t.TempDir(), ".env.example", false); d.Metadata.Importance == HighRisk {
		t.Errorf(".env.example is HIGH_RISK: %+v", d.Metadata)
	}
}

func TestLockfilesAreCarefulEdit(t *testing.T) {
	e := newEngine(t, Options{})
	for _, rel := range []string{"package-lock.json", "go.sum", "Cargo.lock", "poetry.lock", "yarn.lock"} {
		t.Run(rel, func(t *testing.T) {
			d := classifyPath(t, e, t.TempDir(), rel, false)
			if d.Metadata.SuggestedAction != CarefulEdit || d.Metadata.Importance != HighValue {
				t.Errorf("%s: %s %s", rel, d.Metadata.Importance, d.Metadata.SuggestedAction)
			}
		})
	}
}

func TestMigrationsAreRiskConsultHistory(t *testing.T) {
	e := newEngine(t, Options{})
	d := classifyPath(t, e, t.TempDir(), "db/migrate/20240101_add_users.rb", false)
	if d.Metadata.Importance != HighRisk || d.Metadata.SuggestedAction != ConsultHistory {
		t.Errorf("%+v", d.Metadata)
	}
}

func TestProjectFileCannotHideBuiltinRisk(t *testing.T) {
	root := t.TempDir()
	write(t, root, ProjectFile, `
[[rule]]
pattern = ".env"
category = "IGNORE"
priority = 100000
reason = "nothing to see here"

[[rule]]
pattern = "!.env*"
category = "RISK"

[[rule]]
pattern = ".env"
category = "VALUE"
priority = 100000
reason = "just config"
`)
	e := newEngine(t, Options{})
	d := classifyPath(t, e, root, ".env", false)
	if d.Metadata.Importance != HighRisk || d.Metadata.SuggestedAction != ReadOnly {
		t.Fatalf("project file hid a RISK answer: %+v", d.Metadata)
	}
	sources := map[string]bool{}
	for _, m := range d.Metadata.MatchedRules {
		sources[m.Source+"/"+string(m.Category)] = true
	}
	if !sources["project:.bastion-risk.toml/IGNORE"] || !sources["project:.bastion-risk.toml/VALUE"] || !sources["builtin:secrets/RISK"] {
		t.Errorf("every matching rule must be reported: %+v", d.Metadata.MatchedRules)
	}
}

func TestCategoryPriorityAndTieBreakOrder(t *testing.T) {
	dir := t.TempDir()
	op := write(t, dir, "team.toml", `
[[rule]]
pattern = "*.cfg"
category = "VALUE"
priority = 5
reason = "value low"

[[rule]]
pattern = "app.cfg"
category = "VALUE"
priority = 9
reason = "value high"

[[rule]]
pattern = "app.cfg"
category = "IGNORE"
priority = 1000
reason = "ignore very high"

[[rule]]
pattern = "tie.ini"
category = "IGNORE"
priority = 3
reason = "first tie"
suggested_action = "SAFE_TO_IGNORE"
`)
	root := t.TempDir()
	write(t, root, ProjectFile, `
[[rule]]
pattern = "tie.ini"
category = "IGNORE"
priority = 3
reason = "project tie"
suggested_action = "CAREFUL_EDIT"
`)
	e := newEngine(t, Options{RuleFiles: []string{op}})
	d := classifyPath(t, e, root, "app.cfg", false)
	if d.Metadata.Category != "VALUE" || d.Metadata.Reasons[0] != "value high" {
		t.Errorf("VALUE must beat a higher-priority IGNORE, and priority 9 beat 5: %+v", d.Metadata)
	}
	for range 20 {
		d = classifyPath(t, e, root, "tie.ini", false)
		if d.Metadata.Reasons[0] != "project tie" || d.Metadata.SuggestedAction != CarefulEdit {
			t.Fatalf("a tie must go to the project file, every time: %+v", d.Metadata)
		}
	}
}

func TestRuleFileNegationCannotReincludeUnderMatchedDirectory(t *testing.T) {
	op := write(t, t.TempDir(), "r.toml", `
[[rule]]
pattern = "vault/"
category = "RISK"
priority = 1
reason = "vault"

[[rule]]
pattern = "!vault/README.md"
category = "RISK"
`)
	e := newEngine(t, Options{RuleFiles: []string{op}})
	if d := classifyPath(t, e, t.TempDir(), "vault/README.md", false); d.Metadata.Importance != HighRisk {
		t.Errorf("git semantics: a file under a matched directory cannot be re-included: %+v", d.Metadata)
	}
}

func TestEcosystemPackFollowsMarkerFile(t *testing.T) {
	root := t.TempDir()
	e := newEngine(t, Options{})
	if d := classifyPath(t, e, root, "dist/app.js", false); d.Metadata.Importance != Normal {
		t.Fatalf("node pack active without package.json: %+v", d.Metadata)
	}
	write(t, root, "package.json", "{}")
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := classifyPath(t, e, root, "dist/app.js", false)
		if d.Metadata.Importance == Ignorable && d.Metadata.MatchedRules[0].Source == "builtin:node" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node pack not enabled after package.json appeared: %+v", d.Metadata)
		}
		time.Sleep(20 * time.Millisecond)
	}
	found := false
	for _, p := range e.Packs(root) {
		found = found || p == "builtin:node"
	}
	if !found {
		t.Errorf("Packs does not list builtin:node: %v", e.Packs(root))
	}
}

// TestRuleFileDecodingIsStrict: a rule that is invalid is refused alone,
// naming its line and reason, and the file's other rule still applies; a
// file that is not a rule file at all (not TOML, unknown top-level key,
// bad marker) is refused whole.
func TestRuleFileDecodingIsStrict(t *testing.T) {
	const good = "[[rule]]\npattern = \"keep\"\ncategory = \"RISK\"\nreason = \"kept\"\n"
	perRule := []struct{ name, rule, why string }{
		{"unknown key", "pattern = \"a\"\ncategory = \"RISK\"\nreason = \"r\"\nseverity = 3\n", `unknown key "severity"`},
		{"bad category", "pattern = \"a\"\ncategory = \"RISKY\"\nreason = \"r\"\n", `category "RISKY" is not RISK, VALUE or IGNORE`},
		{"bad action", "pattern = \"a\"\ncategory = \"RISK\"\nreason = \"r\"\nsuggested_action = \"DELETE\"\n", `suggested_action "DELETE" is not`},
		{"missing reason", "pattern = \"a\"\ncategory = \"RISK\"\n", "reason is required"},
		{"empty pattern", "pattern = \"\"\ncategory = \"RISK\"\nreason = \"r\"\n", "pattern is empty"},
		{"comment pattern", "pattern = \"#x\"\ncategory = \"RISK\"\nreason = \"r\"\n", "is a comment"},
		{"wrong type", "pattern = \"a\"\ncategory = \"RISK\"\nreason = \"r\"\npriority = \"high\"\n", "priority is not an integer"},
		{"pattern not a string", "pattern = 1\ncategory = \"RISK\"\nreason = \"r\"\n", "pattern is not a string"},
		{"newline pattern", "pattern = \"a\\nb\"\ncategory = \"RISK\"\nreason = \"r\"\n", "newline or NUL"},
		{"NUL pattern", "pattern = \"a\\u0000b\"\ncategory = \"RISK\"\nreason = \"r\"\n", "newline or NUL"},
		{"long reason", "pattern = \"a\"\ncategory = \"RISK\"\nreason = \"" + strings.Repeat("r", 501) + "\"\n", "reason is longer than 500 bytes"},
	}
	for _, c := range perRule {
		t.Run("rule/"+c.name, func(t *testing.T) {
			// The bad rule's header is on line 6, after the good rule and a blank line.
			rs, err := ParseRules("operator:x.toml", []byte(good+"\n[[rule]]\n"+c.rule))
			if err != nil {
				t.Fatalf("the whole file was refused: %v", err)
			}
			if len(rs.Rules) != 1 || rs.Rules[0].Pattern != "keep" {
				t.Errorf("accepted rules %+v, want only the good one", rs.Rules)
			}
			if len(rs.Refused) != 1 || rs.Refused[0].Line != 6 || rs.Refused[0].Index != 2 || !strings.Contains(rs.Refused[0].Reason, c.why) {
				t.Fatalf("refused %+v, want rule 2 on line 6: %s", rs.Refused, c.why)
			}
			if m, _ := rs.cats[Risk.rank()].Match("keep", false); !m {
				t.Error("the good rule does not match")
			}
			if got := rs.notes()[0]; !strings.HasPrefix(got, "rule file operator:x.toml: line 6: rule 2 refused: ") {
				t.Errorf("note %q", got)
			}
		})
	}
	whole := map[string]string{
		"not toml":         "[[rule]\n",
		"unknown top key":  "rules = 1\n",
		"bad marker glob":  "[pack]\nmarkers = [\"[\"]\n",
		"rule not a table": "rule = 1\n",
	}
	for name, doc := range whole {
		t.Run("file/"+name, func(t *testing.T) {
			_, err := ParseRules("operator:x.toml", []byte(doc+good))
			var re *result.Error
			if !errors.As(err, &re) || re.Code != result.InvalidRequest || !strings.Contains(re.Reason, "operator:x.toml") {
				t.Errorf("%s: got %v, want INVALID_REQUEST naming the file", name, err)
			}
		})
	}
}

func TestNewEngineRefusesMissingOrBrokenOperatorFile(t *testing.T) {
	if _, err := NewEngine(Options{RuleFiles: []string{t.TempDir() + "/missing.toml"}}); result.CodeOf(err) != result.NotFound {
		t.Errorf("missing operator file: %v", err)
	}
	bad := write(t, t.TempDir(), "bad.toml", "[[rule]\npattern = 1\n")
	if _, err := NewEngine(Options{RuleFiles: []string{bad}}); result.CodeOf(err) != result.InvalidRequest {
		t.Errorf("broken operator file: %v", err)
	}
}

func TestBrokenProjectFileIsSkippedNotFatal(t *testing.T) {
	root := t.TempDir()
	write(t, root, ProjectFile, "this is not toml [[[")
	e := newEngine(t, Options{})
	if d := classifyPath(t, e, root, ".env", false); d.Metadata.Importance != HighRisk {
		t.Errorf("%+v", d.Metadata)
	}
}

func TestClassifyRefusesPathsLeavingTheRoot(t *testing.T) {
	e := newEngine(t, Options{})
	r := openRoot(t, t.TempDir())
	for _, p := range []string{"../etc/passwd", "/etc/passwd", "a/../../x"} {
		t.Run(caseName(p), func(t *testing.T) {
			if _, err := e.Classify(r, p); result.CodeOf(err) != result.PathEscape {
				t.Errorf("%s: %v, want PATH_ESCAPE", p, err)
			}
			if _, err := e.ClassifyPath(t.TempDir(), p, false); result.CodeOf(err) != result.PathEscape {
				t.Errorf("ClassifyPath %s: %v, want PATH_ESCAPE", p, err)
			}
		})
	}
}

func TestDirectoryDescriptorAndNormalFile(t *testing.T) {
	root := t.TempDir()
	write(t, root, "src/main.c", "int main(){}\n")
	e := newEngine(t, Options{})
	r := openRoot(t, root)
	d, err := e.Classify(r, "src")
	if err != nil || d.MimeType != "inode/directory" {
		t.Fatalf("%v %+v", err, d)
	}
	d, err = e.Classify(r, "src/main.c")
	if err != nil || d.Metadata.Importance != Normal || d.Metadata.Size != 13 || d.Metadata.LastModified == "" || d.MimeType != "text/x-c" {
		t.Fatalf("%v %+v", err, d)
	}
}

func TestMissingFileIsNotFound(t *testing.T) {
	e := newEngine(t, Options{})
	if _, err := e.Classify(openRoot(t, t.TempDir()), "nope.txt"); result.CodeOf(err) != result.NotFound {
		t.Errorf("%v", err)
	}
	_ = os.ErrNotExist
}

// TestCleanRelRefusesAClimbWithTheJailSentinel pins that a path climbing out
// of the root is refused with jail.ErrEscape itself, so errors.Is matches by
// identity and not by a copy of its code and wording.
func TestCleanRelRefusesAClimbWithTheJailSentinel(t *testing.T) {
	for _, rel := range []string{"..", "../x", "a/../../b"} {
		t.Run(rel, func(t *testing.T) {
			if _, err := CleanRel(rel); !errors.Is(err, jail.ErrEscape) {
				t.Fatalf("CleanRel(%q) = %v, want jail.ErrEscape", rel, err)
			}
		})
	}
}

// TestProtectedPathsAreHighRiskWithWhatRunsThem: every protected path of
// safety/protect is HIGH_RISK by name, at any depth, and its reason says
// what runs it.
func TestProtectedPathsAreHighRiskWithWhatRunsThem(t *testing.T) {
	e := newEngine(t, Options{})
	dir := t.TempDir()
	for _, rel := range []string{".vscode/tasks.json", "web/.envrc", ".mcp.json", ".claude/settings.json", ".git/hooks/pre-commit",
		".git/config", "sub/.git/info/attributes", ".idea/workspace.xml", ".yarnrc.yml", ".bashrc"} {
		d, err := e.ClassifyPath(dir, rel, false)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		m := d.Metadata
		if m.Importance != HighRisk || !strings.Contains(strings.Join(m.Reasons, " "), "Runs code later") {
			t.Errorf("%s: %s %q", rel, m.Importance, m.Reasons)
		}
	}
}

package risk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/redact"
)

func TestPostgresPasswordInConfigIsReportedByLineWithoutValue(t *testing.T) {
	root := t.TempDir()
	write(t, root, "config/app.yaml", "name: shop\nport: 8080\ndatabase_url: postgres://app:Sup3rS3cretPw@db.internal:5432/shop\n")
	e := newEngine(t, Options{})
	d, err := e.Classify(openRoot(t, root), "config/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata.Importance != HighRisk || d.Metadata.SuggestedAction != ReadOnly {
		t.Fatalf("%+v", d.Metadata)
	}
	if !hasReason(d, "line 3: PostgreSQL connection string with a password") {
		t.Errorf("reasons %q", d.Metadata.Reasons)
	}
	if b, _ := json.Marshal(d); bytes.Contains(b, []byte("Sup3rS3cretPw")) {
		t.Errorf("descriptor leaks the password: %s", b)
	}
}

func TestStructureProbeFindsCredentialKeys(t *testing.T) {
	cases := map[string]string{
		"settings.json": "{\n  \"name\": \"x\",\n  \"db\": {\n    \"password\": \"hunter2hunter2\"\n  }\n}\n",
		"app.toml":      "title = \"x\"\napi_key = \"k-9f8e7d6c5b4a\"\n",
		"app.ini":       "[main]\nuser = bob\nsecret = s3cr3tvalue99\n",
		"prod.env":      "PORT=80\nexport STRIPE_TOKEN=abcd1234efgh5678\n",
		"values.yml":    "replicas: 3\nclient_secret: 0a9b8c7d6e5f\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			f, bin := ScanContent(name, []byte(content))
			found := false
			for _, x := range f {
				found = found || (x.Kind == "credential" && x.Risk)
			}
			if bin || !found {
				t.Errorf("%s: findings %+v", name, f)
			}
		})
	}
}

func TestPlaceholdersAreNotCredentials(t *testing.T) {
	for name, content := range map[string]string{
		".env":       "PASSWORD=${DB_PASSWORD}\nTOKEN=changeme\nAPI_KEY=\nSECRET=<your-secret>\n",
		"config.yml": "password: \"{{ vault_password }}\"\ndb: postgres://user:${PASS}@db/x\n",
	} {
		t.Run(name, func(t *testing.T) {
			for _, x := range mustScan(t, name, content) {
				if x.Risk {
					t.Errorf("%s: placeholder reported as risk: %+v", name, x)
				}
			}
		})
	}
}

func mustScan(t *testing.T, name, content string) []Finding {
	t.Helper()
	f, _ := ScanContent(name, []byte(content))
	return f
}

func TestSecretShapesAreFoundAnywhere(t *testing.T) {
	content := "package main\n// nothing\nconst k = \"AKIA" + "QWERTYUIOPASDFGH\"\n-----BEGIN RSA PRIVATE KEY-----\n"
	f := mustScan(t, "main.go", content)
	want := map[string]bool{"line 3: AWS access key id": false, "line 4: private key block": false}
	for _, x := range f {
		if _, ok := want[x.Reason()]; ok {
			want[x.Reason()] = true
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("missing %q in %+v", k, f)
		}
	}
}

func TestHeadersAreReported(t *testing.T) {
	if f := mustScan(t, "deploy", "#!/usr/bin/env python3\nprint(1)\n"); len(f) == 0 || f[0].Reason() != "line 1: executable script (interpreter: python3)" {
		t.Errorf("%+v", f)
	}
	if f := mustScan(t, "x", "#!/opt/ignore-previous-instructions\n"); len(f) == 0 || f[0].Label != "executable script (an interpreter)" {
		t.Errorf("unknown interpreter names must not be echoed: %+v", f)
	}
	if f := mustScan(t, "index", "<?php echo 1;"); len(f) == 0 || f[0].Label != "PHP code" {
		t.Errorf("%+v", f)
	}
}

func TestKeywordDensityIsAReasonNotARisk(t *testing.T) {
	f := mustScan(t, "auth.go", "// password checks\nfunc checkPassword(password string) bool { return token != \"\" }\n")
	if len(f) != 1 || f[0].Kind != "keywords" || f[0].Risk {
		t.Errorf("%+v", f)
	}
}

func TestBinaryFilesAreNotScanned(t *testing.T) {
	root := t.TempDir()
	write(t, root, "blob.bin", "\x00\x01AKIAQWERTYUIOPASDFGH")
	d, err := newEngine(t, Options{}).Classify(openRoot(t, root), "blob.bin")
	if err != nil || d.Metadata.Importance != Normal || d.MimeType != "application/octet-stream" {
		t.Errorf("%v %+v", err, d)
	}
}

func TestScanIsBoundedByScanBytes(t *testing.T) {
	root := t.TempDir()
	write(t, root, "notes.txt", strings.Repeat("x", 5000)+"\nAKIAQWERTYUIOPASDFGH\n")
	r := openRoot(t, root)
	if d, _ := newEngine(t, Options{}).Classify(r, "notes.txt"); d.Metadata.Importance != Normal {
		t.Errorf("default scan read past 4 KiB: %+v", d.Metadata)
	}
	if d, _ := newEngine(t, Options{ScanBytes: 8192}).Classify(r, "notes.txt"); d.Metadata.Importance != HighRisk {
		t.Errorf("ScanBytes 8192 did not find the key: %+v", d.Metadata)
	}
	if d, _ := newEngine(t, Options{ScanBytes: -1}).Classify(r, "notes.txt"); d.Metadata.Importance != Normal {
		t.Errorf("ScanBytes -1 still scanned: %+v", d.Metadata)
	}
}

func TestCanarySecretsNeverReachDescriptorSummaryOrLog(t *testing.T) {
	canaries := []string{
		"AKIA" + "CANARY7777777777",
		"CanaryPw-91f3e2d1",
		"ghp_" + strings.Repeat("C", 36),
		"canary-token-5d4c3b2a",
		"CanaryKeyBody0123456789",
	}
	root := t.TempDir()
	write(t, root, ".env", "AWS_ACCESS_KEY_ID="+canaries[0]+"\nDB_PASSWORD="+canaries[1]+"\n")
	write(t, root, "config/db.yaml", "url: postgres://admin:"+canaries[1]+"@db/x\ntoken: "+canaries[3]+"\n")
	write(t, root, "settings.json", `{"github_token": "`+canaries[2]+`", "`+canaries[3]+`_password": "`+canaries[3]+`"}`)
	write(t, root, "src/main.py", "KEY = '"+canaries[0]+"'\n")
	write(t, root, "key.pem", "-----BEGIN PRIVATE KEY-----\n"+canaries[4]+"\n")
	write(t, root, "deploy.ini", "[x]\n"+canaries[3]+" = "+canaries[1]+"\n")
	ruleDir := t.TempDir()
	op := write(t, ruleDir, "rules.toml", "[[rule]]\npattern = \"x\"\ncategory = \"RISK\"\nreason = \"r\"\n")
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEngine(t, Options{RuleFiles: []string{op}, Logger: log})
	r := openRoot(t, root)
	var out bytes.Buffer
	for _, rel := range []string{".env", "config/db.yaml", "settings.json", "src/main.py", "key.pem", "deploy.ini"} {
		d, err := e.Classify(r, rel)
		if err != nil {
			t.Fatal(err)
		}
		if d.Metadata.Importance != HighRisk {
			t.Errorf("%s: %s", rel, d.Metadata.Importance)
		}
		b, _ := json.Marshal(d)
		out.Write(b)
	}
	s, err := e.Summarize(context.Background(), r, ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	out.Write(b)
	out.WriteString(s.Text())
	// A broken rule edit holding a canary must not leak it into the log.
	write(t, ruleDir, "rules.toml", "[[rule]]\npattern = \""+canaries[1]+"\ncategory = "+canaries[0]+"\n")
	if err := e.Reload(); err == nil {
		t.Fatal("broken rule file reloaded")
	} else {
		out.WriteString(err.Error())
	}
	for _, c := range canaries {
		if strings.Contains(out.String(), c) {
			t.Errorf("canary %q leaked into a descriptor or summary", c)
		}
		if strings.Contains(logs.String(), c) {
			t.Errorf("canary %q leaked into the log", c)
		}
	}
}

func TestRenameToEnvIsSeenAtOnce(t *testing.T) {
	root := t.TempDir()
	write(t, root, "notes.txt", "hello\n")
	e := newEngine(t, Options{})
	r := openRoot(t, root)
	if d, _ := e.Classify(r, "notes.txt"); d.Metadata.Importance != Normal {
		t.Fatalf("%+v", d.Metadata)
	}
	if err := os.Rename(filepath.Join(root, "notes.txt"), filepath.Join(root, ".env")); err != nil {
		t.Fatal(err)
	}
	d, err := e.Classify(r, ".env")
	if err != nil || d.Metadata.Importance != HighRisk {
		t.Fatalf("rename to .env not seen: %v %+v", err, d.Metadata)
	}
}

func TestRewriteWithSameSizeAndTimeIsSeenThroughNewIdentity(t *testing.T) {
	root := t.TempDir()
	p := write(t, root, "app.yaml", "password: xxxxxxxxxxxxxxxxxxxxx\n")
	stamp := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(p, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, Options{})
	r := openRoot(t, root)
	if d, _ := e.Classify(r, "app.yaml"); d.Metadata.Importance == HighRisk {
		t.Fatalf("placeholder flagged: %+v", d.Metadata)
	}
	// An editor's save: new file, same size, same mtime, renamed over.
	tmp := write(t, root, "app.yaml.tmp", "password: Zq8-real-Secret-Val\n")
	if err := os.Chtimes(tmp, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Classify(r, "app.yaml"); d.Metadata.Importance != HighRisk {
		t.Fatalf("cache answered from the old file: %+v", d.Metadata)
	}
}

func TestCachedDescriptorIsNotSharedWithCallers(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".env", "A=1\n")
	e := newEngine(t, Options{})
	r := openRoot(t, root)
	d1, _ := e.Classify(r, ".env")
	d1.Metadata.Reasons[0] = "tampered"
	d2, _ := e.Classify(r, ".env")
	if d2.Metadata.Reasons[0] == "tampered" {
		t.Fatal("a caller's edit changed the cached descriptor")
	}
}

func TestSymlinkIsClassifiedByNameAndNotFollowed(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "secret.txt", "AKIAQWERTYUIOPASDFGH\n")
	root := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	d, err := newEngine(t, Options{}).Classify(openRoot(t, root), "link.txt")
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata.Importance != Normal || !hasReason(d, "symbolic link: not followed, content not scanned") {
		t.Errorf("%+v", d.Metadata)
	}
}

func TestScannerUsesTheRedactorsPatternTable(t *testing.T) {
	// Families that only the redactor's table knew before the two lists
	// were merged: a GitLab deploy token, a Slack app token, a Stripe test
	// key, an Authorization header.
	content := "a: gldt-" + strings.Repeat("Q", 24) + "\n" +
		"b: xapp-1-A0B1C2D3E4F5G6\n" +
		"c: sk_test_" + strings.Repeat("9", 24) + "\n" +
		"Authorization: Bearer abcDEF123456ghiJKL\n"
	want := map[string]bool{}
	for _, m := range redact.Default().Find([]byte(content)) {
		want[fmt.Sprintf("line %d: %s", m.Line, m.Label)] = true
	}
	if len(want) < 4 {
		t.Fatalf("redactor found only %v", want)
	}
	f, _ := ScanContent("notes.txt", []byte(content))
	for _, x := range f {
		delete(want, x.Reason())
	}
	if len(want) > 0 {
		t.Errorf("scanner missed the redactor's findings %v; got %+v", want, f)
	}
}

func TestGenericAssignmentOfAWordIsAReasonNotARisk(t *testing.T) {
	f := mustScan(t, "app.js", "const tokenKey = \"user-session\";\n")
	for _, x := range f {
		if x.Risk {
			t.Errorf("a word assigned to a token-like name raised RISK: %+v", x)
		}
	}
	f = mustScan(t, "settings.py", "SECRET_KEY = 'q8#t1!x9z@4kdd9'\n")
	risk := false
	for _, x := range f {
		risk = risk || x.Risk
	}
	if !risk {
		t.Errorf("a hardcoded secret key in source is not RISK: %+v", f)
	}
}

func TestConnectionStringSchemeIsNamedAfterAKeyGluedToIt(t *testing.T) {
	f := mustScan(t, "notes.txt", "url:postgres://u:Zx9vQ2mmT7@db/x\njdbc:mysql://u:Zx9vQ2mmT7@db/x\n")
	want := map[string]bool{"line 1: PostgreSQL connection string with a password": false, "line 2: MySQL connection string with a password": false}
	for _, x := range f {
		if _, ok := want[x.Reason()]; ok {
			want[x.Reason()] = true
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("missing %q in %+v", k, f)
		}
	}
}

// TestShebangNamesComeFromThePrograms proves the shebang label's list of
// names is command.Programs: every shell, interpreter and tool, in each
// spelling the table lists, is named; wrappers and other spellings are not.
func TestShebangNamesComeFromThePrograms(t *testing.T) {
	for _, p := range command.Programs() {
		for _, name := range append([]string{p.Name}, p.Typed...) {
			t.Run(name, func(t *testing.T) {
				want := "executable script (interpreter: " + name + ")"
				if p.Kind == command.Wrapper {
					want = "executable script (an interpreter)"
				}
				f := mustScan(t, "run", "#!/usr/bin/"+name+" -x\n")
				if len(f) == 0 || f[0].Label != want {
					t.Errorf("%s %q: %+v, want %q", p.Kind, name, f, want)
				}
			})
		}
	}
	t.Run("unlisted spelling", func(t *testing.T) {
		if f := mustScan(t, "run", "#!/usr/bin/Python3.11\n"); len(f) == 0 || f[0].Label != "executable script (an interpreter)" {
			t.Errorf("a spelling the table does not list was echoed: %+v", f)
		}
	})
}

// TestOperatorPatternsFeedTheContentScanner proves [redaction] patterns are
// one table with two uses: the radar finds an operator pattern in a file,
// names it, and reports the file HIGH_RISK without its text.
func TestOperatorPatternsFeedTheContentScanner(t *testing.T) {
	root := t.TempDir()
	write(t, root, "notes.txt", "hello\norder ACME-123456 shipped\n")
	for _, c := range []struct {
		name     string
		patterns []redact.Extra
		reason   string
	}{
		{"named", []redact.Extra{{Name: "acme-order", Regex: `ACME-[0-9]{6}`}}, "line 2: operator pattern acme-order"},
		{"unnamed", []redact.Extra{{Regex: `x-never`}, {Regex: `ACME-[0-9]{6}`}}, "line 2: operator pattern 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := newEngine(t, Options{Patterns: c.patterns}).Classify(openRoot(t, root), "notes.txt")
			if err != nil {
				t.Fatal(err)
			}
			if d.Metadata.Importance != HighRisk || !hasReason(d, c.reason) {
				t.Errorf("importance %s, reasons %q; want HIGH_RISK with %q", d.Metadata.Importance, d.Metadata.Reasons, c.reason)
			}
			if b, _ := json.Marshal(d); bytes.Contains(b, []byte("123456")) {
				t.Errorf("descriptor leaks the match: %s", b)
			}
		})
	}
	t.Run("without patterns", func(t *testing.T) {
		d, err := newEngine(t, Options{}).Classify(openRoot(t, root), "notes.txt")
		if err != nil || d.Metadata.Importance == HighRisk {
			t.Errorf("a file without a builtin secret is HIGH_RISK: %+v %v", d.Metadata, err)
		}
	})
}

func TestBadOperatorPatternStopsTheEngine(t *testing.T) {
	_, err := NewEngine(Options{Patterns: []redact.Extra{{Name: "acme", Regex: `(`}}})
	var pe *redact.PatternError
	if !errors.As(err, &pe) || pe.Index != 0 || pe.Name != "acme" {
		t.Fatalf("NewEngine = %v; want a *redact.PatternError naming acme", err)
	}
}

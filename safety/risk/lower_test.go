package risk

import (
	"strings"
	"testing"
)

// TestPlaceholderContentLowersRiskByName: a file that is RISK by its name
// is NORMAL when the scanner reads its whole format and every value is a
// placeholder; one real-looking secret, or anything the scanner does not
// fully understand, keeps it HIGH_RISK.
func TestPlaceholderContentLowersRiskByName(t *testing.T) {
	for _, c := range placeholderCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, c.rel, c.content)
			e := newEngine(t, Options{})
			d, err := e.Classify(openRoot(t, dir), c.rel)
			if err != nil {
				t.Fatal(err)
			}
			md := d.Metadata
			if md.Importance != c.want {
				t.Fatalf("%s: importance %s, want %s (reasons %q)", c.rel, md.Importance, c.want, md.Reasons)
			}
			lowered := len(md.Reasons) > 0 && md.Reasons[0] == PlaceholderReason
			if lowered != (c.want == Normal) {
				t.Errorf("reasons %q: placeholder reason first = %v", md.Reasons, lowered)
			}
			if c.want == Normal {
				if md.Category != CategoryNone || md.SuggestedAction != CarefulEdit || len(md.MatchedRules) == 0 {
					t.Errorf("lowered descriptor: %+v", md)
				}
			}
		})
	}
}

// placeholderCase is one file that is RISK by name and the importance its
// content gives it.
type placeholderCase struct {
	name, rel, content string
	want               Importance
}

// placeholderCases are the lowering cases of the descriptor, which the
// summary must answer alike (TestSummaryLowersAsTheDescriptorDoes).
func placeholderCases() []placeholderCase {
	realAWS := "AKIA" + "Q3EGV7ZKXN2HR5LT" // shaped like a key, not AWS's example
	return []placeholderCase{
		{"env placeholders", ".env.local", "# copy me\nexport DB_PASSWORD=\nAPI_KEY=changeme\nSECRET=<your-secret>\nTOKEN=${TOKEN}\nKEY=xxx\nSTRIPE=your-stripe-key-here\n", Normal},
		{"env AWS docs example keys", ".env", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", Normal},
		{"env AWS example family", ".env", "AWS_ACCESS_KEY_ID=AKIAI44QH8DHBEXAMPLE\nAWS_SECRET_ACCESS_KEY=je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY\n", Normal},
		{"env Stripe docs example keys", ".env", "STRIPE_SECRET_KEY=\"sk_test_4eC39HqLyjWDarjtT1zdp7dc\"\nSTRIPE_PUBLISHABLE_KEY='pk_test_TYooMQauvdEDq54NiTphI7jx' # docs\n", Normal},
		{"flat yaml placeholders", "secrets.yml", "---\npassword: changeme\napi_key: \"<api-key>\"\ntoken: ''\n", Normal},
		{"json placeholders", "credentials.json", `{"client_secret": "<client-secret>", "token": "${TOKEN}", "web": {"key": "xxx", "uri": null}}`, Normal},
		{"json boolean not a placeholder", "credentials.json", `{"token": "xxx", "ok": true}`, HighRisk},
		{"ini placeholders", "secrets.ini", "[db]\npassword = changeme\n; note\nuser = <user>\n", Normal},
		{"env one real secret", ".env.local", "API_KEY=changeme\nDB_PASSWORD=Zq8vT2mLx91Rk4Pw\n", HighRisk},
		{"env real AWS-shaped key", ".env", "AWS_ACCESS_KEY_ID=" + realAWS + "\n", HighRisk},
		{"env Stripe key not from docs", ".env", "STRIPE_SECRET_KEY=sk_test_9fJ2kLm8Qw3Er5Ty7Ui0Op1A\n", HighRisk},
		{"env plain word value", ".env", "APP_NAME=myservice\n", HighRisk},
		{"env one-byte value", ".env", "SECRET=1\n", HighRisk},
		{"env single x", ".env", "API_KEY=x\n", HighRisk},
		{"env weak password word", ".env", "DB_PASSWORD=password\n", HighRisk},
		{"env empty file", ".env", "", HighRisk},
		{"env only comments", ".env", "# nothing here\n", HighRisk},
		{"env line not understood", ".env", "API_KEY=changeme\nthis is not a pair\n", HighRisk},
		{"env open quote", ".env", "API_KEY=\"changeme\nmore\"\n", HighRisk},
		{"yaml nested not understood", "secrets.yml", "db:\n  password: changeme\n", HighRisk},
		{"yaml block scalar not understood", "secrets.yml", "key: |\n  -----BEGIN\n", HighRisk},
		{"json number not a placeholder", "credentials.json", `{"pin": 4921, "token": "xxx"}`, HighRisk},
		{"json broken", "credentials.json", `{"token": "xxx"`, HighRisk},
		{"format not key value", "id_rsa", "KEY=changeme\n", HighRisk},
		{"private key in env", ".env", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", HighRisk},
		{"secret-shaped key name", ".env", "ghp_" + strings.Repeat("a1B2", 9) + "=x\n", HighRisk},
		{"truncated beyond the scan", ".env", "API_KEY=changeme\n" + strings.Repeat("# pad\n", 1000) + "DB_PASSWORD=Zq8vT2mLx91Rk4Pw\n", HighRisk},
		{"truncated placeholders only", ".env", "API_KEY=changeme\n" + strings.Repeat("# pad\n", 1000), HighRisk},
		{"placeholders exactly the scan's size", ".env", scanSized(DefaultScanBytes), Normal},
		{"placeholders one byte past the scan", ".env", scanSized(DefaultScanBytes + 1), HighRisk},
	}
}

// scanSized is a placeholder-only .env of n bytes (n > 20): one pair and
// a comment that pads it.
func scanSized(n int) string {
	pair := "API_KEY=changeme\n"
	return pair + "#" + strings.Repeat("p", n-len(pair)-2) + "\n"
}

// TestPlaceholderReasonOnANameThatIsNotRisk: .env.example is not RISK by
// name; full of placeholders it stays NORMAL and says why, and one real
// secret raises it.
func TestPlaceholderReasonOnANameThatIsNotRisk(t *testing.T) {
	cases := []struct {
		name, content string
		want          Importance
	}{
		{"placeholders", "API_KEY=AKIAIOSFODNN7EXAMPLE\nDB_PASSWORD=changeme\n", Normal},
		{"one real secret", "API_KEY=changeme\nDB_PASSWORD=Zq8vT2mLx91Rk4Pw\n", HighRisk},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, ".env.example", c.content)
			d, err := newEngine(t, Options{}).Classify(openRoot(t, dir), ".env.example")
			if err != nil {
				t.Fatal(err)
			}
			if d.Metadata.Importance != c.want || hasReason(d, PlaceholderReason) != (c.want == Normal) {
				t.Errorf("got %s %q, want %s", d.Metadata.Importance, d.Metadata.Reasons, c.want)
			}
		})
	}
}

// TestRuleFilesCanTurnPlaceholderLoweringOff: [content]
// lower_placeholders = false in an operator or project rule file keeps
// RISK-by-name files HIGH_RISK; a project file cannot turn back on what
// an operator file turned off.
func TestRuleFilesCanTurnPlaceholderLoweringOff(t *testing.T) {
	off := "[content]\nlower_placeholders = false\n"
	on := "[content]\nlower_placeholders = true\n"
	cases := []struct {
		name, operator, project string
		want                    Importance
	}{
		{"default on", "", "", Normal},
		{"operator on", on, "", Normal},
		{"operator off", off, "", HighRisk},
		{"project off", "", off, HighRisk},
		{"project cannot undo operator off", off, on, HighRisk},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, cfg := t.TempDir(), t.TempDir()
			write(t, dir, ".env", "API_KEY=changeme\n")
			var opts Options
			if c.operator != "" {
				opts.RuleFiles = []string{write(t, cfg, "ops.toml", c.operator)}
			}
			if c.project != "" {
				write(t, dir, ProjectFile, c.project)
			}
			d, err := newEngine(t, opts).Classify(openRoot(t, dir), ".env")
			if err != nil {
				t.Fatal(err)
			}
			if d.Metadata.Importance != c.want {
				t.Errorf("importance %s, want %s (reasons %q)", d.Metadata.Importance, c.want, d.Metadata.Reasons)
			}
		})
	}
}

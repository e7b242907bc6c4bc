package mcpkittest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BrokenRadarRules writes a [radar] rule file that does not parse into a
// fresh directory and returns a policy fragment listing it in
// [radar] rule_files, and the file's path. Append the fragment to a policy
// file's other tables.
func BrokenRadarRules(t testing.TB) (fragment, ruleFile string) {
	t.Helper()
	ruleFile = filepath.Join(t.TempDir(), "broken-rules.toml")
	if err := os.WriteFile(ruleFile, []byte("[[rule]\nthis is not TOML\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("\n[radar]\nrule_files = [%q]\n", ruleFile), ruleFile
}

// WantRadarRefusal requires the refusal every server gives at start for a
// broken [radar] rule file: one line "fatal: [radar] …" naming the file
// (WantFatal's shape).
func WantRadarRefusal(t testing.TB, r Ran, ruleFile string) {
	t.Helper()
	WantFatal(t, r, filepath.Base(ruleFile))
	if !strings.HasPrefix(r.Stderr, "fatal: [radar] ") {
		t.Fatalf("the refusal does not start \"fatal: [radar] \": %q", r.Stderr)
	}
}

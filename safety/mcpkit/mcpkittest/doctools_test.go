package mcpkittest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const docSample = "# Server\n\n## alpha\n\n```sh\n# not a heading\nalpha --flag\n```\n\n### Tools\n\n" +
	"| tool | what |\n|---|---|\n| `scan(path?)` | finds |\n| `reclaim(ids)` | deletes |\n\n" +
	"### Results\n\n| `not_a_tool(x)` | under another heading |\n\n" +
	"## Tools (no others)\n\n### `run_command(command, cwd?)`\n\ntext\n\n### `explain_command(command)`\n\n" +
	"## Limits\n\n| `late(x)` | outside |\n"

func TestDocToolNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(docSample), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		headings []string
		want     []string
	}{
		{"table rows in a nested section, past a fence with a # line", []string{"alpha", "Tools"}, []string{"scan", "reclaim"}},
		{"one heading per tool", []string{"Tools (no"}, []string{"run_command", "explain_command"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DocToolNames(t, path, c.headings...); !slices.Equal(got, c.want) {
				t.Errorf("DocToolNames(%q) = %q, want %q", c.headings, got, c.want)
			}
		})
	}
	t.Run("missing section", func(t *testing.T) {
		if got := docSection(strings.Split(docSample, "\n"), "beta"); got != nil {
			t.Errorf("docSection(beta) = %q, want nil", got)
		}
	})
}

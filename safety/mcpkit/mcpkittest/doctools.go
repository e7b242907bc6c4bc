package mcpkittest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docToolLine is a line that documents a tool in a Markdown section: a
// table row or a heading whose first cell or text starts with the tool's
// call, as in "| `scan(path?)` |" or "### `run_command(command, cwd?)`".
var docToolLine = regexp.MustCompile("^(?:\\|\\s*|#+\\s+)`([a-z][a-z0-9_]*)\\(")

// DocToolNames returns the tools that the Markdown file at docPath
// documents in the section reached through headings: the first heading
// whose text starts with headings[0], then, inside its section, the first
// whose text starts with headings[1], and so on (README.md's "sweepd" then
// "Tools"). A section runs to the next heading of the same or a higher
// level. A tool is documented by a table row or a heading that starts with
// its call in a code span: "| `list_files(subdir?)` |". It fails t when a
// heading is missing or the section documents no tool.
func DocToolNames(t testing.TB, docPath string, headings ...string) []string {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, h := range headings {
		lines = docSection(lines, h)
		if lines == nil {
			t.Fatalf("%s has no section %q (looked for %q)", docPath, h, headings)
		}
	}
	var names []string
	for _, l := range lines {
		if m := docToolLine.FindStringSubmatch(l); m != nil && !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s, section %q, documents no tool", docPath, headings)
	}
	return names
}

// docSection returns the lines under the first heading whose text starts
// with heading, up to the next heading of the same or a higher level, or
// nil when there is no such heading. Lines in ``` fences are not headings.
func docSection(lines []string, heading string) []string {
	levels := headingLevels(lines)
	for i, l := range lines {
		if levels[i] == 0 || !strings.HasPrefix(strings.TrimSpace(l[levels[i]:]), heading) {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if levels[j] > 0 && levels[j] <= levels[i] {
				end = j
				break
			}
		}
		return lines[i+1 : end]
	}
	return nil
}

// headingLevels returns the heading level of each line, 0 for a line that
// is not a heading or lies in a fenced code block.
func headingLevels(lines []string) []int {
	levels := make([]int, len(lines))
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			levels[i] = headingLevel(l)
		}
	}
	return levels
}

// headingLevel returns the level of a Markdown heading line, or 0.
func headingLevel(line string) int {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
		return 0
	}
	return level
}

// ToolNamesIn lists the tools of a tools/list answer (ToolsListJSON, or a
// golden file of it), sorted, as ToolNames lists what a client sees.
func ToolNamesIn(t testing.TB, toolsJSON []byte) []string {
	t.Helper()
	var names []string
	for _, tool := range Tools(t, toolsJSON) {
		name, _ := tool["name"].(string)
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// GoldenToolNames lists the tools of the tools/list golden file at path,
// sorted: what a test of the built binary compares ToolNames with.
func GoldenToolNames(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ToolNamesIn(t, b)
}

// CheckDocTools fails t unless the tools that DocToolNames finds in
// docPath under headings are exactly the tools of a tools/list answer
// (ToolsListJSON, or a golden file of it), naming each tool the document
// leaves out or has in excess.
func CheckDocTools(t testing.TB, toolsJSON []byte, docPath string, headings ...string) {
	t.Helper()
	documented := DocToolNames(t, docPath, headings...)
	served := ToolNamesIn(t, toolsJSON)
	for _, name := range served {
		if !slices.Contains(documented, name) {
			t.Errorf("%s, section %q, does not document tool %s; add it", docPath, headings, name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(served, name) {
			t.Errorf("%s, section %q, documents tool %s, which the server does not serve", docPath, headings, name)
		}
	}
}

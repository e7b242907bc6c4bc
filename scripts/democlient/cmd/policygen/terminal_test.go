package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/config"
)

// TestRenderedSectionReadsBack proves the TOML policygen writes decodes to
// the section it was rendered from, for both shipped sections.
func TestRenderedSectionReadsBack(t *testing.T) {
	for _, c := range []struct {
		name    string
		section command.Section
	}{
		{"standard", command.Standard()},
		{"dev", command.Dev()},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol, err := config.Parse(renderSection(c.section))
			if err != nil {
				t.Fatal(err)
			}
			got, want := pol.Terminal.CommandPolicy(), c.section.Policy()
			if !reflect.DeepEqual(got.Allow, want.Allow) || !reflect.DeepEqual(got.Deny, want.Deny) ||
				!reflect.DeepEqual(got.Rules, want.Rules) {
				t.Errorf("rendered section does not read back:\n%s", renderSection(c.section))
			}
		})
	}
}

func TestSpliceReplacesOnlyTheMarkedLines(t *testing.T) {
	file := "# hand\n[terminal]\n" + beginMark + "\nold = 1\n" + endMark + "\n\n[organizer]\n"
	out, err := splice([]byte(file), []byte("new = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# hand\n[terminal]\n" + beginMark + "\nnew = 2\n" + endMark + "\n\n[organizer]\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	for _, c := range []struct{ name, file string }{
		{"no markers", "[terminal]\n"},
		{"end before begin", endMark + "\n" + beginMark + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := splice([]byte(c.file), nil); err == nil || !strings.Contains(err.Error(), "no generated section") {
				t.Errorf("splice accepted a file without a generated section: %v", err)
			}
		})
	}
}

// TestQuoteWritesTOMLStrings checks the quoting of names and reasons.
func TestQuoteWritesTOMLStrings(t *testing.T) {
	for _, s := range []string{`plain`, `a "quoted" word`, `back\slash`, "tab\there", "new\nline", "ünïcode"} {
		t.Run(s, func(t *testing.T) {
			pol, err := config.Parse([]byte("[terminal.allowlist]\ncommands = [" + quote(s) + "]\n"))
			if err != nil || len(pol.Terminal.Allowlist.Commands) != 1 || pol.Terminal.Allowlist.Commands[0] != s {
				t.Errorf("quote(%q) = %s does not read back: %+v, %v", s, quote(s), pol, err)
			}
		})
	}
}

// TestShippedFilesAreFresh is make policy-check for the command sections,
// as a test: regenerating into a temporary directory changes nothing.
func TestShippedFilesAreFresh(t *testing.T) {
	src := filepath.Join("..", "..", "..", "..", "policies")
	out := t.TempDir()
	if err := writePolicies(src, out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"terminal-section.toml", "policy.toml", "policy.example.toml", "dev.example.toml"} {
		t.Run(f, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(out, f))
			if err != nil || string(got) != string(want) {
				t.Errorf("policies/%s is stale: run make policy-docs (%v)", f, err)
			}
		})
	}
}

package risk

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/bastion-mcp/bastion/safety/protect"
)

// The canonical built-in packs live in packs/ beside this file and are
// compiled into the binary; policies/radar/README.md in the repository
// points here.
//
//go:embed packs/*.toml
var packFS embed.FS

// builtinPacks parses every embedded pack, sorted by file name so that
// source order (and so tie-breaking) is stable.
func builtinPacks() ([]*RuleSet, error) {
	names, err := fs.Glob(packFS, "packs/*.toml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var sets []*RuleSet
	for i, n := range names {
		data, err := packFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(strings.TrimPrefix(n, "packs/"), ".toml")
		rs, err := ParseRules("builtin:"+base, data)
		if err != nil {
			return nil, fmt.Errorf("built-in pack %s: %w", base, err)
		}
		if len(rs.Refused) > 0 {
			return nil, fmt.Errorf("built-in pack %s: %s", base, rs.notes()[0])
		}
		if rs.Info.Name != "" && rs.Info.Name != base {
			return nil, fmt.Errorf("built-in pack %s names itself %q", base, rs.Info.Name)
		}
		rs.tier, rs.order = 0, i
		sets = append(sets, rs)
	}
	rs, err := ParseRules("builtin:protected", protectedPack())
	if err != nil {
		return nil, fmt.Errorf("built-in pack protected: %w", err)
	}
	rs.tier, rs.order = 0, len(sets)
	return append(sets, rs), nil
}

// protectedPack is the always-on pack built from safety/protect's
// Defaults, so the radar and the sandbox share one list: each protected
// path is HIGH_RISK, with what runs it and when.
func protectedPack() []byte {
	var b strings.Builder
	b.WriteString("[pack]\nname = \"protected\"\ndescription = \"Paths that make git, editors, direnv, agent clients and shells run code later (safety/protect); terminald commands cannot change them.\"\n")
	rule := func(pattern, trigger string) {
		fmt.Fprintf(&b, "\n[[rule]]\npattern = %q\ncategory = \"RISK\"\npriority = 96\nreason = %q\nsuggested_action = \"READ_ONLY\"\n",
			pattern, "Runs code later, outside any sandbox: "+trigger+". Change it only when the person asks for it by name.")
	}
	for _, e := range protect.Defaults {
		switch e.Kind {
		case protect.Tree:
			rule("**/"+e.Pattern+"/", e.Trigger)
			rule("**/"+e.Pattern+"/**", e.Trigger)
		case protect.File:
			rule("**/"+e.Pattern, e.Trigger)
		}
	}
	return []byte(b.String())
}

// BuiltinPacks lists the embedded packs: name, description and markers
// (empty for the always-on packs).
func BuiltinPacks() []PackInfo {
	sets, err := builtinPacks()
	if err != nil {
		return nil
	}
	out := make([]PackInfo, 0, len(sets))
	for _, s := range sets {
		out = append(out, s.Info)
	}
	return out
}

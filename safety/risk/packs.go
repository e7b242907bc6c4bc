package risk

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
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
	return sets, nil
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

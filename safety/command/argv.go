package command

import "strings"

// fact is one thing the matcher learnt about an argv: an option (by its
// canonical spelling) or a positional word.
type fact struct {
	opt   bool
	scope string // "" for the command's own options, else the git subcommand
	name  string // canonical option ("--output", "-c") or the positional word
	typed string // a long option as typed, when it is not an exact known name
	value string
}

// analysis is an argv as the matcher sees it.
type analysis struct {
	facts  []fact
	values []string // every word and every option value, for prefix and path tokens
	sub    string   // git subcommand, "" if none
	known  bool     // sub is a known subcommand
	// query: sub is git's config and its arguments are a read-only query
	// (gitConfigQuery), which a bare "config" entry does not match.
	query bool
}

// gitConfigModes are the read-only modes of git config, with the number of
// names (and value patterns) each takes at least and at most.
var gitConfigModes = map[string][2]int{
	"--get": {1, 2}, "--get-all": {1, 2}, "--get-regexp": {1, 2}, "--list": {0, 0}, "-l": {0, 0},
}

// gitConfigFlags are the options a read-only git config query may carry:
// where to read, how to show and type the values. Options that name a
// file or blob to read (--file, --blob), write (--add, --unset, --edit,
// --replace-all, --rename-section...) or are not known here make the
// line a write, refused by the "config" entry.
var gitConfigFlags = map[string]bool{
	"--global": true, "--system": true, "--local": true, "--worktree": true, "--show-origin": true,
	"--show-scope": true, "--name-only": true, "--null": true, "-z": true, "--includes": true,
	"--no-includes": true, "--bool": true, "--int": true, "--bool-or-int": true, "--path": true,
	"--expiry-date": true, "--type": true, "--all": true, "--regexp": true,
}

// gitConfigQuery reports whether facts (git config's arguments) are one
// read-only query: exactly one mode (--get, --get-all, --get-regexp,
// --list or -l, or the subcommands get and list of newer git), only
// gitConfigFlags besides, and as many names as the mode takes. --type is
// accepted only as --type=VALUE (a separate word would count as a name).
func gitConfigQuery(facts []fact) bool {
	mode, names := "", 0
	for _, f := range facts {
		if f.scope != "config" {
			continue // git's own options, judged by the other entries
		}
		switch {
		case f.opt && gitConfigModes[f.name] != [2]int{} || f.opt && (f.name == "--list" || f.name == "-l"):
			if mode != "" {
				return false
			}
			mode = f.name
		case f.opt && gitConfigFlags[f.name] && f.typed == "" || f.opt && gitConfigFlags[f.typed]:
			if f.name != "--type" && f.value != "" {
				return false
			}
		case f.opt:
			return false
		case mode == "" && names == 0 && (f.name == "get" || f.name == "list"):
			mode = f.name
		default:
			names++
		}
	}
	switch mode {
	case "get":
		return names == 1
	case "list", "--list", "-l":
		return names == 0
	case "":
		return false
	}
	b := gitConfigModes[mode]
	return names >= b[0] && names <= b[1]
}

func (t *optTable) canonical(spelling string) string {
	if t != nil {
		if c, ok := t.alias[spelling]; ok {
			return c
		}
	}
	return spelling
}

// resolveLong returns the full name of a typed long option (without "--"),
// whether it was an exact match, and whether any known option matched.
func (t *optTable) resolveLong(typed string) (full string, kind argKind, exact, found bool) {
	if t == nil {
		return typed, noArg, false, false
	}
	if k, ok := t.long[typed]; ok {
		return typed, k, true, true
	}
	match := ""
	n := 0
	for name := range t.long {
		if strings.HasPrefix(name, typed) {
			match = name
			n++
		}
	}
	if n == 1 && typed != "" {
		return match, t.long[match], false, true
	}
	return typed, noArg, false, false
}

// knows reports whether spelling ("-c", "--git-dir") is an option of t.
func (t *optTable) knows(spelling string) bool {
	if t == nil {
		return false
	}
	if _, ok := t.alias[spelling]; ok {
		return true
	}
	if strings.HasPrefix(spelling, "--") {
		_, ok := t.long[spelling[2:]]
		return ok
	}
	if len(spelling) == 2 && spelling[0] == '-' {
		return strings.IndexByte(t.valueShort+t.optionalShort, spelling[1]) >= 0
	}
	return false
}

// analyze turns args (argv without argv[0]) into facts using spec, which
// may be nil for a command the tables do not describe.
func analyze(spec *cmdSpec, args []string) analysis {
	var a analysis
	a.values = append(a.values, args...)
	if spec == nil {
		spec = &cmdSpec{}
	}
	table := &spec.opts
	scope := ""
	i := 0
	if spec.oldStyle && len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		// tar xfC a.tar dir: the letters are options, their values follow.
		next := 1
		for j := 0; j < len(args[0]); j++ {
			c := args[0][j]
			f := fact{opt: true, name: table.canonical("-" + string(c))}
			if strings.IndexByte(table.valueShort, c) >= 0 && next < len(args) {
				f.value = args[next]
				a.values = append(a.values, args[next])
				next++
			}
			a.facts = append(a.facts, f)
		}
		i = next
	}
	endOpts := false
	for ; i < len(args); i++ {
		w := args[i]
		switch {
		case endOpts || w == "-" || w == "" || w[0] != '-':
			if spec.subs != nil && a.sub == "" && !endOpts {
				a.sub = w
				_, a.known = spec.subs[w]
				table, scope = spec.subs[w], w
				continue
			}
			a.facts = append(a.facts, fact{scope: scope, name: w})
		case w == "--" && !spec.singleDash:
			endOpts = true
		case spec.singleDash:
			a.facts = append(a.facts, fact{opt: true, name: w})
		default:
			var consumed string
			var took bool
			if i+1 < len(args) {
				consumed = args[i+1]
			}
			took = a.option(table, scope, w, consumed, i+1 < len(args))
			if took {
				i++
				if len(consumed) > 1 && consumed[0] == '-' {
					// Examined as an option too, in case the table is
					// wrong about the value: refusing too much is safe.
					a.option(table, scope, consumed, "", false)
				}
			}
		}
	}
	if spec.subs != nil && a.sub == "config" {
		a.query = gitConfigQuery(a.facts)
	}
	return a
}

// option records the facts of one option word w; next is the following
// word, which it consumes (returning true) when the option needs a value.
func (a *analysis) option(t *optTable, scope, w, next string, hasNext bool) bool {
	if strings.HasPrefix(w, "--") {
		typed, val, hasEq := strings.Cut(w[2:], "=")
		full, kind, exact, _ := t.resolveLong(typed)
		f := fact{opt: true, scope: scope, name: t.canonical("--" + full), value: val}
		if !exact {
			f.typed = "--" + typed
		}
		took := false
		if !hasEq && kind == reqArg && hasNext {
			f.value = next
			took = true
		}
		if hasEq || took {
			a.values = append(a.values, f.value)
		}
		a.facts = append(a.facts, f)
		return took
	}
	valueShort, optionalShort := "", ""
	if t != nil {
		valueShort, optionalShort = t.valueShort, t.optionalShort
	}
	took := false
	valueSeen := false
	for j := 1; j < len(w); j++ {
		c := w[j]
		f := fact{opt: true, scope: scope, name: t.canonical("-" + string(c))}
		if !valueSeen && strings.IndexByte(valueShort+optionalShort, c) >= 0 {
			valueSeen = true
			// The rest of the bundle is the value; its letters are still
			// recorded as flags below, in case the table is wrong.
			if rest := w[j+1:]; rest != "" {
				f.value = rest
				a.values = append(a.values, rest)
			} else if strings.IndexByte(valueShort, c) >= 0 && hasNext {
				f.value = next
				a.values = append(a.values, next)
				took = true
			}
		}
		a.facts = append(a.facts, f)
	}
	return took
}

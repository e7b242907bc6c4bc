// Package organize holds organizerd's skip rules and categories: which
// objects the organizer may move, which ones it must never move, and which
// ones it leaves alone unless a person names them.
//
// Every rule declares a layer. PROTECTION rules bind every tool and cannot be
// overridden by a policy: a path that leaves the workspace, a symbolic link,
// a name with control characters or invalid UTF-8, a special file, an
// occupied destination, and anything no rule permits (deny by default).
// RESTRAINT rules bind the planner only: installers and executables,
// application bundles, folders, dotfiles, system files, partial downloads,
// files modified in the last few seconds, files the risk radar marks
// HIGH_RISK, and files with no category. Restraint answers
// NEEDS_EXPLICIT_REQUEST: nothing is wrong, but moving it unprompted would be
// a guess, so the user must name it (move_file).
//
// The protection set is derived by filtering the one rule set; there is no
// second list. The package refuses a policy rule without a layer, with an
// unknown condition, or that tries to replace a protection rule.
//
// It is also organizerd's pipeline (pipeline.go): one call per flow
// (Organizer.Plan, Apply, Move, Undo, Redo) holding every step in the one
// safe order: the policy and protection checks, the question to the person
// (through the approval.Call the server binds, approval.Asker.For), the
// re-check after the answer, the audit intent, the journal's move, the
// outcome record. The server decodes arguments and shows the Outcome; a
// new step of a flow goes in pipeline.go. It never moves anything the
// journal has not re-checked, never moves before the intent record is
// written, and never takes a call that cannot ask for the person's yes.
package organize

import (
	"bytes"
	_ "embed"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/result"
)

//go:embed defaults.toml
var defaultsTOML []byte

// Layer is a rule's layer.
type Layer string

// The two layers.
const (
	Protection Layer = "protection"
	Restraint  Layer = "restraint"
)

// DefaultRecent is how long after its last modification a file counts as
// still being written when recent_seconds is unset.
const DefaultRecent = 5 * time.Second

// Kind is what an object is.
type Kind string

// Kinds of objects.
const (
	File    Kind = "file"
	Dir     Kind = "dir"
	Symlink Kind = "symlink"
	Special Kind = "special"
	Other   Kind = "other"
)

// Facts are what the rules look at for one object.
type Facts struct {
	Name         string    // base name, as found
	Kind         Kind      // what the object is
	Escape       bool      // the requested path leaves the workspace
	BadName      bool      // control characters or invalid UTF-8 in the name
	DestOccupied bool      // the destination exists (or its folder is not a folder)
	ModTime      time.Time // last modification
	Risk         string    // the radar's importance ("HIGH_RISK", ...), "" when unknown
	RiskReason   string    // the radar's first reason
	RiskAction   string    // the radar's suggested action, "" when unknown
	RiskMIME     string    // the radar's MIME type guess, "" when unknown
	Category     string    // the category folder, "" when none
	// Protected is set when the move's destination is a protected path
	// (safety/protect): the protected-path rule refuses it. Moving a
	// protected file away is not refused (it runs nothing).
	Protected bool
}

// Rule is one skip rule as declared.
type Rule struct {
	Name   string   `json:"name" toml:"name"`
	Layer  Layer    `json:"layer" toml:"layer"`
	When   []string `json:"when" toml:"when"`
	Reason string   `json:"reason" toml:"reason"`
	Source string   `json:"source" toml:"-"` // "builtin" or "policy"
	conds  [][]term
}

type term struct{ key, val string }

var knownFlags = map[string]bool{"escape": true, "symlink": true, "bad_name": true, "special": true,
	"dest_occupied": true, "not_permitted": true, "dir": true, "file": true, "dotfile": true,
	"recent": true, "no_category": true, "protected_path": true}

func parseCond(c string) ([]term, error) {
	var out []term
	for _, part := range strings.Split(c, "&") {
		part = strings.TrimSpace(part)
		k, v, hasVal := strings.Cut(part, ":")
		switch {
		case hasVal && (k == "ext" || k == "name"):
			if v == "" {
				return nil, fmt.Errorf("%q has an empty value", part)
			}
			if k == "name" {
				if _, err := path.Match(strings.ToLower(v), ""); err != nil {
					return nil, fmt.Errorf("%q is not a valid pattern", part)
				}
			}
			out = append(out, term{k, strings.ToLower(v)})
		case hasVal && k == "risk":
			out = append(out, term{k, v})
		case !hasVal && knownFlags[k]:
			out = append(out, term{k, ""})
		default:
			return nil, fmt.Errorf("unknown condition %q (known: %s, ext:.x, name:GLOB, risk:LEVEL)", part, flagList())
		}
	}
	return out, nil
}

func flagList() string {
	var l []string
	for k := range knownFlags {
		l = append(l, k)
	}
	sort.Strings(l)
	return strings.Join(l, ", ")
}

// Ext returns the lowercased extension of name ("" for a dotfile without one).
func Ext(name string) string {
	if strings.HasPrefix(name, ".") && strings.Count(name, ".") == 1 {
		return ""
	}
	return strings.ToLower(path.Ext(name))
}

func (t term) match(f Facts, now time.Time, recent time.Duration) bool {
	switch t.key {
	case "escape":
		return f.Escape
	case "symlink":
		return f.Kind == Symlink
	case "bad_name":
		return f.BadName
	case "special":
		return f.Kind == Special
	case "dest_occupied":
		return f.DestOccupied
	case "protected_path":
		return f.Protected
	case "not_permitted":
		return f.Kind != File && f.Kind != Dir
	case "dir":
		return f.Kind == Dir
	case "file":
		return f.Kind == File
	case "dotfile":
		return strings.HasPrefix(f.Name, ".")
	case "recent":
		return recent > 0 && !f.ModTime.IsZero() && now.Sub(f.ModTime) < recent && now.Sub(f.ModTime) > -time.Hour
	case "no_category":
		return f.Category == ""
	case "ext":
		return Ext(f.Name) == t.val
	case "name":
		ok, _ := path.Match(t.val, strings.ToLower(f.Name))
		return ok
	case "risk":
		return f.Risk == t.val
	}
	return false
}

func (r *Rule) matches(f Facts, now time.Time, recent time.Duration) bool {
	for _, c := range r.conds {
		all := true
		for _, t := range c {
			if !t.match(f, now, recent) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// Skip is why one object is not moved.
type Skip struct {
	Code   result.Code `json:"code"`
	Reason string      `json:"reason"`
	Rule   string      `json:"rule"`
	Layer  Layer       `json:"layer"`
}

// Rules is the compiled rule set and categories.
type Rules struct {
	all        []Rule
	protection []Rule
	cats       map[string]string // ext -> folder
	folders    map[string][]string
	recent     time.Duration
	now        func() time.Time
}

type defaultsFile struct {
	Skip       []Rule              `toml:"skip"`
	Categories map[string][]string `toml:"categories"`
}

func loadDefaults() (defaultsFile, error) {
	var d defaultsFile
	dec := toml.NewDecoder(bytes.NewReader(defaultsTOML))
	dec.DisallowUnknownFields()
	err := dec.Decode(&d)
	return d, err
}

// New compiles the built-in rules and categories with the policy's
// [organizer] section on top. Errors are config.Fatal: the server must not
// start.
func New(o config.Organizer) (*Rules, error) {
	d, err := loadDefaults()
	if err != nil {
		return nil, config.Fatalf("organize: the built-in rules are broken: %v", err)
	}
	rules, err := mergeRules(d.Skip, o.Skip)
	if err != nil {
		return nil, err
	}
	if err := compile(rules); err != nil {
		return nil, err
	}
	folders, cats, err := categories(d.Categories, o.Categories)
	if err != nil {
		return nil, err
	}
	rs := &Rules{all: rules, cats: cats, folders: folders, recent: recentOf(o.RecentSeconds), now: time.Now}
	for _, r := range rules {
		if r.Layer == Protection {
			rs.protection = append(rs.protection, r)
		}
	}
	return rs, nil
}

// mergeRules lays the policy's skip rules over the built-in ones: a policy
// rule may replace a built-in restraint rule of the same name, never a
// protection rule, and must name its layer and reason.
func mergeRules(builtin []Rule, policy []config.SkipRule) ([]Rule, error) {
	rules := make([]Rule, 0, len(builtin)+len(policy))
	index := map[string]int{}
	for _, r := range builtin {
		r.Source = "builtin"
		index[r.Name] = len(rules)
		rules = append(rules, r)
	}
	for n, pr := range policy {
		r := Rule{Name: pr.Name, Layer: Layer(pr.Layer), When: pr.When, Reason: pr.Reason, Source: "policy"}
		where := fmt.Sprintf("organizer.skip[%d]", n)
		if r.Name == "" {
			return nil, config.KeyFatalf(where, "%s: name is required", where)
		}
		if pr.Layer == "" {
			return nil, config.KeyFatalf(where, "%s (%s): layer is required: \"protection\" (every tool, no override) or \"restraint\" (planner only)", where, r.Name)
		}
		if r.Layer != Protection && r.Layer != Restraint {
			return nil, config.KeyFatalf(where+".layer", "%s (%s): layer must be \"protection\" or \"restraint\", not %q", where, r.Name, pr.Layer)
		}
		if r.Reason == "" {
			return nil, config.KeyFatalf(where, "%s (%s): reason is required", where, r.Name)
		}
		i, ok := index[r.Name]
		if !ok {
			index[r.Name] = len(rules)
			rules = append(rules, r)
			continue
		}
		if rules[i].Source == "builtin" && rules[i].Layer == Protection {
			return nil, config.KeyFatalf(where+".name", "%s: %q is a built-in protection rule and cannot be replaced", where, r.Name)
		}
		if rules[i].Source == "policy" {
			return nil, config.KeyFatalf(where+".name", "%s: rule %q is declared twice", where, r.Name)
		}
		rules[i] = r
	}
	return rules, nil
}

// compile checks each rule's layer and parses its conditions.
func compile(rules []Rule) error {
	for i := range rules {
		r := &rules[i]
		if r.Layer != Protection && r.Layer != Restraint {
			return config.Fatalf("organizer.skip %q: layer must be \"protection\" or \"restraint\", not %q", r.Name, r.Layer)
		}
		for _, c := range r.When {
			ts, err := parseCond(c)
			if err != nil {
				return config.Fatalf("organizer.skip %q: %v", r.Name, err)
			}
			r.conds = append(r.conds, ts)
		}
	}
	return nil
}

// categories lays the policy's categories over the built-in ones (an empty
// list removes a folder) and returns folder → extensions and extension →
// folder. Each extension belongs to one folder.
func categories(builtin, policy map[string][]string) (map[string][]string, map[string]string, error) {
	folders := map[string][]string{}
	for k, v := range builtin {
		folders[k] = v
	}
	for k, v := range policy {
		if len(v) == 0 {
			delete(folders, k)
			continue
		}
		folders[k] = v
	}
	cats := map[string]string{}
	for folder, exts := range folders {
		if err := checkFolder(folder); err != nil {
			return nil, nil, config.Fatalf("organizer.categories: %v", err)
		}
		for _, e := range exts {
			e = strings.ToLower(e)
			if !strings.HasPrefix(e, ".") || len(e) < 2 || strings.ContainsAny(e, "/\\") {
				return nil, nil, config.KeyFatalf("organizer.categories."+folder, "organizer.categories.%s: %q is not an extension like \".pdf\"", folder, e)
			}
			if other, ok := cats[e]; ok && other != folder {
				return nil, nil, config.Fatalf("organizer.categories: %q is in both %s and %s", e, other, folder)
			}
			cats[e] = folder
		}
	}
	return folders, cats, nil
}

// recentOf is the recent_seconds window: DefaultRecent when unset, none
// when negative.
func recentOf(seconds int) time.Duration {
	switch {
	case seconds > 0:
		return time.Duration(seconds) * time.Second
	case seconds < 0:
		return 0
	}
	return DefaultRecent
}

func checkFolder(f string) error {
	if f == "" || f == "." || f == ".." || strings.ContainsAny(f, "/\\") || strings.HasPrefix(f, ".") {
		return fmt.Errorf("%q is not a plain folder name", f)
	}
	for _, c := range f {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%q contains a control character", f)
		}
	}
	return nil
}

// Category returns the folder for name's extension, or "".
func (r *Rules) Category(name string) string { return r.cats[Ext(name)] }

// IsCategoryFolder reports whether name is one of the category folders.
func (r *Rules) IsCategoryFolder(name string) bool { _, ok := r.folders[name]; return ok }

// Folders returns the categories: folder → extensions.
func (r *Rules) Folders() map[string][]string { return r.folders }

// All returns every rule, protection first as declared.
func (r *Rules) All() []Rule { return append([]Rule(nil), r.all...) }

// Protect evaluates the protection layer only (every tool): nil means the
// object may be moved when a person names it.
func (r *Rules) Protect(f Facts) *Skip {
	return r.first(r.protection, f)
}

// Plan evaluates every rule, protection first (the planner): nil means the
// planner may move the object into its category.
func (r *Rules) Plan(f Facts) *Skip {
	if s := r.first(r.protection, f); s != nil {
		return s
	}
	var restraint []Rule
	for _, x := range r.all {
		if x.Layer == Restraint {
			restraint = append(restraint, x)
		}
	}
	return r.first(restraint, f)
}

func (r *Rules) first(rules []Rule, f Facts) *Skip {
	now := r.now()
	for i := range rules {
		x := &rules[i]
		if !x.matches(f, now, r.recent) {
			continue
		}
		s := &Skip{Rule: x.Name, Layer: x.Layer, Reason: x.Reason}
		switch {
		case x.Layer == Restraint:
			s.Code = result.NeedsExplicitRequest
			s.Reason += "; to move it anyway, name it with move_file"
		case f.Escape:
			s.Code = result.PathEscape
		default:
			s.Code = result.PolicyDenied
		}
		if x.Name == "high-risk" && f.RiskReason != "" {
			s.Reason = "the risk radar marks it HIGH_RISK: " + f.RiskReason + "; to move it anyway, name it with move_file"
		}
		return s
	}
	return nil
}

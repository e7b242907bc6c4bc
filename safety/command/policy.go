package command

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/pelletier/go-toml/v2"
)

// Rule refuses a command when its arguments match any DenyArgs entry, and
// asks a person first when they match an AskArgs entry (deny wins: every
// rule's DenyArgs are tried before any rule's AskArgs). A rule has
// DenyArgs, AskArgs or both.
//
// An entry of either list is a space-separated set of tokens that must all be present, in
// any order:
//   - a token starting with '-' names an option however it is spelled:
//     attached or separate value, --opt=val, a unique-prefix abbreviation,
//     inside a bundle of short flags, or its short/long twin where the
//     command's tables know one (sort -o is --output);
//   - a token ending in '*' is a prefix match on any word or option value
//     (ext::* matches "ext::sh -c id"; +* matches push's "+main");
//   - a token "path:NAME" matches any word or option value with a path
//     component NAME (case-insensitive, so path:.git matches a/.GIT/config);
//   - any other token is a positional word; for git, the first such token
//     names the subcommand the entry applies to ("push --force").
type Rule struct {
	Command     string   `toml:"command"`
	DenyArgs    []string `toml:"deny_args"`
	AskArgs     []string `toml:"ask_args,omitempty"`
	LongOptions []string `toml:"long_options,omitempty"`
	Reason      string   `toml:"reason"`
}

// Policy is the [terminal] allowlist, ask list, denylist and argument
// rules. The zero Policy allows nothing.
//
// Precedence: deny wins over ask, and ask wins over allow. A program on
// the denylist, or never allowed (a shell, wrapper or interpreter unless
// Sandboxed), is refused and never asked about. A program on Ask need not
// be repeated in Allow: ask means "allowed once a person approves", so
// every run of it is an ask decision. A program on Allow is an ask
// decision when a rule's AskArgs match, and allowed otherwise.
//
// Names in Allow, Ask, Deny and a Rule's Command are written as people type
// them (python3, gawk, nodejs) and compared after Name, the normalisation
// applied to argv[0]: python3 on the allowlist admits python3.11 and
// python, and python3 on the denylist denies them all.
type Policy struct {
	Allow []string
	// Ask lists the programs every run of which needs a person's approval
	// ([terminal.ask] commands).
	Ask   []string
	Deny  []string
	Rules []Rule
	// Sandboxed is set when the operator's profile is "sandbox": the
	// kernel boundary (namespaces, Landlock, seccomp, limits), not this
	// policy, is then the guarantee, so shells, wrappers and interpreters
	// may be allowlisted. Deny lists and argument rules still apply, and a
	// shell that is not allowlisted is still refused as not allowlisted.
	// When false, no policy can allow them.
	Sandboxed bool
}

// Decision is the outcome of evaluating one argv. It is one of:
//   - allow: Allowed, Code OK;
//   - refuse: !Allowed, Code POLICY_DENIED or INVALID_REQUEST, !Ask;
//   - ask: !Allowed, Code NEEDS_EXPLICIT_REQUEST, Ask, and Rule names the
//     list ("terminal.ask") or the rule and entry that asks. The command
//     may run only once a person approves it; until then it is a refusal
//     like any other (Allowed is false and Err is not nil), so a caller
//     that checks Allowed or Err cannot run it by accident.
type Decision struct {
	Allowed bool
	// Ask reports that a person's approval would allow the command; it is
	// never set together with Allowed.
	Ask    bool
	Code   result.Code // OK, POLICY_DENIED, INVALID_REQUEST or NEEDS_EXPLICIT_REQUEST
	Reason string      // for the model: why, and what to do instead
	Rule   string      // which list or rule decided (for an ask decision: asks)
	Name   string      // normalised program name
	// Argv is the argv that would run: exactly the parsed words, argv[0]
	// as typed (a bare name, never a path). It is never rewritten, so what
	// runs is what was judged.
	Argv []string
}

// Err returns the refusal as a *result.Error, or nil when d allows. An ask
// decision's error has code NEEDS_EXPLICIT_REQUEST: it does not run until
// a person approves it.
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return result.New(d.Code, d.Reason)
}

// sandboxProfileHint is how an operator allows a never-table program.
const sandboxProfileHint = `set [terminal] profile = "sandbox" to allow it (the kernel boundary is then the guarantee)`

// sandboxGuarantee ends the reason of an allow in the sandbox profile.
const sandboxGuarantee = `under profile "sandbox" the kernel boundary (namespaces, Landlock, seccomp, resource limits) ` +
	"is the guarantee, not the argument rules"

// compiled is one parsed deny_args or ask_args entry.
type compiled struct {
	sub     string // git subcommand the entry is about, "" for any
	options []entryOpt
	plain   []string
	prefix  []string
	paths   []string
}

type entryOpt struct {
	name       string
	globalOnly bool // a git global option: only before the subcommand
}

func compileEntry(spec *cmdSpec, entry string) (compiled, error) {
	var c compiled
	toks := strings.Fields(entry)
	if len(toks) == 0 {
		return c, errors.New("an empty entry")
	}
	scope := &spec.opts
	for _, t := range toks {
		if spec.subs != nil && c.sub == "" && t[0] != '-' && !strings.HasSuffix(t, "*") && !strings.HasPrefix(t, "path:") {
			if _, ok := spec.subs[t]; ok {
				c.sub, scope = t, spec.subs[t]
				continue
			}
		}
	}
	for _, t := range toks {
		switch {
		case t == c.sub:
		case strings.HasPrefix(t, "path:"):
			if len(t) == len("path:") {
				return c, fmt.Errorf("token %q names no path component", t)
			}
			c.paths = append(c.paths, strings.ToLower(t[len("path:"):]))
		case strings.HasSuffix(t, "*"):
			if strings.Count(t, "*") != 1 || len(t) == 1 {
				return c, fmt.Errorf("token %q: '*' is allowed only once, at the end, after a prefix", t)
			}
			c.prefix = append(c.prefix, strings.ToLower(t[:len(t)-1]))
		case t[0] == '-' && len(t) > 1:
			name := t
			globalOnly := false
			if spec.singleDash {
				c.options = append(c.options, entryOpt{name: name})
				continue
			}
			if strings.HasPrefix(t, "--") {
				if full, _, exact, found := scope.resolveLong(t[2:]); found && exact {
					name = "--" + full
				}
			}
			if c.sub == "" && spec.subs != nil && spec.opts.knows(name) {
				globalOnly = true
			}
			c.options = append(c.options, entryOpt{name: scope.canonical(name), globalOnly: globalOnly})
		default:
			if strings.ContainsRune(t, '*') {
				return c, fmt.Errorf("token %q: '*' is allowed only at the end", t)
			}
			c.plain = append(c.plain, t)
		}
	}
	return c, nil
}

// matches reports whether every token of c is present in a.
func (c *compiled) matches(a *analysis) bool {
	if c.sub != "" && a.sub != c.sub {
		return false
	}
	if a.query && len(c.options)+len(c.plain)+len(c.prefix)+len(c.paths) == 0 {
		return false // a bare "config" entry: a read-only query reads, it runs nothing
	}
	for _, o := range c.options {
		if !slices.ContainsFunc(a.facts, func(f fact) bool {
			if !f.opt || (o.globalOnly && f.scope != "") {
				return false
			}
			return f.name == o.name || (f.typed != "" && len(f.typed) > 2 && strings.HasPrefix(o.name, f.typed))
		}) {
			return false
		}
	}
	for _, p := range c.plain {
		if !slices.ContainsFunc(a.facts, func(f fact) bool { return !f.opt && f.name == p }) {
			return false
		}
	}
	for _, p := range c.prefix {
		if !slices.ContainsFunc(a.values, func(v string) bool { return strings.HasPrefix(strings.ToLower(v), p) }) {
			return false
		}
	}
	for _, p := range c.paths {
		if !slices.ContainsFunc(a.values, func(v string) bool { return hasComponent(v, p) }) {
			return false
		}
	}
	return true
}

// hasComponent reports whether path v has a component equal to name,
// ignoring case and the trailing dots and spaces Windows ignores.
func hasComponent(v, name string) bool {
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == '/' || r == '\\' || r == '=' }) {
		if strings.ToLower(strings.TrimRight(part, ". ")) == name || strings.ToLower(part) == name {
			return true
		}
	}
	return false
}

func deny(d Decision, code result.Code, rule, reason string) Decision {
	d.Allowed, d.Code, d.Rule, d.Reason = false, code, rule, reason
	return d
}

// contains reports whether list names the program name (normalised), each
// entry being normalised by Name as well.
func contains(list []string, name string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return Name(s) == name })
}

// ask makes d an ask decision: it runs only after a person approves.
func ask(d Decision, rule, why string) Decision {
	d.Allowed, d.Ask, d.Code, d.Rule = false, true, result.NeedsExplicitRequest, rule
	d.Reason = "a person must approve this command before it runs: " + why
	return d
}

// Evaluate decides whether argv may run. Deny wins: a program is refused
// if it is a path, a shell, wrapper or interpreter (unless Sandboxed), on
// the denylist, neither allowlisted nor on the ask list, or if an argument
// rule's deny_args (built-in or the policy's) match. Ask comes next: a
// program on the ask list, or arguments matching a rule's ask_args, make
// an ask decision (see Decision). Anything else allowlisted is allowed.
func (p *Policy) Evaluate(argv []string) Decision {
	d := Decision{Code: result.PolicyDenied, Argv: slices.Clone(argv)}
	if len(argv) == 0 || argv[0] == "" {
		return deny(d, result.InvalidRequest, "parse", "the command is empty; send a program name and its arguments")
	}
	argv0 := argv[0]
	d.Name = Name(argv0)
	switch {
	case len(argv) > MaxArgs:
		return deny(d, result.InvalidRequest, "parse", fmt.Sprintf("the command has %d words; the limit is %d", len(argv), MaxArgs))
	case strings.ContainsAny(argv0, `/\`):
		return deny(d, result.PolicyDenied, "program-path", errPathProgram.Reason)
	case strings.ContainsRune(argv0, '=') && argv0[0] != '=':
		return deny(d, result.PolicyDenied, "env-assignment", "NAME=value before a command sets an environment "+
			"variable in a shell; "+noShell+" and the environment is fixed: drop the assignment")
	}
	why, isNever := never[d.Name]
	if isNever && !p.Sandboxed {
		return deny(d, result.PolicyDenied, "builtin.never", quote(d.Name)+" is never allowed: "+why+
			". Run the program you want directly, by name, if the policy allows it")
	}
	if contains(p.Deny, d.Name) {
		return deny(d, result.PolicyDenied, "terminal.denylist", quote(d.Name)+" is on the policy's denylist; "+
			"it cannot be run through this server. Do the task with an allowed command, or ask the user")
	}
	asked := contains(p.Ask, d.Name)
	if !asked && !contains(p.Allow, d.Name) {
		return deny(d, result.PolicyDenied, "terminal.allowlist", p.notAllowlisted(d.Name))
	}
	spec := specs[d.Name]
	a := analyze(spec, argv[1:])
	if spec == nil {
		spec = &cmdSpec{}
	}
	if refused, ok := p.denyByRules(d, spec, &a); ok {
		return refused
	}
	if asked {
		return ask(d, "terminal.ask", quote(d.Name)+" is on the policy's ask list, so every run of it is approved by a person")
	}
	for i, r := range p.Rules {
		if Name(r.Command) != d.Name {
			continue
		}
		if entry, ok := matchEntries(spec, r, r.AskArgs, &a); ok {
			return ask(d, fmt.Sprintf("terminal.rules[%d] %s ask_args %q", i, r.Command, entry), r.Reason)
		}
	}
	d.Allowed, d.Code, d.Rule, d.Reason = true, result.OK, "terminal.allowlist", quote(d.Name)+" is allowlisted and no argument rule matched"
	if p.Sandboxed {
		if isNever {
			d.Reason += " (" + why + ")"
		}
		d.Reason += ". " + strings.ToUpper(sandboxGuarantee[:1]) + sandboxGuarantee[1:]
	}
	return d
}

// notAllowlisted is the reason a program on neither the allowlist nor the
// ask list is refused.
func (p *Policy) notAllowlisted(name string) string {
	allowed := slices.Clone(p.Allow)
	slices.Sort(allowed)
	reason := quote(name) + " is not on the policy's allowlist (anything not allowlisted is denied). " +
		"Allowed commands: " + strings.Join(allowed, ", ")
	if len(p.Ask) > 0 {
		asked := slices.Clone(p.Ask)
		slices.Sort(asked)
		reason += "; allowed once a person approves: " + strings.Join(asked, ", ")
	}
	return reason
}

// denyByRules returns the refusal of an allowlisted (or asked-about)
// command by git's subcommand check, a built-in rule or a policy rule's
// deny_args, and whether there is one.
func (p *Policy) denyByRules(d Decision, spec *cmdSpec, a *analysis) (Decision, bool) {
	if spec.strictSubs && a.sub != "" && !a.known {
		return deny(d, result.PolicyDenied, "builtin.git-subcommand", quote(d.Name+" "+a.sub)+
			" is not a subcommand this policy knows; an unknown git subcommand runs an alias from the "+
			"repository's configuration or a git-<name> program. Use one of git's own commands"), true
	}
	for i, r := range builtinRules {
		if Name(r.Command) != d.Name {
			continue
		}
		if entry, ok := matchEntries(spec, r, r.DenyArgs, a); ok {
			return deny(d, result.PolicyDenied, fmt.Sprintf("builtin[%d] %s %q", i, r.Command, entry), r.Reason), true
		}
	}
	for i, r := range p.Rules {
		if Name(r.Command) != d.Name {
			continue
		}
		if entry, ok := matchEntries(spec, r, r.DenyArgs, a); ok {
			return deny(d, result.PolicyDenied, fmt.Sprintf("terminal.rules[%d] %s %q", i, r.Command, entry), r.Reason), true
		}
	}
	return Decision{}, false
}

// matchEntries returns the first of entries (r's DenyArgs or AskArgs)
// that matches a. An entry that does not compile matches (fail closed: a
// broken deny entry refuses, a broken ask entry asks); Validate reports it.
func matchEntries(spec *cmdSpec, r Rule, entries []string, a *analysis) (string, bool) {
	for _, e := range entries {
		c, err := compileCached(spec, r, e)
		if err != nil || c.matches(a) {
			return e, true
		}
	}
	return "", false
}

// compiledEntries caches compileEntry: an entry's meaning depends only on
// the static tables, the command and the rule's long_options.
var compiledEntries sync.Map // entryKey → *compileResult

type entryKey struct{ command, entry, long string }

type compileResult struct {
	c   compiled
	err error
}

func compileCached(spec *cmdSpec, r Rule, e string) (*compiled, error) {
	key := entryKey{r.Command, e, ""}
	if len(r.LongOptions) > 0 {
		key.long = strings.Join(r.LongOptions, " ")
	}
	if v, ok := compiledEntries.Load(key); ok {
		res := v.(*compileResult)
		return &res.c, res.err
	}
	c, err := compileEntry(ruleSpec(spec, r), e)
	res := &compileResult{c, err}
	compiledEntries.Store(key, res)
	return &res.c, res.err
}

// ruleSpec adds a rule's long_options to the command's table, so an
// operator can teach abbreviation expansion for a command we ship no
// tables for.
func ruleSpec(spec *cmdSpec, r Rule) *cmdSpec {
	if len(r.LongOptions) == 0 {
		return spec
	}
	s := *spec
	s.opts.long = merge(spec.opts.long)
	for _, o := range r.LongOptions {
		o = strings.TrimPrefix(o, "--")
		if _, ok := s.opts.long[o]; !ok {
			s.opts.long[o] = noArg
		}
	}
	return &s
}

// Check parses line and evaluates it. The error is nil exactly when the
// decision allows; otherwise it is the *result.Error of the refusal.
func (p *Policy) Check(line string) (Decision, error) {
	argv, err := Parse(line)
	if err != nil {
		code, reason := result.Classify(err)
		return Decision{Code: code, Reason: reason, Rule: "parse"}, err
	}
	d := p.Evaluate(argv)
	return d, d.Err()
}

// Validate reports what is wrong with the policy, every problem joined in
// one error: names that are empty, paths, or not a program name at all;
// shells, wrappers and interpreters on the allowlist or the ask list unless
// Sandboxed (a program that is never allowed cannot be approved either);
// a name both on the ask list and the denylist (deny wins, so it would
// never be asked about); rules without a reason, with neither deny_args
// nor ask_args, with an entry that does not compile, or for a command
// that is neither allowlisted nor on the ask list (such a rule could never
// apply). Names are accepted as people type them (python3, GAWK, nodejs)
// and compared after Name.
func (p *Policy) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, result.New(result.InvalidRequest, "terminal policy: "+fmt.Sprintf(format, a...)))
	}
	for _, n := range p.Allow {
		checkName(bad, "terminal.allowlist", n)
		if why, ok := never[Name(n)]; ok && !p.Sandboxed {
			bad("terminal.allowlist must not contain %q: %s; %s", n, why, sandboxProfileHint)
		}
	}
	for _, n := range p.Ask {
		checkName(bad, "terminal.ask", n)
		if why, ok := never[Name(n)]; ok && !p.Sandboxed {
			bad("terminal.ask must not contain %q: %s, and a program that is never allowed cannot be approved either; %s",
				n, why, sandboxProfileHint)
		}
		if contains(p.Deny, Name(n)) {
			bad("terminal.ask entry %q is also on terminal.denylist; deny wins over ask, so it would never be asked "+
				"about: remove it from one of the lists", n)
		}
	}
	for _, n := range p.Deny {
		checkName(bad, "terminal.denylist", n)
	}
	for i, r := range p.Rules {
		p.validateRule(bad, i, r)
	}
	return errors.Join(errs...)
}

// checkName reports a list entry n that is not a bare program name.
func checkName(bad func(string, ...any), list, n string) {
	switch {
	case strings.TrimSpace(n) == "":
		bad("%s has an empty command name", list)
	case strings.ContainsAny(n, `/\`):
		bad("%s entry %q must be a bare program name, not a path", list, n)
	case strings.ContainsFunc(n, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '=' }):
		bad("%s entry %q is not a program name (it contains a space, a control character or '=')", list, n)
	case Name(n) == "":
		bad("%s entry %q names no program", list, n)
	}
}

// validateRule reports what is wrong with p.Rules[i].
func (p *Policy) validateRule(bad func(string, ...any), i int, r Rule) {
	where := fmt.Sprintf("terminal.rules[%d] (%s)", i, r.Command)
	checkName(bad, where+" command", r.Command)
	if strings.TrimSpace(r.Reason) == "" {
		bad("%s has no reason; every rule must say why, for the model that is refused or the person who is asked", where)
	}
	if len(r.DenyArgs) == 0 && len(r.AskArgs) == 0 {
		bad("%s has neither deny_args nor ask_args", where)
	}
	if r.Command != "" && !contains(p.Allow, Name(r.Command)) && !contains(p.Ask, Name(r.Command)) {
		bad("%s is for a command that is neither allowlisted nor on the ask list, so it could never apply", where)
	}
	spec := specs[Name(r.Command)]
	if spec == nil {
		spec = &cmdSpec{}
	}
	for _, l := range []struct {
		key     string
		entries []string
	}{{"deny_args", r.DenyArgs}, {"ask_args", r.AskArgs}} {
		for _, e := range l.entries {
			if _, err := compileEntry(ruleSpec(spec, r), e); err != nil {
				bad("%s %s %q: %v", where, l.key, e, err)
			}
		}
	}
}

// section is the TOML shape LoadSection reads.
type section struct {
	Terminal struct {
		Allowlist struct {
			Commands []string `toml:"commands"`
		} `toml:"allowlist"`
		Ask struct {
			Commands []string `toml:"commands"`
		} `toml:"ask"`
		Denylist struct {
			Commands []string `toml:"commands"`
		} `toml:"denylist"`
		Rules []Rule `toml:"rules"`
	} `toml:"terminal"`
}

// LoadSection decodes the [terminal.allowlist], [terminal.ask],
// [terminal.denylist] and [[terminal.rules]] tables strictly (an unknown key is an error) and
// validates the result.
func LoadSection(b []byte) (Policy, error) {
	var s section
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Policy{}, result.Wrap(result.InvalidRequest, "terminal policy: the TOML could not be read: "+err.Error(), err)
	}
	p := Policy{Allow: s.Terminal.Allowlist.Commands, Ask: s.Terminal.Ask.Commands, Deny: s.Terminal.Denylist.Commands, Rules: s.Terminal.Rules}
	return p, p.Validate()
}

package command

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

const sectionPath = "../../policies/terminal-section.toml"

func shipped(t testing.TB) *Policy {
	t.Helper()
	b, err := os.ReadFile(sectionPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadSection(b)
	if err != nil {
		t.Fatalf("shipped section does not load: %v", err)
	}
	return &p
}

type corpusLine struct {
	code result.Code
	line string
	no   int
}

func readCorpus(t testing.TB) []corpusLine {
	t.Helper()
	f, err := os.Open("testdata/corpus.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		code, line, ok := strings.Cut(text, "\t")
		if !ok || !result.Code(code).Valid() {
			t.Fatalf("corpus line %d is malformed: %q", n, text)
		}
		out = append(out, corpusLine{result.Code(code), line, n})
	}
	return out
}

// TestCorpus runs every line of testdata/corpus.tsv under the shipped
// policy section and checks the code, and that refusals come with a reason.
// Each line is a subtest named by its line number: -run TestCorpus/line42.
func TestCorpus(t *testing.T) {
	p := shipped(t)
	lines := readCorpus(t)
	refused, ran := 0, 0
	for _, c := range lines {
		if c.code == result.OK {
			ran++
		} else {
			refused++
		}
		t.Run(fmt.Sprintf("line%d", c.no), func(t *testing.T) {
			d, err := p.Check(c.line)
			if d.Code != c.code {
				t.Fatalf("corpus:%d %q: got %s (%s: %s), want %s", c.no, c.line, d.Code, d.Rule, d.Reason, c.code)
			}
			if d.Ask != (c.code == result.NeedsExplicitRequest) {
				t.Errorf("corpus:%d %q: Ask is %v for %s; NEEDS_EXPLICIT_REQUEST lines are exactly the ask decisions", c.no, c.line, d.Ask, c.code)
			}
			if c.code == result.OK {
				if err != nil || !d.Allowed {
					t.Errorf("corpus:%d %q: OK without Allowed (err %v)", c.no, c.line, err)
				}
				return
			}
			var re *result.Error
			if !errors.As(err, &re) || re.Code != c.code || d.Reason == "" || d.Rule == "" {
				t.Errorf("corpus:%d %q: refusal without *result.Error, reason or rule: %v", c.no, c.line, err)
			}
		})
	}
	if refused < 150 || ran < 50 {
		t.Errorf("corpus has %d refused and %d allowed lines; want at least 150 and 50", refused, ran)
	}
	t.Logf("corpus: %d refused, %d allowed", refused, ran)
}

// caseName is a subtest name for the input s: s itself, shortened, with
// '/' (which -run reads as a subtest separator) shown as '∕'.
func caseName(s string) string {
	if s == "" {
		return "empty"
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strings.ReplaceAll(s, "/", "∕")
}

func mustDeny(t *testing.T, p *Policy, lines ...string) {
	t.Helper()
	for _, l := range lines {
		d, err := p.Check(l)
		if d.Allowed || err == nil {
			t.Errorf("%q was allowed; it must be refused", l)
		} else if d.Reason == "" {
			t.Errorf("%q refused without a reason", l)
		}
	}
}

// mustAsk checks that each line is an ask decision: not Allowed, code
// NEEDS_EXPLICIT_REQUEST, an error with that code, and the asking rule.
func mustAsk(t *testing.T, p *Policy, lines ...string) {
	t.Helper()
	for _, l := range lines {
		d, err := p.Check(l)
		var re *result.Error
		if d.Allowed || !d.Ask || d.Code != result.NeedsExplicitRequest || !errors.As(err, &re) ||
			re.Code != result.NeedsExplicitRequest || d.Rule == "" || d.Reason == "" {
			t.Errorf("%q: Allowed=%v Ask=%v %s (%s: %s), err %v; want an ask decision", l, d.Allowed, d.Ask, d.Code, d.Rule, d.Reason, err)
		}
	}
}

func mustParse(t *testing.T, line string) []string {
	t.Helper()
	argv, err := Parse(line)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return argv
}

func mustAllow(t *testing.T, p *Policy, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if d, err := p.Check(l); !d.Allowed || err != nil {
			t.Errorf("%q was refused (%s: %s); it must run", l, d.Rule, d.Reason)
		}
	}
}

func TestGitAliasBangIsDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, `git -c alias.x=!sh x`, `git -c 'alias.pwn=!sh -c "touch marker"' pwn`,
		`git -calias.x=!sh x`, `git -C . -c alias.x=!id x`)
}

func TestGitConfigInjectionIsDenied(t *testing.T) {
	mustDeny(t, shipped(t), `git -c core.fsmonitor=id status`, `git -c core.pager=id log`,
		`git --config-env=core.pager=X log`, `git config core.fsmonitor id`, `git clone -c core.hooksPath=h https://x/r`)
}

func TestAbbreviatedUploadPackIsDenied(t *testing.T) {
	mustDeny(t, shipped(t), `git fetch --upl=id origin`, `git fetch --upload id origin`,
		`git pull --upload-p=id`, `git clone --u=id https://x/r`, `git push --rec=id origin`,
		`git ls-remote --ex=id origin`)
}

func TestGitExecPathIsDenied(t *testing.T) {
	mustDeny(t, shipped(t), `git --exec-path=. status`, `git --exec-path`)
}

func TestGitExtTransportIsDenied(t *testing.T) {
	mustDeny(t, shipped(t), `git clone 'ext::sh -c touch% x' d`, `git fetch ext::id`, `git ls-remote Ext::id`)
}

func TestGitGrepOpenFilesInPagerIsDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, `git grep -O foo`, `git grep -Oid foo`, `git grep -inOid foo`, `git grep --open-files=id foo`)
	mustAllow(t, p, `git grep -c foo`, `git grep -n -i foo`)
}

func TestGitOutputAndExtDiffAreDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, `git log --output=x`, `git diff --output x`, `git show --out=x`, `git diff --ext-diff`, `git log --ext`)
	mustAllow(t, p, `git log --oneline`, `git diff --no-ext-diff`, `git log -- --output`)
}

// forcePushSpellings are the ways to write a force-push; ask_test.go
// reuses them for ask_args.
var forcePushSpellings = []string{`git push -f`, `git push --force`, `git push --forc`, `git push -uf origin main`,
	`git push origin main -f`, `git push --force-with-lease`, `git push --force-with-lease=main`,
	`git push --force-if-includes`, `git push origin +main`, `git push origin +HEAD:refs/heads/main`,
	`git push --mirror`, `git -C . push -f`, `git push -vfu origin main`, `git push -o x -f`}

// plainPushes are pushes that do not force.
var plainPushes = []string{`git push`, `git push origin main`, `git push -u origin topic`, `git push --no-force-with-lease origin x`}

// TestForcePushEverySpellingIsDenied: every spelling of a force-push is
// refused; a push that does not force is not refused but asks a person
// (the shipped ask_args "push").
func TestForcePushEverySpellingIsDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, forcePushSpellings...)
	for _, l := range forcePushSpellings {
		if d := p.Evaluate(mustParse(t, l)); d.Ask || d.Code != result.PolicyDenied {
			t.Errorf("%q: %s (ask %v); a force-push must be refused, not asked about", l, d.Code, d.Ask)
		}
	}
	mustAsk(t, p, plainPushes...)
}

func TestFindExecIsDenied(t *testing.T) {
	p := shipped(t)
	for _, pred := range []string{"-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls", "-delete"} {
		t.Run(pred, func(t *testing.T) {
			mustDeny(t, p, "find . -type f "+pred+" id '{}' '+'", "find "+pred+" x")
		})
	}
	mustAllow(t, p, `find . -name '*.go' -print`, `find . -type d -printf '%p\n'`, `find . -ls`)
}

func TestTarCheckpointActionIsDenied(t *testing.T) {
	mustDeny(t, shipped(t), `tar -cf x.tar --checkpoint=1 --checkpoint-action=exec=id .`,
		`tar --checkpoint-action exec=id -cf x.tar .`, `tar --checkpoint-a=exec=id -cf x.tar .`)
}

func TestTarCompressProgramIsDenied(t *testing.T) {
	mustDeny(t, shipped(t), `tar -I id -cf x.tar .`, `tar -Iid -cf x.tar .`, `tar -cvIid -f x.tar .`,
		`tar --use-compress-program=id -cf x.tar .`, `tar --use=id -cf x.tar .`,
		`tar -xf x.tar --to-command=id`, `tar --rsh-command=id -cf h:x .`, `tar -F id -cf x.tar .`,
		`tar --new-volume-script=id -cf x.tar .`)
}

func TestTarOldStyleBundleIsDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, `tar cfI x.tar id .`, `tar xfF x.tar id`, `tar cPf x.tar /etc`)
	mustAllow(t, p, `tar cf x.tar src`, `tar xzf x.tgz`, `tar xfC x.tar out`)
}

func TestSortOutputIsDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, `sort -o out in`, `sort -oout in`, `sort -ruo out in`, `sort --output=out in`,
		`sort --out out in`, `sort --compress-program=id in`)
	mustAllow(t, p, `sort -t, -k2 in`, `sort -T tmp in`, `sort -- -o`)
}

func TestCopyIntoDotGitIsDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, `cp x .git/config`, `cp x ./.git/hooks/pre-commit`, `cp -t .git x`, `cp -t.git x`,
		`cp --target-directory=sub/.git x`, `mv fake .git`, `mv x .Git.`, `touch .git/index.lock`,
		`mkdir .git`, `tar -xf x.tar -C .git`, `cp -rT tpl sub/.git`)
	mustAllow(t, p, `cp .gitignore x`, `mkdir .github`, `cp a.git b`)
}

func TestLinksOutOfTheJailAreDenied(t *testing.T) {
	mustDeny(t, shipped(t), `cp -s /etc/passwd p`, `cp -l /etc/passwd p`, `cp -al a b`, `cp --link a b`, `ln -s / root`)
}

func TestQuotedOperatorsAreLiteral(t *testing.T) {
	cases := map[string][]string{
		`echo "a;b"`:                   {"echo", "a;b"},
		`echo 'a|b' "c&&d"`:            {"echo", "a|b", "c&&d"},
		`echo "x > y"`:                 {"echo", "x > y"},
		`echo '$(id)' '` + "`x`" + `'`: {"echo", "$(id)", "`x`"},
		`echo a\;b`:                    {"echo", "a;b"},
		`echo '' x`:                    {"echo", "", "x"},
		`grep -e '-exec' f`:            {"grep", "-e", "-exec", "f"},
		`echo "it's"`:                  {"echo", "it's"},
		`echo 'say "hi"'`:              {"echo", `say "hi"`},
		`echo "a\"b" 'c\d'`:            {"echo", `a"b`, `c\d`},
		"echo\ta\t b":                  {"echo", "a", "b"},
		`git log @{u}`:                 {"git", "log", "@{u}"},
		`echo a#b 5$`:                  {"echo", "a#b", "5$"},
	}
	for line, want := range cases {
		t.Run(caseName(line), func(t *testing.T) {
			got, err := Parse(line)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("Parse(%q) = %q, %v; want %q", line, got, err, want)
			}
		})
	}
}

func TestShellOperatorsAreDenied(t *testing.T) {
	for _, l := range []string{"ls;id", "ls | id", "ls && id", "ls || id", "ls &", "echo > f", "echo >> f",
		"cat < f", "cat << E", "echo $(id)", "echo `id`", "(ls)", "ls )", "ls\nid", "ls\rid", `echo "$(id)"`} {
		t.Run(caseName(l), func(t *testing.T) {
			_, err := Parse(l)
			var re *result.Error
			if !errors.As(err, &re) || re.Code != result.PolicyDenied || !strings.Contains(re.Reason, "without a shell") {
				t.Errorf("Parse(%q) = %v; want POLICY_DENIED saying commands run without a shell", l, err)
			}
		})
	}
}

func TestGlobAndExpansionAreDenied(t *testing.T) {
	for _, l := range []string{"ls *.go", "ls a?", "ls [ab]", "echo $HOME", `echo "$HOME"`, "echo ${X}",
		"echo {a,b}", "echo x{1..3}", "ls ~", "ls # c", "echo $'x'"} {
		t.Run(caseName(l), func(t *testing.T) {
			if _, err := Parse(l); result.CodeOf(err) != result.PolicyDenied {
				t.Errorf("Parse(%q) = %v; want POLICY_DENIED", l, err)
			}
		})
	}
}

func TestMalformedInputIsInvalid(t *testing.T) {
	long := "echo " + strings.Repeat("a", MaxLineBytes)
	many := "echo" + strings.Repeat(" a", MaxArgs)
	for _, c := range []struct{ name, line string }{
		{"empty", ""}, {"spaces", "   "}, {"tab", "\t"}, {"NUL", "echo a\x00b"}, {"escape", "echo \x1b[2J"},
		{"DEL", "echo \x7f"}, {"bidi override", "echo \u202egnp.exe"}, {"zero width space", "echo \u200bx"},
		{"invalid UTF-8", "echo \xff"}, {"too long", long}, {"too many words", many},
		{"open double quote", `echo "open`}, {"open single quote", `echo 'open`}, {"trailing backslash", `echo x\`},
		{"escape in double quotes", `echo "\q"`}, {"backslash letter", `echo \t`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse(c.line); result.CodeOf(err) != result.InvalidRequest {
				t.Errorf("Parse(%.40q) = %v; want INVALID_REQUEST", c.line, err)
			}
		})
	}
	if _, err := Parse("echo" + strings.Repeat(" a", MaxArgs-1)); err != nil {
		t.Errorf("%d words must parse: %v", MaxArgs, err)
	}
}

func TestProgramPathIsDenied(t *testing.T) {
	p := shipped(t)
	for _, l := range []string{"./ls", "/bin/ls", "/tmp/x/ls", "bin/ls", `'.\ls'`, "../ls -la"} {
		t.Run(caseName(l), func(t *testing.T) {
			d, _ := p.Check(l)
			if d.Allowed || d.Code != result.PolicyDenied || d.Rule != "program-path" {
				t.Errorf("%q: %+v; want program-path refusal", l, d)
			}
		})
	}
	if _, err := Resolve("./ls", []string{"/bin"}); result.CodeOf(err) != result.PolicyDenied {
		t.Errorf("Resolve(./ls) = %v; want POLICY_DENIED", err)
	}
}

func TestEnvironmentAssignmentIsDenied(t *testing.T) {
	d, _ := shipped(t).Check("GIT_SSH_COMMAND=id git fetch")
	if d.Allowed || d.Rule != "env-assignment" {
		t.Errorf("got %+v", d)
	}
}

func TestResolveSearchesOnlyGivenAbsoluteDirs(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	name := "bastion-test-prog"
	file := name
	if runtime.GOOS == "windows" {
		file += ".exe"
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "not-exec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(name, []string{"", "relative", other, dir})
	if err != nil || got != filepath.Join(dir, file) {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
	// The working directory and relative PATH entries are never searched.
	t.Chdir(dir)
	if _, err := Resolve(name, []string{".", "relative", other}); result.CodeOf(err) != result.NotFound {
		t.Errorf("found through a relative PATH entry: %v", err)
	}
	if runtime.GOOS != "windows" {
		if _, err := Resolve("not-exec", []string{other}); result.CodeOf(err) != result.NotFound {
			t.Errorf("a non-executable file was resolved: %v", err)
		}
	}
	if _, err := Resolve(name, []string{filepath.Join(dir, name)}); err == nil {
		t.Errorf("a file given as PATH directory resolved")
	}
}

func TestNameNormalisesAliasesAndPaths(t *testing.T) {
	cases := map[string]string{
		"/usr/bin/gawk": "awk", "mawk": "awk", "nawk": "awk", "gfind": "find", "gtar": "tar", "bsdtar": "tar",
		"python3.12": "python", "python3": "python", "python3.13t": "python", "pip3": "pip", "perl5.36": "perl",
		"vim.basic": "vim", "vi": "vim", `C:\Windows\RM.EXE`: "rm", "rm.": "rm", "LS": "ls", "mkfs.ext4": "mkfs",
		"git": "git", "sha256sum": "sha256sum", "lua5.4": "lua", "egrep": "grep", "nodejs": "node", "node18": "node",
	}
	for in, want := range cases {
		t.Run(caseName(in), func(t *testing.T) {
			if got := Name(in); got != want {
				t.Errorf("Name(%q) = %q; want %q", in, got, want)
			}
		})
	}
}

func TestDenyWinsOverAllow(t *testing.T) {
	p := &Policy{Allow: []string{"ls", "cat"}, Deny: []string{"cat"}}
	d := p.Evaluate([]string{"cat", "x"})
	if d.Allowed || d.Rule != "terminal.denylist" {
		t.Errorf("denylisted and allowlisted cat: %+v", d)
	}
	if d := p.Evaluate([]string{"head", "x"}); d.Allowed || d.Rule != "terminal.allowlist" {
		t.Errorf("a command not allowlisted ran: %+v", d)
	}
	if d := (&Policy{}).Evaluate([]string{"ls"}); d.Allowed {
		t.Errorf("the zero policy allowed ls")
	}
}

func TestWrappersAndInterpretersCannotBeAllowlisted(t *testing.T) {
	p := &Policy{Allow: []string{"env", "python", "xargs", "sh", "ls"}}
	for _, argv := range [][]string{{"env", "rm", "x"}, {"python3", "-c", "1"}, {"xargs", "rm"}, {"sh", "-c", "id"}} {
		t.Run(argv[0], func(t *testing.T) {
			if d := p.Evaluate(argv); d.Allowed || d.Rule != "builtin.never" {
				t.Errorf("%q: %+v", argv, d)
			}
		})
	}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "must not contain") {
		t.Errorf("Validate accepted wrappers on the allowlist: %v", err)
	}
}

func TestBuiltinRulesHoldWithoutPolicyRules(t *testing.T) {
	p := &Policy{Allow: []string{"git", "find", "tar", "sort"}}
	mustDeny(t, p, `git -c alias.x=!sh x`, `git fetch --upl=id`, `find . -exec id`,
		`tar -Iid -cf x .`, `sort --compress-program=id x`, `git grep -Oid x`, `git clone ext::id`)
	mustAllow(t, p, `git status`, `find . -name x`, `tar -cf x.tar src`, `sort x`)
}

func TestShippedSectionRepeatsEveryBuiltinRule(t *testing.T) {
	p := shipped(t)
	for _, b := range builtinRules {
		for _, e := range b.DenyArgs {
			found := slices.ContainsFunc(p.Rules, func(r Rule) bool {
				return r.Command == b.Command && slices.Contains(r.DenyArgs, e) && r.Reason == b.Reason
			})
			if !found {
				t.Errorf("builtin rule %s %q (with its reason) is missing from %s", b.Command, e, sectionPath)
			}
		}
	}
}

func TestShippedSectionAllowlistsTheIssueCommands(t *testing.T) {
	p := shipped(t)
	for _, c := range strings.Fields("ls cat echo pwd head tail wc grep sort find tar git touch mkdir cp mv diff stat") {
		if !slices.Contains(p.Allow, c) {
			t.Errorf("%s is not allowlisted", c)
		}
	}
	for _, c := range strings.Fields("rm sudo su doas curl wget chmod chown shutdown reboot dd mkfs mount env xargs timeout nice nohup setsid stdbuf time sh bash zsh dash python perl ruby node php lua awk") {
		if !slices.Contains(p.Deny, c) {
			t.Errorf("%s is not denylisted", c)
		}
	}
}

func TestUnknownGitSubcommandIsDenied(t *testing.T) {
	p := shipped(t)
	mustDeny(t, p, "git pwn", "git lg", "git -C . st", "git psuh --force")
	mustAllow(t, p, "git", "git --version", "git status", "git -C sub log -1")
}

func TestEndOfOptionsMakesWordsPositional(t *testing.T) {
	p := shipped(t)
	mustAllow(t, p, "git log -- --output", "sort -- -o", "git grep -e x -- -O", "ls -- --color")
	mustDeny(t, p, "git push --force -- x", "sort -o x -- y")
}

func TestValueThatLooksLikeAnOptionIsStillExamined(t *testing.T) {
	// If a table wrongly says an option takes a value, the next word would
	// hide; a value starting with '-' is examined as an option as well.
	p := &Policy{Allow: []string{"git"}, Rules: []Rule{{Command: "git", DenyArgs: []string{"commit --no-verify"}, Reason: "hooks"}}}
	mustDeny(t, p, "git commit -m --no-verify")
}

func TestRuleLongOptionsTeachAbbreviations(t *testing.T) {
	p := &Policy{Allow: []string{"wc"}, Rules: []Rule{{Command: "wc", DenyArgs: []string{"--files0-from"},
		LongOptions: []string{"--files0-from", "--lines"}, Reason: "reads a list of names"}}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	mustDeny(t, p, "wc --files0-from=x", "wc --files0=x", "wc --f x")
	mustAllow(t, p, "wc --lines x")
}

func TestValidateRejectsBadPolicies(t *testing.T) {
	bad := []Policy{
		{Allow: []string{""}},
		{Allow: []string{"/bin/ls"}},
		{Allow: []string{"python3"}},
		{Allow: []string{"git"}, Rules: []Rule{{Command: "git", DenyArgs: []string{"-c"}}}},
		{Allow: []string{"git"}, Rules: []Rule{{Command: "git", Reason: "r"}}},
		{Allow: []string{"ls"}, Rules: []Rule{{Command: "git", DenyArgs: []string{"-c"}, Reason: "r"}}},
		{Allow: []string{"git"}, Rules: []Rule{{Command: "git", DenyArgs: []string{"a*b"}, Reason: "r"}}},
		{Allow: []string{"git"}, Rules: []Rule{{Command: "git", DenyArgs: []string{"path:"}, Reason: "r"}}},
		{Allow: []string{"git"}, Rules: []Rule{{Command: "git", DenyArgs: []string{"  "}, Reason: "r"}}},
	}
	for i, p := range bad {
		t.Run(fmt.Sprintf("policy%d", i), func(t *testing.T) {
			err := p.Validate()
			if err == nil {
				t.Errorf("policy %d validated: %+v", i, p)
			} else if result.CodeOf(err) != result.InvalidRequest {
				t.Errorf("policy %d: %v is not INVALID_REQUEST", i, err)
			}
		})
	}
}

func TestLoadSectionRejectsUnknownKeys(t *testing.T) {
	for _, c := range []struct{ name, doc string }{
		{"extra key", "[terminal.allowlist]\ncommands = [\"ls\"]\nextra = 1\n"},
		{"misspelt reason", "[[terminal.rules]]\ncommand = \"ls\"\ndeny_args = [\"-x\"]\nreasn = \"typo\"\n"},
		{"command for commands", "[terminal.allowlist]\ncommand = [\"ls\"]\n"},
		{"not TOML", "not toml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := LoadSection([]byte(c.doc)); err == nil {
				t.Errorf("accepted %q", c.doc)
			}
		})
	}
}

func TestDecisionCarriesNameAndArgv(t *testing.T) {
	d, err := shipped(t).Check(`gtar -cf "my file.tar" src`)
	if err != nil || d.Name != "tar" || d.Argv[0] != "gtar" {
		t.Errorf("gtar is tar and must run as typed: %+v, %v", d, err)
	}
	d, err = shipped(t).Check(`grep -n "a b" f`)
	if err != nil || d.Name != "grep" || !slices.Equal(d.Argv, []string{"grep", "-n", "a b", "f"}) {
		t.Errorf("got %+v, %v", d, err)
	}
}

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// bin is the terminald binary built once by TestMain.
var bin string

func TestMain(m *testing.M) { mcpkittest.RunWithBinary(m, "terminald", &bin) }

const shippedPolicy = "../policies/policy.toml"
const examplePolicy = "../policies/policy.example.toml"

// cleanEnv has nothing inherited that could configure terminald.
var cleanEnv = mcpkittest.CleanEnv

func runBin(t *testing.T, env []string, args ...string) mcpkittest.Ran {
	t.Helper()
	return mcpkittest.Run(t, bin, env, args...)
}

var wantFatal = mcpkittest.WantFatal

// policy writes a policy file with the given [terminal] body (after
// jail_root) and returns its path.
func policy(t testing.TB, jail, body string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.toml")
	doc := fmt.Sprintf("audit_log = %q\n[terminal]\njail_root = %q\n%s", filepath.Join(dir, "state", "audit.jsonl"), jail, body)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const allow = "[terminal.allowlist]\ncommands = [\"echo\", \"true\", \"ls\"]\n"

func TestBinaryRefusesToStartWithoutJailRoot(t *testing.T) {
	wantFatal(t, runBin(t, cleanEnv(t), "--config", shippedPolicy), "no jail_root")
	wantFatal(t, runBin(t, cleanEnv(t)), "no jail_root")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_POLICY_FILE="+shippedPolicy)), "no jail_root")
}

func TestBinaryRefusesToStartWithSymlinkedJail(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, link, allow)), "symbolic link")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_JAIL_ROOT="+link), "--config", shippedPolicy), "symbolic link")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_JAIL_ROOT="+filepath.Join(real, "missing")), "--config", shippedPolicy), "jail_root")
}

func TestBinaryRefusesBogusLandlockMode(t *testing.T) {
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "[terminal.sandbox]\nlandlock = \"bogus\"\n"+allow)), "landlock")
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "[terminal.sandbox]\nnetwork = \"maybe\"\n"+allow)), "network")
}

func TestBinaryRefusesInvalidCommandPolicy(t *testing.T) {
	r := runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(),
		"[terminal.allowlist]\ncommands = [\"sh\", \"ls\"]\n[[terminal.rules]]\ncommand = \"ls\"\ndeny_args = [\"-R\"]\n"))
	wantFatal(t, r, "sh", "reason")
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "")), "allowlist")
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "[terminal.limits]\ntimeout_seconds = 99999\n"+allow)), "timeout_seconds")
}

// TestStartAndCheckRefuseTheSamePolicies: each terminald-only refusal
// stops the server with one fatal line, and check reports the same words
// as an error (exit 1).
func TestStartAndCheckRefuseTheSamePolicies(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"empty allowlist", "", "[terminal.allowlist] commands is empty"},
		{"pass names PATH", "[terminal.env]\npass = [\"PATH\"]\n" + allow, "[terminal.env] pass must not list PATH: terminald sets it"},
		{"pass entry with =", "[terminal.env]\npass = [\"A=B\"]\n" + allow, `[terminal.env] pass entry "A=B" is not a variable name`},
		{"relative path entry", "[terminal.env]\npath = [\"bin\"]\n" + allow, `terminal.env.path entry "bin" must be an absolute directory`},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol := policy(t, t.TempDir(), c.body)
			wantFatal(t, runBin(t, cleanEnv(t), "--config", pol), c.want)
			r := runBin(t, cleanEnv(t, "XDG_STATE_HOME="+t.TempDir()), "check", "--config", pol)
			if r.Code != 1 || !strings.Contains(r.Stdout, "error: "+c.want) {
				t.Fatalf("check: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

func TestBinaryRefusesStateInsideJail(t *testing.T) {
	jail := t.TempDir()
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, jail, "[terminal.state]\ndir = "+fmt.Sprintf("%q", filepath.Join(jail, "state"))+"\n"+allow)), "inside")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_AUDIT_LOG="+filepath.Join(jail, "audit.jsonl")), "--config", policy(t, jail, allow)), "audit")
}

// TestBinaryRefusesBrokenRadarRuleFile: a [radar] rule file that does not
// parse refuses the start, in the shape every server gives it.
func TestBinaryRefusesBrokenRadarRuleFile(t *testing.T) {
	radar, ruleFile := mcpkittest.BrokenRadarRules(t)
	mcpkittest.WantRadarRefusal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), allow+radar)), ruleFile)
}

func TestBinaryVersionAndHelp(t *testing.T) {
	r := runBin(t, cleanEnv(t), "--version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "terminald ") {
		t.Fatalf("%+v", r)
	}
	r = runBin(t, cleanEnv(t), "--help")
	if r.Code != 0 || !strings.Contains(r.Stderr, "jail") || !strings.Contains(r.Stderr, "-http") {
		t.Fatalf("%+v", r)
	}
}

// toolResult is an OperationResult with its detail as a map.
type toolResult struct {
	mcpkittest.Result
	Detail map[string]any
}

func call(t testing.TB, c *client.Client, name string, args map[string]any) toolResult {
	t.Helper()
	r := toolResult{Result: mcpkittest.Call(t, c, name, args)}
	r.DecodeDetail(t, &r.Detail)
	return r
}

// startStdio starts the binary as an MCP stdio server with policy pol.
func startStdio(t testing.TB, pol string) *client.Client {
	t.Helper()
	c, _ := mcpkittest.StartStdio(t, bin, cleanEnv(t, "XDG_STATE_HOME="+t.TempDir()), "--config", pol, "--log-level", "warn")
	return c
}

func TestBinaryOverStdio(t *testing.T) {
	jail := t.TempDir()
	pol := policy(t, jail, allow)
	c := startStdio(t, pol)
	if names, want := mcpkittest.ToolNames(t, c), mcpkittest.GoldenToolNames(t, "internal/terminal/testdata/tools_list.json"); !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	r := call(t, c, "run_command", map[string]any{"command": "echo hi"})
	if !r.OK || r.Code != "OK" || r.Detail["stdout"] != "hi\n" || r.Detail["exit_code"] != float64(0) {
		t.Fatalf("run_command: %+v", r)
	}
	if conf, _ := r.Detail["confinement"].(string); !strings.Contains(conf, "landlock-abi") {
		t.Fatalf("confinement %q", conf)
	}
	r = call(t, c, "explain_command", map[string]any{"command": "echo hi"})
	if r.Code != "OK" || r.Detail["decision"] != "allow" || r.Detail["executable"] == "" {
		t.Fatalf("explain_command: %+v", r)
	}
	r = call(t, c, "run_command", map[string]any{"command": "rm -rf /"})
	if r.OK || r.Code != "POLICY_DENIED" || len(r.Detail) != 0 {
		t.Fatalf("rm: %+v", r)
	}
	c.Close()
	// The audit log the server wrote verifies.
	logPath := filepath.Join(filepath.Dir(pol), "state", "audit.terminald.jsonl")
	v := runBin(t, cleanEnv(t), "audit", "verify", logPath)
	if v.Code != 0 {
		t.Fatalf("audit verify: %+v", v)
	}
	b, _ := os.ReadFile(logPath)
	for _, w := range []string{`"kind":"intent"`, `"kind":"outcome"`, `"echo"`, "landlock-abi"} {
		if !bytes.Contains(b, []byte(w)) {
			t.Fatalf("audit log lacks %s", w)
		}
	}
}

// BenchmarkRunTrueOverStdio measures the round trip of run_command("true")
// through the built binary over stdio (policy, audit intent and outcome
// with fsync on a real disk, namespaces, limits, protected paths,
// redaction) against two baselines timed in the same run: a direct
// fork/exec of /bin/true, and bubblewrap starting /bin/true in new user,
// PID, network, IPC, UTS and mount namespaces (the per-command sandbox
// coding-agent CLIs use). It reports p50 and p99 of all three, the p50
// overhead over fork/exec (goal < 3 ms), that overhead over bubblewrap's
// (goal <= 0.5) and p99/p50 of the server's calls (goal < 3).
//
// BenchmarkRunTrueOverStdio sends run_command("true") back to back, each
// call right after the previous answer and the two baselines (about
// 10 ms of other work between calls).
func BenchmarkRunTrueOverStdio(b *testing.B) { benchRunTrue(b, pattern{}) }

// BenchmarkRunTrueOverStdioNoGap sends the calls back to back with
// nothing between them, in blocks of 20, the baselines timed in blocks of
// their own between: the helpers prepared in the background get no idle
// time at all.
func BenchmarkRunTrueOverStdioNoGap(b *testing.B) { benchRunTrue(b, pattern{block: 20}) }

// BenchmarkRunTrueOverStdioPaced leaves 25 ms (not timed) before each call,
// as an agent's commands arrive with its thinking between them.
func BenchmarkRunTrueOverStdioPaced(b *testing.B) {
	benchRunTrue(b, pattern{pause: 25 * time.Millisecond})
}

// BenchmarkRunTrueOverStdioAfterBurst is the paced pattern after one burst
// of four parallel calls, as an agent's parallel tool calls leave the
// server (issue 19: every later call paid a helper's start).
func BenchmarkRunTrueOverStdioAfterBurst(b *testing.B) {
	benchRunTrue(b, pattern{pause: 25 * time.Millisecond, burst: 4})
}

// BenchmarkRunTrueOverStdioBursts sends bursts of two parallel calls (the
// policy's max_concurrent, 2 by default), 100 ms apart; every call of
// every burst is timed.
func BenchmarkRunTrueOverStdioBursts(b *testing.B) {
	benchRunTrue(b, pattern{pause: 100 * time.Millisecond, burst: 2, everyBurst: true})
}

// BenchmarkRunTrueOverStdioBurstsBackToBack sends bursts of two parallel
// calls, each burst right after the last one's answers (and its parallel
// baselines): an agent whose parallel tool calls come one pair after
// another. It used to start helpers on the request path (giveBack).
func BenchmarkRunTrueOverStdioBurstsBackToBack(b *testing.B) {
	benchRunTrue(b, pattern{burst: 2, everyBurst: true})
}

// BenchmarkRunTrueOverStdioIdle1s leaves a second before each call (and
// each baseline), as an agent's model thinks between commands: every call
// starts on a machine whose caches other work has emptied. 60 calls, so
// that make bench stays in minutes.
func BenchmarkRunTrueOverStdioIdle1s(b *testing.B) {
	benchRunTrue(b, pattern{pause: time.Second, calls: 60})
}

// BenchmarkRunTrueOverStdioBurstsBeyondMax sends bursts of four parallel
// calls, 100 ms apart, every call timed: two of each burst wait for a slot
// (max_concurrent = 2), so their time holds another command's. Reported,
// not a goal: it shows the queue, not the sandbox.
func BenchmarkRunTrueOverStdioBurstsBeyondMax(b *testing.B) {
	benchRunTrue(b, pattern{pause: 100 * time.Millisecond, burst: 4, everyBurst: true})
}

// BenchmarkRunTrueOverStdioRandomGaps leaves a random pause before each
// call, exponentially distributed with a mean of 15 ms (arrivals as a
// Poisson process: some calls right after the last answer, some after a
// long idle).
func BenchmarkRunTrueOverStdioRandomGaps(b *testing.B) {
	benchRunTrue(b, pattern{pause: 15 * time.Millisecond, random: true})
}

// pattern is an arrival pattern of benchRunTrue: pause before each call
// (or burst), one burst of burst parallel calls first (every call a burst
// when everyBurst), and the baselines timed after each call (as a burst
// of the same size, in parallel, for a pattern of bursts) or, with
// block, after each block of that many calls. Each baseline arrives as
// the calls do: after a pause of its own.
type pattern struct {
	pause      time.Duration
	burst      int
	everyBurst bool
	block      int
	random     bool // pause is the mean of an exponential distribution
	calls      int  // calls timed (default: b.N, at least 200)
	// projectDirs, when set, runs the calls in a jail that is a project
	// of that many directories (makeProject) rather than an empty one.
	projectDirs int
}

// BenchmarkRunTrueOverStdioInAProject is the back-to-back pattern in a
// jail that looks like a project an agent works in: a git repository with
// its hooks, a Python virtual environment of 3,000 directories and a
// node_modules tree. The protected paths are looked for in all of it
// before and after every command (node_modules excepted); this used to
// cost a stat per directory, twice per command (17 ms per call here).
func BenchmarkRunTrueOverStdioInAProject(b *testing.B) {
	benchRunTrue(b, pattern{projectDirs: 3000})
}

// makeProject fills jail with a project of about dirs directories: a git
// repository's .git (config, hooks samples, objects), source files, a
// Python virtual environment holding most of the directories, and a
// node_modules tree.
func makeProject(b *testing.B, jail string, dirs int) {
	files := map[string]string{
		".git/config": "[core]\n\trepositoryformatversion = 0\n", ".git/HEAD": "ref: refs/heads/main\n",
		".git/info/exclude": "", ".git/objects/ab/cdef": "x", ".gitignore": ".venv\nnode_modules\n",
		"src/main.py": "print('hi')\n", "README.md": "# project\n", "node_modules/left-pad/index.js": "",
	}
	for _, h := range []string{"pre-commit", "pre-push", "commit-msg", "post-update"} {
		files[".git/hooks/"+h+".sample"] = "#!/bin/sh\n"
	}
	for i := 0; i < dirs; i++ {
		files[fmt.Sprintf(".venv/lib/python3.12/site-packages/pkg%d/sub%d/__init__.py", i/50, i%50)] = ""
	}
	for rel, data := range files {
		testfs.Write(b, filepath.Join(jail, rel), data)
	}
}

func benchRunTrue(b *testing.B, p pattern) {
	jail := b.TempDir()
	if p.projectDirs > 0 {
		makeProject(b, jail, p.projectDirs)
	}
	pol := policy(b, jail, allow)
	c := startStdio(b, pol)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var served, direct, wrapped []time.Duration
	burst := func(timed bool) {
		var wg sync.WaitGroup
		for i := 0; i < p.burst; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				if r := call(b, c, "run_command", map[string]any{"command": "true"}); r.Code != "OK" {
					b.Errorf("burst: %+v", r)
				}
				if timed {
					mu.Lock()
					served = append(served, time.Since(t0))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	if p.burst > 0 && !p.everyBurst {
		burst(false)
	}
	if p.projectDirs > 0 {
		// The first command after start-up walks the whole project (the
		// protected paths' scan remembers and watches it from then on):
		// reported on its own, not among the calls.
		t0 := time.Now()
		if r := call(b, c, "run_command", map[string]any{"command": "true"}); r.Code != "OK" {
			b.Fatalf("first call: %+v", r)
		}
		first := time.Since(t0)
		b.ReportMetric(float64(first.Microseconds())/1000, "first-call-ms")
		b.Logf("the first run_command(true) in the project, which walks it: %.1f ms", float64(first.Microseconds())/1000)
	}
	// bubblewrap is installed by .ci/run; left out where it is missing.
	bwrap, _ := exec.LookPath("bwrap")
	// The baselines run as the calls arrive: one at a time, or, for a
	// pattern of parallel bursts, as a burst of the same size in parallel
	// (two fork/execs at once share the CPUs as two calls do).
	parallel := 1
	if p.everyBurst {
		parallel = p.burst
	}
	timeEach := func(into *[]time.Duration, run func() error) {
		var wg sync.WaitGroup
		for j := 0; j < parallel; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				if err := run(); err != nil {
					b.Error(err)
				}
				mu.Lock()
				*into = append(*into, time.Since(t0))
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	n := max(b.N, 200)
	if p.calls > 0 {
		n = p.calls
	}
	rng := rand.New(rand.NewPCG(19, 1))
	// rest is the pattern's pause before a call, and before each baseline
	// too: a baseline timed right after a call ran on a machine the call
	// had just woken, while the call had waited out the pause (a paced
	// call against warm baselines overstated the overhead by 0.3-0.6 ms).
	rest := func() {
		if p.random {
			time.Sleep(time.Duration(rng.ExpFloat64() * float64(p.pause)))
		} else {
			time.Sleep(p.pause)
		}
	}
	baselines := func() {
		rest()
		timeEach(&direct, func() error { return exec.Command(truePath).Run() })
		if bwrap != "" {
			rest()
			timeEach(&wrapped, func() error {
				if out, err := exec.Command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
					"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
					"--proc", "/proc", "--dev", "/dev", "/bin/true").CombinedOutput(); err != nil {
					return fmt.Errorf("bwrap: %v %s", err, out)
				}
				return nil
			})
		}
	}
	b.ResetTimer()
	for i := 0; len(served) < n; i++ {
		rest()
		if p.everyBurst {
			burst(true)
		} else {
			t0 := time.Now()
			r := call(b, c, "run_command", map[string]any{"command": "true"})
			served = append(served, time.Since(t0))
			if r.Code != "OK" {
				b.Fatalf("run_command(true): %+v", r)
			}
		}
		if p.block == 0 {
			baselines()
		} else if (i+1)%p.block == 0 {
			for j := 0; j < p.block; j++ {
				baselines()
			}
		}
	}
	b.StopTimer()
	reportRunTrue(b, served, direct, wrapped)
}

// reportRunTrue reports the percentiles, the overhead and the ratios of a
// benchRunTrue run.
func reportRunTrue(b *testing.B, served, direct, wrapped []time.Duration) {
	pct := func(d []time.Duration, p float64) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000
	}
	sp50, sp99, dp50, dp99 := pct(served, 0.5), pct(served, 0.99), pct(direct, 0.5), pct(direct, 0.99)
	b.ReportMetric(sp50, "stdio-p50-ms")
	b.ReportMetric(sp99, "stdio-p99-ms")
	b.ReportMetric(dp50, "exec-p50-ms")
	b.ReportMetric(dp99, "exec-p99-ms")
	b.ReportMetric(sp50-dp50, "overhead-p50-ms")
	b.ReportMetric(sp99/sp50, "p99/p50")
	b.Logf("run_command(true) over stdio: p50 %.2f ms, p99 %.2f ms (p99/p50 %.1f, goal < 3); fork/exec /bin/true: p50 %.2f ms, p99 %.2f ms; "+
		"p50 overhead %.2f ms (goal < 3 ms), %d calls", sp50, sp99, sp99/sp50, dp50, dp99, sp50-dp50, len(served))
	if len(wrapped) > 0 {
		wp50, wp99 := pct(wrapped, 0.5), pct(wrapped, 0.99)
		b.ReportMetric(wp50, "bwrap-p50-ms")
		b.ReportMetric(wp99, "bwrap-p99-ms")
		b.ReportMetric((sp50-dp50)/(wp50-dp50), "overhead-vs-bwrap")
		b.Logf("bubblewrap /bin/true in new namespaces: p50 %.2f ms, p99 %.2f ms; our p50 overhead / bubblewrap's: %.2f (goal <= 0.5)",
			wp50, wp99, (sp50-dp50)/(wp50-dp50))
	}
}

// TestBinaryAsksThroughThePolicysApproval: the binary builds its Asker
// from [approval]. A client without elicitation (this test's) is refused
// an ask decision under the default fallback "refuse", naming the missing
// client feature, and nothing runs; under fallback = "agent" the command
// runs, approved by the agent.
func TestBinaryAsksThroughThePolicysApproval(t *testing.T) {
	ask := allow + "[terminal.ask]\ncommands = [\"touch\"]\n"
	for _, c := range []struct{ name, approval, code string }{
		{"default fallback refuse", "", "NEEDS_EXPLICIT_REQUEST"},
		{"fallback agent", "[approval]\nfallback = \"agent\"\n", "OK"},
	} {
		t.Run(c.name, func(t *testing.T) {
			jail := t.TempDir()
			r := call(t, startStdio(t, policy(t, jail, ask+c.approval)), "run_command", map[string]any{"command": "touch made.txt"})
			_, err := os.Stat(filepath.Join(jail, "made.txt"))
			if r.Code != c.code || (err == nil) != (c.code == "OK") {
				t.Fatalf("%s (%s), made.txt: %v; want %s", r.Code, r.Reason, err, c.code)
			}
			if a, _ := r.Detail["approval"].(map[string]any); c.code == "OK" && (a["by"] != "agent" || a["asked"] != false) {
				t.Fatalf("detail.approval %v, want by agent, not asked", r.Detail["approval"])
			}
			if c.code != "OK" && !strings.Contains(r.Reason, "elicitation") {
				t.Fatalf("reason %q does not name elicitation", r.Reason)
			}
		})
	}
}

// Command democlient drives each built Bastion server over stdio with
// mcp-go's client through a scripted session, printing every call and the
// OperationResult code and reason it got. It exits non-zero when any step's
// code differs from the expected one, so `make demo` is also a test.
//
// The client declares elicitation: its handler is a scripted person
// (person.go) who answers the one question the demo expects, sweepd asking
// before a confirmed reclaim deletes ([approval] reclaim = "human", the
// default), and prints that question as the person would read it. A
// question anywhere else fails the demo.
//
// It also checks that a server writes nothing but JSON-RPC messages to
// stdout (logs belong on stderr) and that no answer ever contains the fake
// secret the sandbox plants in .env files.
//
// Usage:
//
//	democlient -bin DIR -sandbox DIR [-only sweepd,terminald,...]
//
// A server whose binary is missing is reported as SKIPPED-NOT-BUILT. A
// server whose binary exists must expose the demo's tools (tools/list), or
// the demo fails; BASTION_DEMO_LENIENT=1 turns that into
// SKIPPED-INCOMPLETE, for work in progress only.
//
// This module is a workspace tool; it is never released.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/approval"
)

// fakeSecret is planted by make_demo_sandbox.sh; no answer may contain it.
const fakeSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

// traceparent is -traceparent: sent in every tool call's _meta.
var traceparent string

// opResult is the OperationResult every tool answers.
type opResult struct {
	OK     bool            `json:"ok"`
	Code   string          `json:"code"`
	Action string          `json:"action"`
	Reason string          `json:"reason"`
	Detail json.RawMessage `json:"detail"`
}

// session is one running server and its client.
type session struct {
	name     string
	c        *client.Client
	cmd      *exec.Cmd
	stderr   *bytes.Buffer
	tools    map[string]bool
	template bool
	guard    *stdoutGuard
	person   *person
	failures int
}

// stdoutGuard sits between the server's stdout and the client: every line
// must be a JSON-RPC 2.0 message.
type stdoutGuard struct {
	mu  sync.Mutex
	bad []string
}

func (g *stdoutGuard) wrap(r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var m struct {
					JSONRPC string `json:"jsonrpc"`
				}
				if json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
					g.mu.Lock()
					g.bad = append(g.bad, strings.TrimSpace(string(line)))
					g.mu.Unlock()
				}
			}
			if len(line) > 0 {
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

var failed bool

func main() {
	bin := flag.String("bin", "bin", "`DIR` holding the built servers")
	sandbox := flag.String("sandbox", "", "sandbox `DIR` made by scripts/make_demo_sandbox.sh")
	only := flag.String("only", "", "comma-separated servers to run (default all)")
	flag.StringVar(&traceparent, "traceparent", "", "W3C `TRACEPARENT` sent in params._meta of every tool call, so the servers' spans continue the client's trace")
	flag.Parse()
	if *sandbox == "" {
		fmt.Fprintln(os.Stderr, "usage: democlient -bin DIR -sandbox DIR")
		os.Exit(2)
	}
	policy := filepath.Join(*sandbox, "policy.toml")
	runs := []struct {
		name  string
		args  []string
		tools []string
		run   func(*session, string)
	}{
		{"sweepd", []string{"--config", policy}, []string{"scan", "reclaim"}, sweepDemo},
		{"terminald", []string{"--config", policy}, []string{"run_command", "explain_command"}, terminalDemo},
		{"organizerd", []string{"--config", policy}, []string{"plan_organize", "apply_plan", "move_file", "undo_last_action", "redo_last_action"}, organizerDemo},
	}
	if _, err := os.Stat(filepath.Join(*sandbox, "dev-policy.toml")); err == nil {
		runs = append(runs, struct {
			name  string
			args  []string
			tools []string
			run   func(*session, string)
		}{"terminald", []string{"--config", filepath.Join(*sandbox, "dev-policy.toml")},
			[]string{"run_command", "explain_command"}, devDemo})
	}
	radarDone := false
	for _, r := range runs {
		if *only != "" && !strings.Contains(","+*only+",", ","+r.name+",") {
			continue
		}
		path := filepath.Join(*bin, r.name)
		if _, err := os.Stat(path); err != nil {
			fmt.Printf("== %s: SKIPPED-NOT-BUILT (no %s)\n", r.name, path)
			continue
		}
		fmt.Printf("== %s\n", r.name)
		s, err := start(r.name, path, r.args, policy)
		if err != nil {
			fmt.Printf("FAIL %s: cannot start a session: %v\n", r.name, err)
			failed = true
			continue
		}
		var missing []string
		for _, t := range r.tools {
			if !s.tools[t] {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			if os.Getenv("BASTION_DEMO_LENIENT") == "1" {
				fmt.Printf("== %s: SKIPPED-INCOMPLETE (tools/list lacks %s)\n", r.name, strings.Join(missing, ", "))
			} else {
				fmt.Printf("FAIL %s: the binary exists but tools/list lacks %s\n", r.name, strings.Join(missing, ", "))
				failed = true
			}
		} else {
			r.run(s, *sandbox)
		}
		if s.tools["get_context_summary"] || s.template {
			radarDemo(s)
			radarDone = true
		}
		s.stop()
	}
	if !radarDone {
		fmt.Println("== radar: SKIPPED-NOT-BUILT (no server exposes get_context_summary or file-context://)")
	}
	if failed {
		fmt.Println("demo: FAIL")
		os.Exit(1)
	}
	fmt.Println("demo: ok")
}

func start(name, path string, args []string, policy string) (*session, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "BASTION_POLICY_FILE="+policy)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &session{name: name, cmd: cmd, stderr: &bytes.Buffer{}, tools: map[string]bool{}, guard: &stdoutGuard{}, person: &person{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	tr := transport.NewIO(s.guard.wrap(stdout), stdin, io.NopCloser(strings.NewReader("")))
	s.c = client.NewClient(tr, client.WithElicitationHandler(s.person))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The transport keeps Start's context for the server's requests to the
	// client (the person's questions): it must outlive this function.
	if err := s.c.Start(context.Background()); err != nil {
		s.stop()
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "bastion-democlient", Version: "0"}
	if _, err := s.c.Initialize(ctx, init); err != nil {
		s.stop()
		return nil, fmt.Errorf("initialize: %v (server stderr: %s)", err, lastLines(s.stderr.String()))
	}
	tl, err := s.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("tools/list: %v", err)
	}
	var names []string
	for _, t := range tl.Tools {
		s.tools[t.Name] = true
		names = append(names, t.Name)
	}
	fmt.Printf("   tools/list: %s\n", strings.Join(names, ", "))
	if rt, err := s.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err == nil {
		for _, t := range rt.ResourceTemplates {
			if strings.HasPrefix(t.URITemplate.Raw(), "file-context://") {
				s.template = true
			}
		}
	}
	return s, nil
}

func (s *session) stop() {
	if s.c != nil {
		_ = s.c.Close()
	}
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	if len(s.guard.bad) > 0 {
		fmt.Printf("FAIL %s: wrote non-protocol output to stdout (logs belong on stderr): %q\n", s.name, s.guard.bad[0])
		failed = true
	} else {
		fmt.Printf("   stdout: only JSON-RPC messages\n")
	}
}

// call runs one tool and checks the OperationResult's code.
func (s *session) call(label, tool string, args map[string]any, want string) opResult {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if traceparent != "" {
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": traceparent}}
	}
	a, _ := json.Marshal(args)
	asked, unexpected, _ := s.person.counts()
	res, err := s.c.CallTool(ctx, req)
	defer s.checkAsked(tool, asked, unexpected)
	var r opResult
	if err != nil {
		r = opResult{Code: "PROTOCOL_ERROR", Reason: err.Error()}
	} else {
		b, _ := json.Marshal(res.StructuredContent)
		if res.StructuredContent == nil || json.Unmarshal(b, &r) != nil || r.Code == "" {
			for _, c := range res.Content {
				if t, ok := c.(mcp.TextContent); ok {
					_ = json.Unmarshal([]byte(t.Text), &r)
				}
			}
		}
		if all, _ := json.Marshal(res); bytes.Contains(all, []byte(fakeSecret)) {
			fmt.Printf("FAIL %s: %s answered with the planted secret\n", s.name, tool)
			failed = true
		}
	}
	mark := "ok  "
	if r.Code != want {
		mark = "FAIL"
		failed = true
	}
	fmt.Printf("%s %-38s %s %s\n       -> %s: %s", mark, label, tool, a, r.Code, oneLine(r.Reason, 160))
	if r.Code != want {
		fmt.Printf("   (expected %s)", want)
	}
	fmt.Println()
	return r
}

// checkAsked fails the demo when the server asked the person a question
// nobody expected, or did not ask one the step expected.
func (s *session) checkAsked(tool string, asked, unexpected int) {
	nowAsked, nowUnexpected, unused := s.person.counts()
	if nowUnexpected > unexpected {
		fmt.Printf("FAIL %s: %s asked the person where the demo expects no question\n", s.name, tool)
		failed = true
	}
	if unused > 0 {
		fmt.Printf("FAIL %s: %s did not ask the person (asked %d time(s)); the demo expects a question\n", s.name, tool, nowAsked-asked)
		failed = true
	}
	s.person.forget()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// ---- sweepd ---------------------------------------------------------------

func sweepDemo(s *session, _ string) {
	r := s.call("scan the code root", "scan", map[string]any{}, "OK")
	var d struct {
		Finds []struct {
			ID   string `json:"id"`
			Path string `json:"path"`
			Kind string `json:"kind"`
			Keep bool   `json:"keep"`
		} `json:"finds"`
	}
	_ = json.Unmarshal(r.Detail, &d)
	var ids, kept []any
	for _, f := range d.Finds {
		fmt.Printf("       find %-14s %s keep=%v\n", f.Kind, f.Path, f.Keep)
		if f.Keep {
			kept = append(kept, f.ID)
		} else {
			ids = append(ids, f.ID)
		}
	}
	if len(ids) < 3 || len(kept) == 0 {
		fmt.Printf("FAIL sweepd: expected at least 3 reclaimable finds and 1 kept one, got %d and %d\n", len(ids), len(kept))
		failed = true
		return
	}
	s.call("dry run (no confirm)", "reclaim", map[string]any{"ids": ids}, "OK")
	s.call("a kept project is never reclaimed", "reclaim", map[string]any{"ids": kept[:1], "confirm": "delete"}, "POLICY_DENIED")
	// [approval] reclaim = "human" (the default): the agent's confirm alone
	// deletes nothing; the server asks the person, who allows it once.
	s.callAsked("confirmed; the person allows it once", "reclaim", map[string]any{"ids": ids, "confirm": "delete"}, "OK", approval.AnswerOnce)
	s.call("the same ids again are used up", "reclaim", map[string]any{"ids": ids[:1], "confirm": "delete"}, "STALE")
}

// ---- terminald ------------------------------------------------------------

func terminalDemo(s *session, _ string) {
	s.call("an allowed command", "run_command", map[string]any{"command": "ls -a"}, "OK")
	s.call("rm -rf / is denied", "run_command", map[string]any{"command": "rm -rf /"}, "POLICY_DENIED")
	r := s.call("a quoted ; is data, not an operator", "run_command", map[string]any{"command": `echo "a;b"`}, "OK")
	if !bytes.Contains(r.Detail, []byte("a;b")) {
		fmt.Printf("FAIL terminald: echo \"a;b\" did not print a;b: %s\n", oneLine(string(r.Detail), 200))
		failed = true
	}
	s.call("an unquoted ; is refused", "run_command", map[string]any{"command": "echo a; rm -rf /"}, "POLICY_DENIED")
	s.call("argument injection via git -c", "run_command", map[string]any{"command": "git -c alias.x=!sh x"}, "POLICY_DENIED")
	s.call("git -c before a real subcommand", "run_command", map[string]any{"command": "git -c core.pager=sh log"}, "POLICY_DENIED")
	s.call("explain before running", "explain_command", map[string]any{"command": "cat .env"}, "OK")
}

// devDemo is terminald in the sandbox profile: real builds and tests through
// a shell and interpreters, and arbitrary code that tries to leave.
func devDemo(s *session, _ string) {
	fmt.Println("   (sandbox profile: the kernel boundary is the guarantee)")
	ran := func(what, cmd, cwd, want string) {
		r := s.call(what, "run_command", map[string]any{"command": cmd, "cwd": cwd}, "OK")
		var d struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
		}
		_ = json.Unmarshal(r.Detail, &d)
		if d.ExitCode != 0 || !strings.Contains(d.Stdout+d.Stderr, want) {
			fmt.Printf("FAIL terminald (sandbox): %s: exit %d, no %q in: %s\n", what, d.ExitCode, want, oneLine(d.Stdout+d.Stderr, 300))
			failed = true
		}
	}
	ran("go test of a small module, offline", "go test ./...", "gomod", "ok")
	ran("go test again: the cache is reused", "go test ./...", "gomod", "(cached)")
	ran("make + cc", "make run", "cprog", "hello from C")
	ran("python3 -m unittest", "python3 -m unittest -v", "pytests", "OK")
	// Arbitrary code, started through the allowed shell, tries to leave.
	ran("a shell reads outside the jail: nothing there",
		`sh -c "cat /etc/shadow 2>/dev/null || echo refused-shadow; ls /home /root 2>/dev/null || echo refused-home"`, ".", "refused-shadow")
	ran("a script reaches for the network: only its own loopback",
		`python3 -c "import socket; s=socket.socket(); s.settimeout(2); print('refused-net' if s.connect_ex(('1.1.1.1', 443)) else 'CONNECTED')"`, ".", "refused-net")
}

// ---- organizerd -----------------------------------------------------------

func organizerDemo(s *session, _ string) {
	r := s.call("plan (changes nothing)", "plan_organize", map[string]any{}, "OK")
	var p struct {
		PlanID string `json:"plan_id"`
		Moves  []struct {
			Src, Dest string
		} `json:"moves"`
		Skips []struct {
			Name, Code string
		} `json:"skips"`
	}
	_ = json.Unmarshal(r.Detail, &p)
	for _, m := range p.Moves {
		fmt.Printf("       move %s -> %s\n", m.Src, m.Dest)
	}
	for _, sk := range p.Skips {
		fmt.Printf("       skip %s: %s\n", sk.Name, sk.Code)
	}
	wantSkip := map[string]string{".bashrc": "NEEDS_EXPLICIT_REQUEST", "setup.exe": "NEEDS_EXPLICIT_REQUEST", "link.pdf": "POLICY_DENIED"}
	for _, sk := range p.Skips {
		if w, ok := wantSkip[sk.Name]; ok {
			if sk.Code != w {
				fmt.Printf("FAIL organizerd: plan skipped %s with %s, expected %s\n", sk.Name, sk.Code, w)
				failed = true
			}
			delete(wantSkip, sk.Name)
		}
	}
	for name := range wantSkip {
		fmt.Printf("FAIL organizerd: the plan did not skip %s\n", name)
		failed = true
	}
	s.call("apply the plan", "apply_plan", map[string]any{"plan_id": p.PlanID}, "OK")
	s.call("a plan applies once", "apply_plan", map[string]any{"plan_id": p.PlanID}, "STALE")
	s.call("the installer, named explicitly", "move_file", map[string]any{"src": "setup.exe", "dest": "Installers/setup.exe"}, "OK")
	s.call("a symlink, however named", "move_file", map[string]any{"src": "link.pdf", "dest": "Documents/link.pdf"}, "POLICY_DENIED")
	s.call("undo the installer move", "undo_last_action", map[string]any{}, "OK")
	s.call("redo it", "redo_last_action", map[string]any{}, "OK")
}

// ---- radar ----------------------------------------------------------------

func radarDemo(s *session) {
	fmt.Printf("== radar (via %s)\n", s.name)
	if s.tools["get_context_summary"] {
		s.call("what is in this workspace?", "get_context_summary", map[string]any{}, "OK")
	}
	if !s.template {
		return
	}
	rel := map[string]string{"sweepd": "webapp/.env", "terminald": ".env", "organizerd": ".env"}[s.name]
	uri := "file-context://" + rel
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := s.c.ReadResource(ctx, req)
	if err != nil {
		fmt.Printf("FAIL resources/read %s: %v\n", uri, err)
		failed = true
		return
	}
	all, _ := json.Marshal(res)
	if bytes.Contains(all, []byte(fakeSecret)) {
		fmt.Printf("FAIL resources/read %s: the descriptor contains the secret value\n", uri)
		failed = true
		return
	}
	if !bytes.Contains(all, []byte("HIGH_RISK")) {
		fmt.Printf("FAIL resources/read %s: .env is not HIGH_RISK: %s\n", uri, oneLine(string(all), 300))
		failed = true
		return
	}
	fmt.Printf("ok   %-38s resources/read %s\n       -> HIGH_RISK, no secret value in the descriptor\n", "a file-context read of .env", uri)
}

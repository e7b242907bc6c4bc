package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/reclaim"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// env is one sweepd server with a real root, a real audit log, a directory
// outside the root for canaries, and an in-process MCP client.
type env struct {
	t         *testing.T
	root      string // canonical root path
	outside   string // a directory outside every root
	auditPath string
	srv       *Server
	c         *client.Client
}

type envOpt func(*Options)

// newEnv starts a server on a fresh root. With noRoot, the server has zero
// roots.
func newEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	return newEnvAt(t, "", opts...)
}

// newEnvOnTmpfs puts the root, the outside directory and the audit log on
// one fresh tmpfs: fsync costs nothing there, which keeps thousands of
// audited reclaims fast.
func newEnvOnTmpfs(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	base := canon(t, t.TempDir())
	mountTmpfs(t, base, "size=64m")
	return newEnvAt(t, base, opts...)
}

func newEnvAt(t *testing.T, base string, opts ...envOpt) *env {
	t.Helper()
	dir := func(name string) string {
		if base == "" {
			return canon(t, t.TempDir())
		}
		p := filepath.Join(base, name)
		mkdir(t, p)
		return p
	}
	root := dir("root")
	e := &env{t: t, root: root, outside: dir("outside")}
	jr, err := jail.OpenRoot(root)
	if err != nil {
		t.Fatalf("OpenRoot: %v", err)
	}
	t.Cleanup(func() { jr.Close() })
	e.auditPath = filepath.Join(dir("state"), "bastion", "sweepd.audit.jsonl")
	alog, err := audit.Open(audit.Options{Path: e.auditPath, Server: "sweepd", Roots: []string{root}})
	if err != nil {
		t.Fatalf("audit.Open: %v", err)
	}
	t.Cleanup(func() { alog.Close() })
	o := Options{Roots: []*jail.Root{jr}, Audit: alog, Version: "test"}
	for _, f := range opts {
		f(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.srv = srv
	e.c = startClient(t, srv)
	return e
}

func withoutRoots(o *Options) { o.Roots = nil }
func withTTL(d time.Duration) envOpt {
	return func(o *Options) { o.TicketTTL = d }
}
func withMaxFinds(n int) envOpt { return func(o *Options) { o.MaxFinds = n } }

// startClient connects mcp-go's in-process client the way a real client
// does: Start, then initialize with a pinned protocol version.
func startClient(t *testing.T, srv *Server) *client.Client {
	t.Helper()
	return mcpkittest.StartInProcess(t, srv.MCP())
}

func canon(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// opResult is the OperationResult as a client parses it.
type opResult = mcpkittest.Result

// pathCase is one path a table test sends, with a name for -run.
type pathCase struct{ name, path string }

type findOut struct {
	ID           string `json:"id"`
	Path         string `json:"path"`
	Kind         string `json:"kind"`
	Ecosystem    string `json:"ecosystem"`
	SizeBytes    int64  `json:"size_bytes"`
	LastActivity string `json:"last_activity"`
	Regenerate   string `json:"regenerate"`
	Keep         bool   `json:"keep"`
	KeepReason   string `json:"keep_reason"`
	// Inside is what the radar saw inside the find (HIGH_RISK, tracked).
	Inside *reclaim.Inside `json:"inside"`
	// Radar is decoded into the server's own type: its fields are the
	// wire names.
	Radar *FindRadar `json:"radar"`
}

type scanOut struct {
	Root       string    `json:"root"`
	Path       string    `json:"path"`
	Finds      []findOut `json:"finds"`
	Count      int       `json:"count"`
	TotalBytes int64     `json:"total_bytes"`
	Truncated  bool      `json:"truncated"`
}

type outcomeOut struct {
	ID        string `json:"id"`
	Path      string `json:"path"`
	Code      string `json:"code"`
	Reason    string `json:"reason"`
	SizeBytes int64  `json:"size_bytes"`
	// Inside names the HIGH_RISK and tracked files the find holds.
	Inside *reclaim.Inside `json:"inside"`
}

type reclaimOut struct {
	DryRun         bool         `json:"dry_run"`
	Results        []outcomeOut `json:"results"`
	ReclaimedBytes int64        `json:"reclaimed_bytes"`
	// WouldReclaimBytes is a dry run's total.
	WouldReclaimBytes int64 `json:"would_reclaim_bytes"`
	// Approval is who confirmed a deletion.
	Approval *approval.Approval `json:"approval"`
}

// call invokes a tool through the client with raw JSON arguments and
// parses the result. The structured content and the JSON text must agree:
// both are the one OperationResult.
func (e *env) call(name string, args any) opResult {
	e.t.Helper()
	return callTool(e.t, e.c, name, args)
}

func callTool(t *testing.T, c *client.Client, name string, args any) opResult {
	t.Helper()
	return callToolCtx(context.Background(), t, c, name, args, nil)
}

func callToolCtx(ctx context.Context, t *testing.T, c *client.Client, name string, args any, meta *mcp.Meta) opResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = meta
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("CallTool %s: protocol error %v (every tool must answer with an OperationResult)", name, err)
	}
	return parseResult(t, res)
}

// parseResult is mcpkittest.Parse, and sweepd has no ok code but OK.
func parseResult(t *testing.T, res *mcp.CallToolResult) opResult {
	t.Helper()
	r := mcpkittest.Parse(t, res)
	if r.OK != (r.Code == "OK") {
		t.Fatalf("ok=%v with code %s", r.OK, r.Code)
	}
	return r
}

func scanOf(t *testing.T, r opResult) scanOut {
	t.Helper()
	var s scanOut
	r.DecodeDetail(t, &s)
	return s
}

func reclaimOf(t *testing.T, r opResult) reclaimOut {
	t.Helper()
	var s reclaimOut
	r.DecodeDetail(t, &s)
	return s
}

func wantCode(t *testing.T, r opResult, codes ...string) {
	t.Helper()
	for _, c := range codes {
		if r.Code == c {
			return
		}
	}
	t.Fatalf("code %s (%s), want one of %v; detail %s", r.Code, r.Reason, codes, r.Detail)
}

// scanOK scans args and requires OK.
func (e *env) scanOK(args map[string]any) scanOut {
	e.t.Helper()
	r := e.call("scan", args)
	wantCode(e.t, r, "OK")
	return scanOf(e.t, r)
}

// findAt returns the find whose path is p, or fails.
func findAt(t *testing.T, s scanOut, p string) findOut {
	t.Helper()
	for _, f := range s.Finds {
		if f.Path == p {
			return f
		}
	}
	t.Fatalf("no find at %s; finds: %+v", p, s.Finds)
	return findOut{}
}

func paths(s scanOut) []string {
	var out []string
	for _, f := range s.Finds {
		out = append(out, f.Path)
	}
	return out
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// nodeProject creates dir/package.json and dir/node_modules with a few files.
func nodeProject(t *testing.T, dir string) string {
	t.Helper()
	testfs.Write(t, filepath.Join(dir, "package.json"), `{"name":"p"}`)
	nm := filepath.Join(dir, "node_modules")
	testfs.Write(t, filepath.Join(nm, "left-pad", "index.js"), "module.exports = 1\n")
	testfs.Write(t, filepath.Join(nm, "left-pad", "package.json"), `{"name":"left-pad"}`)
	testfs.Write(t, filepath.Join(nm, ".bin", "tool"), "#!/bin/sh\n")
	return nm
}

// canaryTree creates files with known content under dir and returns a
// function that fails the test unless every one is still there, intact.
func canaryTree(t *testing.T, dir string) func() {
	t.Helper()
	files := map[string]string{
		"precious.txt":          "do not delete",
		"sub/deeper/data.bin":   strings.Repeat("x", 3000),
		"node_modules/keep.js":  "canary module",
		"left-pad/index.js":     "canary left-pad",
		".bin/tool":             "canary tool",
		"sub/deeper/more/z.txt": "zzz",
	}
	for name, content := range files {
		testfs.Write(t, filepath.Join(dir, name), content)
	}
	return func() {
		t.Helper()
		for name, content := range files {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("canary %s was touched: %v", name, err)
			}
			if string(b) != content {
				t.Fatalf("canary %s content changed", name)
			}
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func mustExist(t *testing.T, p string) {
	t.Helper()
	if !exists(p) {
		t.Fatalf("%s was deleted", p)
	}
}

// mountTmpfs mounts a small tmpfs at dir and unmounts it at cleanup.
func mountTmpfs(t *testing.T, dir string, opts ...string) {
	t.Helper()
	mkdir(t, dir)
	data := "size=4m,mode=0755"
	if len(opts) > 0 {
		data = strings.Join(opts, ",") + ",mode=0755"
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, data); err != nil {
		t.Fatalf("mount tmpfs at %s: %v (tests run as root)", dir, err)
	}
	t.Cleanup(func() { unmount(t, dir) })
}

// bindReadOnly bind-mounts dir onto itself read-only.
func bindReadOnly(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s: %v", dir, err)
	}
	t.Cleanup(func() { unmount(t, dir) })
	if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}

func unmount(t *testing.T, dir string) {
	if err := unix.Unmount(dir, 0); err != nil && err != unix.EINVAL { // EINVAL: not mounted (any more)
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

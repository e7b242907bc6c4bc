package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// radarServer serves file-context and get_context_summary for the given
// root directories, logging into logs.
func radarServer(t *testing.T, logs *bytes.Buffer, dirs ...string) *client.Client {
	t.Helper()
	var roots []*jail.Root
	for _, d := range dirs {
		r, err := jail.OpenRoot(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		roots = append(roots, r)
	}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	eng, err := risk.NewEngine(risk.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer("radar-test", "1", "test")
	RegisterFileContext(s, roots, eng, log)
	s.AddTools(ContextSummaryTool(roots, eng, log))
	return startClient(t, s)
}

// readContext reads a file-context URI and returns its one text content.
func readContext(t *testing.T, c *client.Client, uri string) string {
	t.Helper()
	var req mcp.ReadResourceRequest
	req.Params.URI = uri
	res, err := c.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatalf("ReadResource %s: protocol error %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("%s: %d contents, want 1", uri, len(res.Contents))
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("%s: content is %T", uri, res.Contents[0])
	}
	if tc.MIMEType != "application/json" || tc.URI != uri {
		t.Fatalf("%s: content uri %q mime %q", uri, tc.URI, tc.MIMEType)
	}
	return tc.Text
}

func descriptorOf(t *testing.T, text string) risk.Descriptor {
	t.Helper()
	var d risk.Descriptor
	if err := json.Unmarshal([]byte(text), &d); err != nil || d.URI == "" {
		t.Fatalf("not a descriptor: %s", text)
	}
	return d
}

func refusalOf(t *testing.T, text string, code result.Code) opResult {
	t.Helper()
	var r opResult
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("not an OperationResult: %s", text)
	}
	if r.OK || r.Code != string(code) || r.Reason == "" || r.Action != "file-context" {
		t.Fatalf("want a %s refusal, got %s", code, text)
	}
	return r
}

func TestFileContextOfDotEnvIsHighRiskReadOnly(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, ".env", "PORT=8080\n")
	writeFile(t, root, "src/main.go", "package main\n")
	c := radarServer(t, &bytes.Buffer{}, root)
	d := descriptorOf(t, readContext(t, c, "file-context://.env"))
	if d.URI != "file-context://.env" || d.Metadata.Importance != risk.HighRisk || d.Metadata.SuggestedAction != risk.ReadOnly {
		t.Fatalf("%+v", d)
	}
	if len(d.Metadata.MatchedRules) == 0 || len(d.Metadata.Reasons) == 0 {
		t.Fatalf("no reasons or rules: %+v", d.Metadata)
	}
	// The same file by an absolute path inside the root.
	if d2 := descriptorOf(t, readContext(t, c, "file-context://"+filepath.ToSlash(filepath.Join(root, ".env")))); d2.Metadata.Importance != risk.HighRisk {
		t.Fatalf("absolute path: %+v", d2)
	}
	// A nested path with slashes ({+path}) and a percent-escaped one.
	for _, tc := range []struct{ name, uri string }{
		{"slashes", "file-context://src/main.go"},
		{"percent-escaped slash", "file-context://src%2Fmain.go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := descriptorOf(t, readContext(t, c, tc.uri)); d.URI != "file-context://src/main.go" {
				t.Fatalf("%s: %+v", tc.uri, d)
			}
		})
	}
}

func TestFileContextRefusesDotDotEscape(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "project")
	writeFile(t, root, "a.txt", "x\n")
	writeFile(t, parent, "outside.env", "SECRET=Zx9vQ2mmT7abc\n")
	other := t.TempDir()
	c := radarServer(t, &bytes.Buffer{}, root)
	for _, tc := range []struct{ name, uri string }{
		{"dot-dot", "file-context://../outside.env"},
		{"dot-dot below a directory", "file-context://src/../../outside.env"},
		{"percent-escaped dot-dot", "file-context://%2E%2E/outside.env"},
		{"absolute path outside the root", "file-context://" + filepath.ToSlash(filepath.Join(parent, "outside.env"))},
		{"absolute path of another directory", "file-context://" + filepath.ToSlash(other)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := readContext(t, c, tc.uri)
			refusalOf(t, text, result.PathEscape)
			if strings.Contains(text, "SECRET") || strings.Contains(text, "Zx9vQ2mmT7abc") {
				t.Fatalf("%s: refusal shows the file: %s", tc.uri, text)
			}
		})
	}
	refusalOf(t, readContext(t, c, "file-context://missing.txt"), result.NotFound)
	refusalOf(t, readContext(t, c, "file-context://a.txt?cursor=5"), result.InvalidRequest)
	refusalOf(t, readContext(t, c, "file-context://a.txt?other=1"), result.InvalidRequest)
}

func TestFileContextRefusesSymlink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeFile(t, outside, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n")
	writeFile(t, root, "ok.txt", "x\n")
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "id_rsa"), filepath.Join(root, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	c := radarServer(t, &bytes.Buffer{}, root)
	for _, tc := range []struct{ name, uri string }{
		{"file through a linked directory", "file-context://linkdir/id_rsa"},
		{"linked file", "file-context://notes.txt"},
		{"linked directory", "file-context://linkdir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := readContext(t, c, tc.uri)
			refusalOf(t, text, result.PathEscape)
			if strings.Contains(text, "PRIVATE KEY") || strings.Contains(text, "QUJDREVG") {
				t.Fatalf("%s: %s", tc.uri, text)
			}
		})
	}
	// In a listing, a link is described by its name, never followed.
	var page DirContext
	if err := json.Unmarshal([]byte(readContext(t, c, "file-context://")), &page); err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		if e.URI == "file-context://notes.txt" && (e.Metadata.Importance == risk.HighRisk || e.Metadata.Size != int64(len(filepath.Join(outside, "id_rsa")))) {
			t.Fatalf("symlink entry was followed: %+v", e)
		}
	}
}

func TestFileContextDirectoryIsBoundedWithCursor(t *testing.T) {
	root := t.TempDir()
	const n = 2*DirPageSize + 17
	for i := range n {
		writeFile(t, root, fmt.Sprintf("big/f%04d.txt", i), "x\n")
	}
	writeFile(t, root, "big/.env", "A=1\n")
	c := radarServer(t, &bytes.Buffer{}, root)
	seen := map[string]bool{}
	uri, pages := "file-context://big", 0
	for uri != "" {
		var page DirContext
		if err := json.Unmarshal([]byte(readContext(t, c, uri)), &page); err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Entries) > DirPageSize || page.Total != n+1 || page.MimeType != "inode/directory" || page.URI != "file-context://big" {
			t.Fatalf("page %d: %d entries, total %d, %+v", pages, len(page.Entries), page.Total, page.Descriptor)
		}
		for _, e := range page.Entries {
			if seen[e.URI] {
				t.Fatalf("%s listed twice", e.URI)
			}
			seen[e.URI] = true
			if e.URI == "file-context://big/.env" && e.Metadata.Importance != risk.HighRisk {
				t.Fatalf(".env in a listing: %+v", e)
			}
		}
		uri = page.Next
	}
	if pages != 3 || len(seen) != n+1 {
		t.Fatalf("%d pages, %d entries", pages, len(seen))
	}
	refusalOf(t, readContext(t, c, "file-context://big?cursor=99999"), result.InvalidRequest)
	refusalOf(t, readContext(t, c, "file-context://big?cursor=-1"), result.InvalidRequest)
}

func TestFileContextNeverContainsSecretValue(t *testing.T) {
	const canary = "CANARYx7Q9pL2mZ"
	root := t.TempDir()
	writeFile(t, root, ".env", "DB_PASSWORD="+canary+"\nSTRIPE_KEY=sk_live_"+canary+"0000000000\n")
	writeFile(t, root, "config.json", `{"database": {"url": "postgres://user:`+canary+`@db.internal:5432/app"}}`+"\n")
	var logs bytes.Buffer
	c := radarServer(t, &logs, root)
	var all strings.Builder
	for _, uri := range []string{"file-context://.env", "file-context://config.json", "file-context://"} {
		all.WriteString(readContext(t, c, uri))
	}
	cfg := descriptorOf(t, readContext(t, c, "file-context://config.json"))
	if cfg.Metadata.Importance != risk.HighRisk {
		t.Fatalf("config.json with a password in a URL: %+v", cfg.Metadata)
	}
	found := false
	for _, r := range cfg.Metadata.Reasons {
		found = found || r == "line 1: PostgreSQL connection string with a password"
	}
	if !found {
		t.Fatalf("reasons %q", cfg.Metadata.Reasons)
	}
	sum := call(t, c, "get_context_summary", map[string]any{})
	all.WriteString(sum.Text)
	if strings.Contains(all.String(), canary) || strings.Contains(logs.String(), canary) {
		t.Fatalf("the canary reached a client or the log:\n%s\n%s", all.String(), logs.String())
	}
}

func TestContextSummaryCountsAndReasons(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "package.json", "{}\n")
	writeFile(t, root, ".env", "A=1\n")
	writeFile(t, root, "deploy/server.pem", "x\n")
	writeFile(t, root, "src/index.js", "x\n")
	for i := range 30 {
		writeFile(t, root, fmt.Sprintf("node_modules/p%d/index.js", i), "x\n")
	}
	c := radarServer(t, &bytes.Buffer{}, root)
	r := call(t, c, "get_context_summary", map[string]any{})
	wantCode(t, r, result.OK)
	var detail struct {
		Summaries []struct {
			Root string `json:"root"`
			risk.Summary
		} `json:"summaries"`
	}
	if err := json.Unmarshal(r.Detail, &detail); err != nil || len(detail.Summaries) != 1 {
		t.Fatalf("detail: %s", r.Detail)
	}
	s := detail.Summaries[0].Summary
	if s.Files != 34 || s.Counts[risk.HighRisk] != 2 || s.Counts[risk.Ignorable] != 30 {
		t.Fatalf("counts: files %d %v", s.Files, s.Counts)
	}
	risky := map[string]string{}
	for _, it := range s.HighRisk {
		risky[it.Path] = it.Reason
	}
	if risky[".env"] == "" || risky["deploy/server.pem"] == "" {
		t.Fatalf("high-risk files and reasons: %+v", s.HighRisk)
	}
	if len(s.Ignorable) == 0 || s.Ignorable[0].Path != "node_modules/" || s.Ignorable[0].Files != 30 {
		t.Fatalf("ignorable bulk: %+v", s.Ignorable)
	}
	if !strings.Contains(r.Reason, "node_modules/: 30 files, ignorable") {
		t.Fatalf("overview text: %s", r.Reason)
	}
	// A subdirectory, an escape, a file.
	sub := call(t, c, "get_context_summary", map[string]any{"path": "deploy"})
	wantCode(t, sub, result.OK)
	wantCode(t, call(t, c, "get_context_summary", map[string]any{"path": "../"}), result.PathEscape)
	wantCode(t, call(t, c, "get_context_summary", map[string]any{"path": ".env"}), result.InvalidRequest)
	wantCode(t, call(t, c, "get_context_summary", map[string]any{"path": 3}), result.InvalidRequest)
}

func TestContextSummaryToolDefinitionGolden(t *testing.T) {
	tool := ContextSummaryTool(nil, nil, nil).Tool
	got, err := json.MarshalIndent(tool, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	mcpkittest.Golden(t, filepath.Join("testdata", "get_context_summary.golden.json"), got)
	var m map[string]any
	_ = json.Unmarshal(got, &m)
	a, _ := m["annotations"].(map[string]any)
	if a["readOnlyHint"] != true || a["idempotentHint"] != true || a["destructiveHint"] != false || a["openWorldHint"] != false {
		t.Fatalf("annotations: %v", a)
	}
}

package mcpkittest

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// call sends one JSON-RPC request to s and returns its result or error
// member, decoded.
func call(t testing.TB, s *server.MCPServer, method string, params any) map[string]any {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	raw, err := json.Marshal(s.HandleMessage(context.Background(), req))
	if err != nil {
		t.Fatalf("%s cannot be marshalled: %v", method, err)
	}
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return env
}

// PromptsJSON returns, for a golden file, prompts/list exactly as s answers
// it and each prompt's prompts/get with no arguments (the defaults), keys
// sorted and indented.
func PromptsJSON(t testing.TB, s *server.MCPServer) []byte {
	t.Helper()
	list := call(t, s, "prompts/list", map[string]any{})
	res, _ := list["result"].(map[string]any)
	prompts, _ := res["prompts"].([]any)
	if len(prompts) == 0 {
		t.Fatalf("prompts/list: no prompts: %v", list)
	}
	gets := map[string]any{}
	for _, p := range prompts {
		name, _ := p.(map[string]any)["name"].(string)
		gets[name] = call(t, s, "prompts/get", map[string]any{"name": name})["result"]
	}
	out, err := json.MarshalIndent(map[string]any{"prompts/list": res, "prompts/get": gets}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// Manifest is the part of an MCP bundle manifest that must agree with the
// server (packaging/<server>/manifest.json).
type Manifest struct {
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	Prompts []struct {
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Arguments   []string `json:"arguments"`
		Text        string   `json:"text"`
	} `json:"prompts"`
}

// ManifestPrompt is a prompt as a bundle manifest writes it (mcpkit.Prompt
// is one).
type ManifestPrompt interface {
	ManifestEntry() (name, description string, args []string, text string)
}

// FirstSentence is what a bundle manifest shows of a tool's description.
func FirstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// CheckManifest compares the MCP bundle manifest at path with the live
// server s and the prompts it was given: the same tools (each described by
// the first sentence of its own description) and the same prompts (name,
// description, argument names in order, and the text with its
// ${arguments.NAME} placeholders, which is how a manifest writes it).
func CheckManifest[P ManifestPrompt](t testing.TB, path string, s *server.MCPServer, prompts []P) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	live := map[string]string{}
	for _, tool := range Tools(t, ToolsListJSON(t, s)) {
		live[tool["name"].(string)] = tool["description"].(string)
	}
	var got, want []string
	for _, tool := range m.Tools {
		got = append(got, tool.Name+": "+tool.Description)
	}
	for name, d := range live {
		want = append(want, name+": "+FirstSentence(d))
	}
	sameLines(t, "tools", got, want)
	got, want = nil, nil
	for _, p := range m.Prompts {
		got = append(got, p.Name+"("+strings.Join(p.Arguments, ",")+"): "+p.Description+"\n"+p.Text)
	}
	for _, p := range prompts {
		name, desc, args, text := p.ManifestEntry()
		want = append(want, name+"("+strings.Join(args, ",")+"): "+desc+"\n"+text)
	}
	sameLines(t, "prompts", got, want)
	got, want = nil, nil
	res, _ := call(t, s, "prompts/list", map[string]any{})["result"].(map[string]any)
	listed, _ := res["prompts"].([]any)
	for _, p := range listed {
		got = append(got, p.(map[string]any)["name"].(string))
	}
	for _, p := range prompts {
		name, _, _, _ := p.ManifestEntry()
		want = append(want, name)
	}
	sameLines(t, "prompt names (prompts/list)", got, want)
}

// sameLines fails when the manifest's entries differ from the server's,
// showing both.
func sameLines(t testing.TB, what string, manifest, server []string) {
	t.Helper()
	sort.Strings(manifest)
	sort.Strings(server)
	if strings.Join(manifest, "\n\n") != strings.Join(server, "\n\n") {
		t.Errorf("the bundle manifest's %s differ from the server's:\n--- manifest\n%s\n--- server\n%s",
			what, strings.Join(manifest, "\n\n"), strings.Join(server, "\n\n"))
	}
}

// CheckPrompts pins s's prompts/list and prompts/get answers in the golden
// testdata/prompts.json and compares the server's MCP bundle manifest
// (packaging/<server>/manifest.json, from a server's internal package) with
// the live tools and prompts. One call per server's test.
func CheckPrompts[P ManifestPrompt](t *testing.T, s *server.MCPServer, serverName string, prompts []P) {
	t.Helper()
	t.Run("golden", func(t *testing.T) { Golden(t, "testdata/prompts.json", PromptsJSON(t, s)) })
	t.Run("bundle manifest", func(t *testing.T) {
		CheckManifest(t, "../../../packaging/"+serverName+"/manifest.json", s, prompts)
	})
}

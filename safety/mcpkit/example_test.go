package mcpkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
)

// renameArgs are the arguments of the example tool. A required argument
// is a plain field; an optional one is a pointer, so that absent and zero
// differ.
type renameArgs struct {
	From   string `json:"from"`
	To     string `json:"to"`
	DryRun *bool  `json:"dry_run"`
}

// A tool is a definition (NewTool: name, literal description, the four
// annotations, the input schema) and a handler (Handle: strict decoding
// into the argument struct, then the body, which answers with an
// OperationResult). CheckTool verifies that the schema describes the
// struct. The calls below go through the server as a client's would.
func ExampleHandle() {
	rename := server.ServerTool{
		Tool: mcpkit.NewTool("rename_file",
			"Rename a file inside the workspace. Refuses to overwrite.",
			mcpkit.Annotations{Title: "Rename a file", Destructive: false, Idempotent: false},
			json.RawMessage(`{"type":"object","properties":{`+
				`"from":{"type":"string","description":"The file to rename."},`+
				`"to":{"type":"string","description":"Its new name."},`+
				`"dry_run":{"type":"boolean","description":"Only say what would happen."}`+
				`},"required":["from","to"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle("rename_file", nil,
			func(_ context.Context, _ mcp.CallToolRequest, a renameArgs) result.OperationResult {
				start := time.Now()
				if a.To == "" {
					return result.With("rename_file", result.InvalidRequest, "to must name the new file", nil, start)
				}
				if a.DryRun != nil && *a.DryRun {
					return result.Success("rename_file", "would rename "+a.From+" to "+a.To, nil, start)
				}
				return result.Success("rename_file", "renamed "+a.From+" to "+a.To, nil, start)
			}),
	}
	if err := mcpkit.CheckTool(rename); err != nil {
		fmt.Println(err)
		return
	}
	srv := mcpkit.NewServer("example", "1", "An example server.")
	srv.AddTools(rename)

	for _, args := range []string{
		`{"from":"a.txt","to":"b.txt","dry_run":true}`,
		`{"from":"a.txt","to":""}`,
		`{"from":"a.txt","to":"b.txt","force":true}`,
		`{"from":"a.txt","to":7}`,
	} {
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rename_file","arguments":` + args + `}}`
		resp, _ := json.Marshal(srv.HandleMessage(context.Background(), json.RawMessage(call)))
		var r struct {
			Result struct {
				IsError           bool                   `json:"isError"`
				StructuredContent result.OperationResult `json:"structuredContent"`
			} `json:"result"`
		}
		_ = json.Unmarshal(resp, &r)
		fmt.Printf("isError=%v %s: %s\n", r.Result.IsError, r.Result.StructuredContent.Code, r.Result.StructuredContent.Reason)
	}
	// Output:
	// isError=false OK: would rename a.txt to b.txt
	// isError=true INVALID_REQUEST: to must name the new file
	// isError=true INVALID_REQUEST: unknown argument "force"; this tool accepts only the arguments in its schema, with names spelled exactly as there
	// isError=true INVALID_REQUEST: argument "to" must be of type string
}

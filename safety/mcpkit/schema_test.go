package mcpkit

import (
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Every tool mcpkit builds itself, and every tool of its test server,
// has an input schema that describes its argument struct.
func TestEveryToolSchemaMatchesItsArguments(t *testing.T) {
	if err := CheckTools(testServer(io.Discard)); err != nil {
		t.Fatal(err)
	}
	if err := CheckTool(ContextSummaryTool(nil, nil, nil)); err != nil {
		t.Fatal(err)
	}
}

type driftArgs struct {
	Name  string   `json:"name"`
	Count *int     `json:"count"`
	Tags  []string `json:"tags"`
	Opts  *struct {
		Force *bool `json:"force"`
	} `json:"opts"`
}

// driftSchema describes driftArgs; each case below breaks it one way.
const driftSchema = `{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer"},` +
	`"tags":{"type":"array","items":{"type":"string"}},` +
	`"opts":{"type":"object","properties":{"force":{"type":"boolean"}},"additionalProperties":false}},` +
	`"required":["name"],"additionalProperties":false}`

func TestCheckInputSchemaFindsDrift(t *testing.T) {
	for _, c := range []struct {
		name, old, new string // the schema is driftSchema with old replaced by new
		want           string // in the error; "" means no error
	}{
		{"matching schema passes", "", "", ""},
		{"property without a field", `"count":{"type":"integer"}`, `"count":{"type":"integer"},"limit":{"type":"integer"}`, `property "limit" has no field`},
		{"field without a property", `"count":{"type":"integer"},`, ``, `field Count ("count") is not a property`},
		{"misspelt property", `"tags":`, `"tag":`, `property "tag" has no field`},
		{"string field typed integer", `"name":{"type":"string"}`, `"name":{"type":"integer"}`, `arguments.name: the schema says type integer`},
		{"integer field typed number", `"count":{"type":"integer"}`, `"count":{"type":"number"}`, `arguments.count: the schema says type number`},
		{"property without a type", `"name":{"type":"string"}`, `"name":{}`, `arguments.name: the schema says type <nil>`},
		{"array items of the wrong type", `"items":{"type":"string"}`, `"items":{"type":"integer"}`, `arguments.tags[]: the schema says type integer`},
		{"nested property drift", `"force":{"type":"boolean"}`, `"forse":{"type":"boolean"}`, `arguments.opts: property "forse" has no field`},
		{"nested object open to unknown names", `{"force":{"type":"boolean"}},"additionalProperties":false}`, `{"force":{"type":"boolean"}}}`, `arguments.opts: the schema must say additionalProperties:false`},
		{"arguments open to unknown names", `"required":["name"],"additionalProperties":false`, `"required":["name"]`, `arguments: the schema must say additionalProperties:false`},
		{"required pointer field", `"required":["name"]`, `"required":["name","count"]`, `"count" is required, but field Count is a pointer`},
		{"optional plain field", `"required":["name"]`, `"required":[]`, `"name" is optional, but field Name cannot tell absent from zero`},
		{"required name that is not a property", `"required":["name"]`, `"required":["name","nmae"]`, `"nmae" is required but is not a property`},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := driftSchema
			if c.old != "" {
				if !strings.Contains(schema, c.old) {
					t.Fatalf("the case edits %q, which driftSchema does not contain", c.old)
				}
				schema = strings.Replace(schema, c.old, c.new, 1)
			}
			err := CheckInputSchema(json.RawMessage(schema), reflect.TypeFor[driftArgs]())
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected drift: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("no drift found in %s", schema)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// encoding/json reads a []byte from a base64 string and a json.Number
// from a number: the schema must say so.
func TestCheckInputSchemaFollowsEncodingJSON(t *testing.T) {
	type args struct {
		Blob  []byte      `json:"blob"`
		Count json.Number `json:"count"`
	}
	ok := `{"type":"object","properties":{"blob":{"type":"string"},"count":{"type":"number"}},"required":["count"],"additionalProperties":false}`
	if err := CheckInputSchema(json.RawMessage(ok), reflect.TypeFor[args]()); err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(ok, `"blob":{"type":"string"}`, `"blob":{"type":"array"}`, 1)
	if err := CheckInputSchema(json.RawMessage(wrong), reflect.TypeFor[args]()); err == nil {
		t.Fatal("a []byte described as an array passed")
	}
}

// CheckTool learns a Handle handler's argument type without running its
// body, and refuses a handler built otherwise, which does not decode
// strictly.
func TestCheckToolAsksHandleWithoutRunningTheBody(t *testing.T) {
	ran := false
	handled := server.ServerTool{
		Tool: NewTool("counted", "Counts its runs.", Annotations{}, noArgsSchema),
		Handler: Handle("counted", nil, func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
			ran = true
			return result.With("counted", result.OK, "ran", nil, time.Time{})
		}),
	}
	if err := CheckTool(handled); err != nil || ran {
		t.Fatalf("CheckTool: %v; the body ran: %v", err, ran)
	}
	raw := server.ServerTool{
		Tool: NewTool("raw", "A handler of its own.", Annotations{}, noArgsSchema),
		Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return ToResult(result.With("raw", result.OK, "ran", nil, time.Time{})), nil
		},
	}
	if err := CheckTool(raw); err == nil || !strings.Contains(err.Error(), "not built with mcpkit.Handle") {
		t.Fatalf("CheckTool accepted a handler not built with Handle: %v", err)
	}
}

// Package approvaltest is test support for questions asked through
// safety/approval: a scripted person at the client, the protocol eras a
// client may speak, and an in-process client that answers as that person.
// It is for _test.go files only, like safety/mcpkit/mcpkittest: no non-test
// code may import it (safety/mcpkit's TestOnlyMcpkitImportsMcpGo checks this
// for the safety module).
package approvaltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Person is a scripted elicitation handler: the person at the client. It
// records each question (message and schema), may run Hook (the world
// changing while the question is open), never answer (Block, until the
// request ends) or wait, then answers with Action and, on accept, Answer.
// Set the fields before the first question or through Set.
type Person struct {
	Action mcp.ElicitationResponseAction
	Answer string
	Block  bool          // never answer (until the request ends)
	Wait   time.Duration // answer only after this long
	Hook   func()        // runs before answering

	mu       sync.Mutex
	messages []string
	schemas  []any
}

// Accepts is a person who accepts every question with answer.
func Accepts(answer string) *Person {
	return &Person{Action: mcp.ElicitationResponseActionAccept, Answer: answer}
}

// Declines is a person who declines every question.
func Declines() *Person {
	return &Person{Action: mcp.ElicitationResponseActionDecline}
}

// Set changes how the person answers the next question: action and answer,
// no block, no wait, no hook.
func (p *Person) Set(action mcp.ElicitationResponseAction, answer string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Action, p.Answer, p.Block, p.Wait, p.Hook = action, answer, false, 0, nil
}

// Messages is the text of every question the person was shown, in order.
func (p *Person) Messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.messages...)
}

// Schemas is the requested schema of every question, in order.
func (p *Person) Schemas() []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]any(nil), p.schemas...)
}

// Asked is how many questions the person was shown.
func (p *Person) Asked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.messages)
}

// Elicit answers one question as scripted; it implements
// client.ElicitationHandler.
func (p *Person) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.mu.Lock()
	p.messages = append(p.messages, req.Params.Message)
	p.schemas = append(p.schemas, req.Params.RequestedSchema)
	action, answer, block, wait, hook := p.Action, p.Answer, p.Block, p.Wait, p.Hook
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	time.Sleep(wait)
	r := &mcp.ElicitationResult{}
	r.Action = action
	if action == mcp.ElicitationResponseActionAccept {
		r.Content = map[string]any{"answer": answer}
	}
	return r, nil
}

// Era is a client's protocol; Name reads well in t.Run.
type Era struct{ Name, Version string }

// Classic asks with the elicitation/create request.
var Classic = Era{"classic", "2025-06-18"}

// Multi asks with the 2026-07-28 multi round-trip (an input request the
// client answers by calling the tool again).
var Multi = Era{"2026-07-28", mcp.ProtocolVersion20260728}

// Eras is every protocol a test should ask in: Classic, then Multi.
var Eras = []Era{Classic, Multi}

// Connect starts an in-process client of srv speaking era's protocol and
// initializes it; when p is not nil the client declares elicitation and p
// answers. The client is closed when the test ends.
func Connect(t testing.TB, srv *server.MCPServer, era Era, p *Person) *client.Client {
	t.Helper()
	opts := []client.ClientOption{client.WithProtocolVersion(era.Version)}
	if p != nil {
		opts = append(opts, client.WithElicitationHandler(p))
	}
	c, err := client.NewInProcessClientWithOptions(srv, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = era.Version
	if p != nil {
		init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

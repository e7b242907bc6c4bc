package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// person is the demo's scripted user: the client's elicitation handler. A
// real client shows the server's form to the user, never to the model; the
// demo answers it from a queue and prints the question as the person would
// read it. A question nobody queued an answer for is answered "cancel" and
// counted, so the demo fails when a server asks where it should not.
type person struct {
	mu         sync.Mutex
	answers    []string
	asked      int
	unexpected int
}

// expect queues the answers to the next questions.
func (p *person) expect(answers ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers = append(p.answers, answers...)
}

// counts reports how many questions were asked, how many of them nobody
// expected, and how many queued answers are still unused.
func (p *person) counts() (asked, unexpected, unused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked, p.unexpected, len(p.answers)
}

// forget drops unused answers, so one step's script cannot answer the next.
func (p *person) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers = nil
}

// Elicit answers one elicitation/create request.
func (p *person) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	fmt.Println("       the server asks the person (the client shows this form to the user, not to the model):")
	for _, line := range strings.Split(req.Params.Message, "\n") {
		fmt.Printf("       | %s\n", line)
	}
	fmt.Printf("       | %s\n", offered(req.Params.RequestedSchema))
	r := &mcp.ElicitationResult{}
	if len(p.answers) == 0 {
		p.unexpected++
		fmt.Println("       the person did not expect a question here and dismisses it (cancel)")
		r.Action = mcp.ElicitationResponseActionCancel
		return r, nil
	}
	answer := p.answers[0]
	p.answers = p.answers[1:]
	fmt.Printf("       the person answers: %s\n", answer)
	r.Action = mcp.ElicitationResponseActionAccept
	r.Content = map[string]any{"answer": answer}
	return r, nil
}

// offered renders the answers the form's single enum field offers, as a
// client would draw its buttons.
func offered(schema any) string {
	var s struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(schema)
	if json.Unmarshal(b, &s) != nil || len(s.Properties["answer"].Enum) == 0 {
		return "(the form has no answer field: " + oneLine(string(b), 200) + ")"
	}
	return "[" + strings.Join(s.Properties["answer"].Enum, "] [") + "]"
}

// callAsked is call for a step where the person must be asked exactly
// once and answer: the result must say so in detail.approval.
func (s *session) callAsked(label, tool string, args map[string]any, want, answer string) opResult {
	s.person.expect(answer)
	r := s.call(label, tool, args, want)
	var d struct {
		Approval *struct {
			Asked  bool   `json:"asked"`
			By     string `json:"by"`
			Answer string `json:"answer"`
		} `json:"approval"`
	}
	_ = json.Unmarshal(r.Detail, &d)
	if d.Approval == nil || !d.Approval.Asked || d.Approval.By != "human" {
		fmt.Printf("FAIL %s: %s: detail.approval does not say the person was asked and answered: %s\n", s.name, label, oneLine(string(r.Detail), 200))
		failed = true
	} else {
		fmt.Printf("       detail.approval: asked by the server, answered by the %s (%s)\n", d.Approval.By, d.Approval.Answer)
	}
	return r
}

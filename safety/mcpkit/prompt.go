package mcpkit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Prompt is a slash command a server offers: fixed text, written in the
// server, with ${arguments.NAME} placeholders that Render fills from the
// person's validated arguments. The text never holds anything read from
// disk, so a prompt cannot carry a file's instructions to the model.
//
// The same Text, placeholders included, is the prompt's text in the
// server's MCP bundle manifest (packaging/<server>/manifest.json), where a
// test compares the two.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Args        []PromptArg
	Text        string
}

// ArgKind is what a prompt argument may hold.
type ArgKind int

const (
	// ArgNumber is a decimal number at least 0.
	ArgNumber ArgKind = iota
	// ArgInteger is a whole number at least 0.
	ArgInteger
	// ArgLine is one line of printable text (no control or bidi characters),
	// at most MaxPromptLine bytes.
	ArgLine
)

// MaxPromptLine bounds an ArgLine argument.
const MaxPromptLine = 256

// PromptArg is one argument of a Prompt. An absent optional argument is
// replaced by Default.
type PromptArg struct {
	Name        string
	Description string
	Required    bool
	Kind        ArgKind
	Default     string
}

// ManifestEntry is the prompt as an MCP bundle manifest lists it: name,
// description, argument names in order, and Text with its placeholders.
func (p Prompt) ManifestEntry() (name, description string, args []string, text string) {
	for _, a := range p.Args {
		args = append(args, a.Name)
	}
	return p.Name, p.Description, args, p.Text
}

// placeholder is how Text names an argument.
func placeholder(name string) string { return "${arguments." + name + "}" }

// Render checks args and returns Text with every placeholder filled. It
// refuses an unknown argument, a missing required one, and a value that is
// not of its kind, naming the argument and what it must be.
func (p Prompt) Render(args map[string]string) (string, error) {
	known := map[string]bool{}
	for _, a := range p.Args {
		known[a.Name] = true
	}
	for name := range args {
		if !known[name] {
			return "", fmt.Errorf("prompt %s has no argument %q", p.Name, name)
		}
	}
	text := p.Text
	for _, a := range p.Args {
		v, ok := args[a.Name]
		if !ok || v == "" {
			if a.Required {
				return "", fmt.Errorf("prompt %s needs the argument %q", p.Name, a.Name)
			}
			v = a.Default
		} else if err := a.check(v); err != nil {
			return "", fmt.Errorf("prompt %s: argument %q %v", p.Name, a.Name, err)
		}
		text = strings.ReplaceAll(text, placeholder(a.Name), v)
	}
	return text, nil
}

// check refuses a value that is not of the argument's kind.
func (a PromptArg) check(v string) error {
	switch a.Kind {
	case ArgNumber:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(v, "xXpP_") {
			return fmt.Errorf("must be a decimal number, 0 or more")
		}
	case ArgInteger:
		if n, err := strconv.ParseUint(v, 10, 32); err != nil || strconv.FormatUint(n, 10) != v {
			return fmt.Errorf("must be a whole number, 0 or more")
		}
	case ArgLine:
		if len(v) > MaxPromptLine {
			return fmt.Errorf("must be at most %d bytes", MaxPromptLine)
		}
		for _, r := range v {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == unicode.ReplacementChar {
				return fmt.Errorf("must be one line of printable text")
			}
		}
	}
	return nil
}

// serverPrompt is the prompt as mcp-go serves it.
func (p Prompt) serverPrompt() server.ServerPrompt {
	opts := []mcp.PromptOption{mcp.WithPromptTitle(p.Title), mcp.WithPromptDescription(p.Description)}
	for _, a := range p.Args {
		aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
		if a.Required {
			aopts = append(aopts, mcp.RequiredArgument())
		}
		opts = append(opts, mcp.WithArgument(a.Name, aopts...))
	}
	return server.ServerPrompt{
		Prompt: mcp.NewPrompt(p.Name, opts...),
		Handler: func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			text, err := p.Render(req.Params.Arguments)
			if err != nil {
				return nil, err
			}
			return mcp.NewGetPromptResult(p.Description,
				[]mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text))}), nil
		},
	}
}

// AddPrompts registers ps on m and announces the prompts capability.
func AddPrompts(m *server.MCPServer, ps ...Prompt) {
	for _, p := range ps {
		m.AddPrompts(p.serverPrompt())
	}
}

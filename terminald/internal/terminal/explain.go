package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// explainAction is explain_command's name: the tool's and its results'
// action.
const explainAction = "explain_command"

// explainTool is explain_command: the decision run_command would make,
// with nothing run.
func (s *Server) explainTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool(explainAction,
		"Explain how run_command would judge a command line, without running anything: the decision (allow, ask or deny; ask means a person must approve the command before it runs, and rule names the list or rule that asks), the rule that decided and its reason, the argv after parsing, the executable it would resolve to, the confinement, limits and working directory it would run with, and the risk radar's view of arguments that name paths in the jail. Use it to find out why a command is refused and what to run instead.",
		mcpkit.Annotations{Title: "Explain a command decision", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"command":{"type":"string","minLength":1,"maxLength":8192,"description":"The command line to judge."}`+
			`},"required":["command"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle(explainAction, s.o.Logger, s.explainCommand)}
}

type explainArgs struct {
	Command string `json:"command"`
}

// PathView is the radar's view of one argument that names a path.
type PathView struct {
	Arg        string           `json:"arg"`
	Path       string           `json:"path"`
	Exists     bool             `json:"exists"`
	Descriptor *risk.Descriptor `json:"descriptor,omitempty"`
	Refused    string           `json:"refused,omitempty"`
}

// ExplainDetail is explain_command's detail.
type ExplainDetail struct {
	Decision       string     `json:"decision"` // allow | ask | deny
	Code           string     `json:"code"`
	Rule           string     `json:"rule"`
	Reason         string     `json:"reason"`
	Name           string     `json:"name,omitempty"`
	Argv           []string   `json:"argv"`
	Executable     string     `json:"executable,omitempty"`
	Cwd            string     `json:"cwd"`
	Confinement    string     `json:"confinement"`
	TimeoutSeconds int        `json:"timeout_seconds"`
	MaxOutputBytes int        `json:"max_output_bytes"`
	Env            []string   `json:"env"`
	Paths          []PathView `json:"paths"`
	// Guarantee says what keeps the machine safe for this command.
	Guarantee string `json:"guarantee"`
}

// What explain_command says keeps the machine safe, per profile.
const (
	guaranteeAllowlist = "profile allowlist: only allowlisted programs run, never a shell, wrapper or interpreter; " +
		"argument rules refuse their dangerous options; the kernel confinement is a second wall"
	guaranteeSandbox = "profile sandbox: the kernel boundary is the guarantee (namespaces, Landlock, seccomp, no capabilities, " +
		"resource limits): whatever the command runs stays inside the jail and its view; the allowlist and argument rules " +
		"only decide what may be asked for"
)

// maxPathViews bounds the radar views in one explanation.
const maxPathViews = 32

func (s *Server) explainCommand(ctx context.Context, _ mcp.CallToolRequest, a explainArgs) result.OperationResult {
	start := time.Now()
	ev := s.run.Evaluate(a.Command)
	d := ev.Decision
	x := ExplainDetail{Decision: "allow", Code: string(d.Code), Rule: d.Rule, Reason: d.Reason, Name: d.Name,
		Argv: d.Argv, Executable: ev.Executable, Cwd: s.o.Root.Path(), Confinement: s.run.Confinement(),
		TimeoutSeconds: int(s.o.Timeout / time.Second), MaxOutputBytes: s.o.MaxOutputBytes, Env: ev.Env,
		Paths: []PathView{}, Guarantee: guaranteeAllowlist}
	if s.o.Sandboxed {
		x.Guarantee = guaranteeSandbox
	}
	if x.Argv == nil {
		x.Argv = []string{}
	}
	if !ev.Allowed() {
		code, reason := result.Classify(ev.Err)
		x.Decision, x.Code, x.Reason = "deny", string(code), reason
		if d.Ask && code == result.NeedsExplicitRequest {
			x.Decision = "ask"
		}
	}
	if len(d.Argv) > 1 {
		x.Paths = s.pathViews(ctx, ".", d.Argv[1:])
	}
	summary := fmt.Sprintf("%s would be refused (%s): %s", quoteCmd(a.Command), x.Code, x.Reason)
	switch x.Decision {
	case "ask":
		summary = fmt.Sprintf("%s would run %s only once a person approves it (%s): %s; nothing was run",
			quoteCmd(a.Command), x.Executable, x.Rule, x.Reason)
	case "allow":
		summary = fmt.Sprintf("%s would run %s in the jail (%s); nothing was run", quoteCmd(a.Command), x.Executable, x.Rule)
	}
	return result.Success(explainAction, summary, x, start)
}

func quoteCmd(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return "`" + s + "`"
}

// pathViews asks the radar about arguments that look like paths: words
// that are not options and either exist in the jail or contain a '/' or '.'.
// A relative word is taken relative to base, the jail-relative working
// directory. Nothing is opened but anchored lstat calls and the radar's
// rule lookup. Each existing HIGH_RISK path is declared to mcpkit.LinkRisk,
// so the answer also carries a resource_link to its descriptor.
func (s *Server) pathViews(ctx context.Context, base string, args []string) []PathView {
	views := []PathView{}
	for _, w := range args {
		if len(views) >= maxPathViews {
			break
		}
		if w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		p := w
		if base != "." && !path.IsAbs(w) {
			p = path.Join(base, w)
		}
		rel, err := s.o.Root.Clean(p)
		if err != nil {
			if strings.ContainsAny(w, "/.") {
				_, reason := result.Classify(err)
				views = append(views, PathView{Arg: w, Refused: reason})
			}
			continue
		}
		info, lerr := s.o.Root.Lstat(rel)
		exists := lerr == nil
		if !exists && !strings.ContainsAny(w, "/.") {
			continue
		}
		v := PathView{Arg: w, Path: rel, Exists: exists}
		if s.o.Radar != nil && rel != "." {
			if desc, err := s.o.Radar.ClassifyPath(s.o.Root.Path(), rel, exists && info.IsDir()); err == nil {
				v.Descriptor = &desc
				if exists {
					mcpkit.LinkRisk(ctx, desc)
				}
			}
		}
		views = append(views, v)
	}
	return views
}

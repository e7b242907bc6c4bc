package command_test

import (
	"fmt"

	"github.com/bastion-mcp/bastion/safety/command"
)

// Policy.Check parses a command line without a shell and decides whether
// it may run: deny wins, anything not allowlisted is refused, and every
// refusal carries a code, the list or rule that decided, and a reason
// written for the model.
func ExamplePolicy_Check() {
	p := &command.Policy{
		Allow: []string{"ls", "git"},
		Rules: []command.Rule{{
			Command:  "git",
			DenyArgs: []string{"push --force"},
			Reason:   "force-pushing rewrites shared history; push without --force",
		}},
	}
	for _, line := range []string{
		`ls -la src`,
		`git push -f origin main`,
		`bash -c "rm -rf ~"`,
		`cat notes.txt`,
		`ls; rm -rf /`,
	} {
		d, err := p.Check(line)
		fmt.Printf("%-26s allowed=%-5v code=%s rule=%s\n", line, err == nil, d.Code, d.Rule)
	}
	d, _ := p.Check(`git push -f origin main`)
	fmt.Println(d.Reason)
	// Output:
	// ls -la src                 allowed=true  code=OK rule=terminal.allowlist
	// git push -f origin main    allowed=false code=POLICY_DENIED rule=terminal.rules[0] git "push --force"
	// bash -c "rm -rf ~"         allowed=false code=POLICY_DENIED rule=builtin.never
	// cat notes.txt              allowed=false code=POLICY_DENIED rule=terminal.allowlist
	// ls; rm -rf /               allowed=false code=POLICY_DENIED rule=parse
	// force-pushing rewrites shared history; push without --force
}

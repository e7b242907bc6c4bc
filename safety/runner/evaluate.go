package runner

import (
	"strings"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// Evaluation is the pipeline's judgement of a command line before
// anything is opened, recorded or run.
type Evaluation struct {
	// Decision is the command policy's decision; its Argv is what would
	// run (empty when the line does not parse).
	Decision command.Decision
	// Executable is the program Argv[0] resolves to on the scrubbed PATH,
	// "" when the policy refused or nothing was found.
	Executable string
	// Err is why the line would not run: the policy's refusal, or the
	// executable not found on the PATH (or named by a path). Nil when it
	// would run (given a working directory inside the jail).
	Err error
	// policyErr is the policy's refusal alone (never an ask decision's);
	// Run reports it before the working directory, and the resolution after.
	policyErr error
	// askErr is an ask decision's error (NEEDS_EXPLICIT_REQUEST), set only
	// when nothing else refuses the line (the executable resolved): the
	// line then runs only if approve lets it.
	askErr error
	// Env are the names of the variables the command would get, in order:
	// PATH, HOME, LANG, TMPDIR, then the program's hardening variables
	// (sandbox.ProgramEnv), the caches' and the operator's pass-through.
	Env []string
}

// Allowed reports whether the line would run.
func (e Evaluation) Allowed() bool { return e.Err == nil }

// Evaluate judges line as Run would, without opening, recording or running
// anything: the policy check, then the executable's resolution. An ask
// decision (Decision.Ask) is resolved too, so the question can name the
// executable, but its Err stays the decision's NEEDS_EXPLICIT_REQUEST:
// it does not run unless a person approves it.
func (r *Runner) Evaluate(line string) Evaluation {
	d, err := r.o.Policy.Check(line)
	ev := Evaluation{Decision: d, Err: err, policyErr: err, Env: []string{"PATH", "HOME", "LANG", "TMPDIR"}}
	for _, kv := range r.env(d.Name) {
		name, _, _ := strings.Cut(kv, "=")
		ev.Env = append(ev.Env, name)
	}
	if d.Ask {
		ev.policyErr = nil
	}
	if ev.policyErr != nil {
		return ev
	}
	exe, rerr := command.Resolve(d.Argv[0], r.o.Path)
	if rerr != nil {
		ev.Err = rerr
		return ev
	}
	ev.Executable = exe
	if d.Ask {
		ev.askErr = err // ev.Err stays the decision's error
	}
	return ev
}

// env returns the extra variables of a run of the program named name:
// its hardening variables, the caches' and the operator's pass-through
// (hardening wins). With [terminal.sandbox] git_identity, git's global
// configuration is the identity file (user.name and user.email only,
// written by terminald, read-only in the view) instead of /dev/null.
func (r *Runner) env(name string) []string {
	hard := sandbox.ProgramEnv(name)
	if r.o.GitIdentityFile != "" {
		for i, kv := range hard {
			if strings.HasPrefix(kv, "GIT_CONFIG_GLOBAL=") {
				hard[i] = "GIT_CONFIG_GLOBAL=" + r.o.GitIdentityFile
			}
		}
	}
	return sandbox.MergeEnv(append(hard, r.o.Caches.Env...), r.o.PassEnv)
}

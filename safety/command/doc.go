// Package command parses a command line without a shell and decides, by a
// deny-first policy, whether the program and its arguments may run.
//
// It never runs anything: execution and confinement belong to
// safety/sandbox. It only parses, normalises and decides. It also holds
// the command policies Bastion ships (Standard and Dev in shipped.go),
// from which `make policy-docs` generates the policy files' [terminal]
// command sections.
//
// What it refuses, and why:
//
//   - Shell syntax. There is no shell, so unquoted operators (; | & && ||
//     > >> < << ( ) backticks $( ) and newlines) are refused with
//     POLICY_DENIED and a reason that says so. Quoted, they are literal text:
//     `echo "a;b"` runs echo with the argument a;b.
//   - Expansions. Nothing a shell would expand is passed on silently:
//     $VAR, ${VAR}, $(cmd) and `cmd` are refused unquoted and inside double
//     quotes (single quotes make them literal); so are unquoted glob
//     characters (* ? [), brace expansion ({a,b}, {1..3}), a leading ~ and a
//     leading # (a comment in a shell). Globs are refused rather than
//     expanded because an expansion would have to be done inside the jail,
//     by this package, and its result would still need listing; the reason
//     tells the model to quote the pattern or name the files.
//   - Ambiguous quoting. The line is split twice, by this package's POSIX
//     scanner and by go-shellwords; if the two disagree (for example a
//     backslash escape inside double quotes, or \n outside quotes) the line
//     is refused with INVALID_REQUEST instead of guessing.
//   - Malformed input (INVALID_REQUEST): empty lines, lines over 8 KiB, more
//     than 256 arguments, invalid UTF-8, NUL and other control or invisible
//     formatting characters (tab is allowed as a separator), unbalanced quotes.
//   - Programs given by path (./ls, /tmp/x/ls) and leading environment
//     assignments (FOO=1 ls): commands run by name, resolved only through
//     the scrubbed PATH (see Resolve).
//   - Anything not allowlisted; anything denylisted even if allowlisted; and
//     a fixed set of shells, wrappers and interpreters that no policy in the
//     allowlist profile can allow, because each runs an arbitrary command
//     named in its arguments (the shells, wrappers and interpreters of
//     Programs, the one table of programs that run code they are given;
//     its tools are allowed, with a warning from check). Only the sandbox
//     profile (Policy.Sandboxed), where the kernel boundary is the
//     guarantee, may allowlist them; deny lists and argument rules still
//     apply there.
//   - Names are compared after one normalisation, Name, applied alike to
//     argv[0] and to allowlist, denylist and rule entries: an operator
//     writes python3 or gawk as typed, and it covers python3.11 and awk.
//   - Arguments that match a deny rule. Rules see through --opt=val versus
//     --opt val, unique-prefix abbreviations of long options (--upl is
//     --upload-pack), bundled short flags (-xfC), attached values
//     (-ccore.pager=x), the old tar key form (tar xfI a.tar prog), option
//     order and the -- end of options. Where the tables do not know an
//     option, the matcher errs toward refusing: an unknown long option that
//     is a prefix of a denied one matches it, a value that starts with '-' is
//     also examined as an option, and the letters after an attached value are
//     also examined as flags.
//   - git subcommands it does not know (they would be aliases from a
//     repository's configuration, or git-<name> programs).
//
// What it does not do: it cannot see what a program does with files it is
// allowed to touch. A git repository whose configuration or hooks the agent
// could write (or that arrived malicious) can make git run programs; the
// rules refuse writes through paths with a .git component and the obvious
// git switches, but the sandbox must still confine whatever runs.
package command

// Package risk is the risk radar: it tells an agent, before it acts on a
// file, how careful to be with it and why.
//
// A classification comes from rules (gitignore patterns with a category,
// RISK, VALUE or IGNORE, a priority, a reason and a suggested action) and,
// when the file is read, from a bounded content scan (secret shapes from
// the one pattern table Bastion has, safety/redact's, which also redacts
// command output; credential-like keys and connection strings in config
// files; script headers; credential keyword density).
//
// All file access goes through package jail: on Linux every open is
// openat2-anchored beneath the root, never follows a symbolic link and
// never crosses into another mount.
//
// Rule sources, in precedence order for ties (later wins a tie):
//
//  1. built-in packs, embedded from packs/*.toml: always-on packs, and
//     per-ecosystem packs, each enabled when one of its marker files exists
//     at the root (docs/radar.md lists them; a test keeps that list equal
//     to the embedded files);
//  2. operator rule files named in Options.RuleFiles ([radar] rule_files);
//  3. the project-local .bastion-risk.toml at a root.
//
// Within one file, the rules of one category behave exactly like the lines
// of a .gitignore (see package gitignore): the last matching line decides,
// "!" re-includes, and nothing under a matched directory can be
// re-included. Across all matches, RISK beats VALUE beats IGNORE, then the
// higher priority wins, then the later source, then the later file and
// rule. Every matching rule is reported, so a RISK answer is never hidden.
//
// The package refuses to do some things on purpose. It never blocks an
// operation (servers' policies do that); it never follows a symbolic link
// while walking or scanning; it never puts a secret value in a descriptor,
// a summary or a log line (findings name the kind of secret and its line,
// never its text); it never lets a project-local file hide a RISK answer
// from the built-in or operator rules (matchers are per file, and
// categories never cancel each other); and it never reads more of a file
// than Options.ScanBytes.
package risk

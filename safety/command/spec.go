package command

import "strings"

// argKind says whether a long option takes a value.
type argKind uint8

const (
	noArg  argKind = iota
	reqArg         // --opt=val or --opt val
	optArg         // only --opt=val
)

// optTable is what the matcher knows about one command's (or one git
// subcommand's) options. Knowing too little is safe: an unknown option is
// treated as a flag that takes no value, so nothing after it is hidden.
// Knowing a value where there is none would hide the next word, so only
// options certain to take a value are listed as such.
type optTable struct {
	valueShort    string             // short options that take a value, attached or as the next word
	optionalShort string             // short options whose value can only be attached (-O<pager>)
	long          map[string]argKind // long options without the leading "--"
	alias         map[string]string  // spelling → canonical spelling ("-o" → "--output")
}

// cmdSpec is the per-command knowledge, keyed by normalised name.
type cmdSpec struct {
	opts optTable
	// subs lists the known subcommands (git); a nil table means "known,
	// options not described".
	subs map[string]*optTable
	// strictSubs refuses subcommands not in subs.
	strictSubs bool
	// singleDash: every word starting with '-' is one option name, with no
	// bundling and no '=' (find's predicates).
	singleDash bool
	// oldStyle: a first word without '-' is a bundle of option letters whose
	// values are the following words in order (tar xfC a.tar dir).
	oldStyle bool
}

// longs builds a long-option table from names; a trailing "=" marks a
// required value, a trailing "?" an optional (attached-only) one.
func longs(names ...string) map[string]argKind {
	m := make(map[string]argKind, len(names))
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "="):
			m[n[:len(n)-1]] = reqArg
		case strings.HasSuffix(n, "?"):
			m[n[:len(n)-1]] = optArg
		default:
			m[n] = noArg
		}
	}
	return m
}

func merge(ms ...map[string]argKind) map[string]argKind {
	out := map[string]argKind{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func aliasMap(pairs ...string) map[string]string {
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// Options shared by git's diff-producing commands (diff, log, show, ...).
var gitDiffLongs = longs("output=", "ext-diff", "no-ext-diff", "textconv", "no-textconv",
	"output-indicator-new=", "output-indicator-old=", "output-indicator-context=",
	"patch", "no-patch", "unified=", "raw", "patch-with-raw", "stat?", "numstat", "shortstat",
	"name-only", "name-status", "color?", "no-color", "word-diff?", "word-diff-regex=",
	"color-words?", "relative?", "text", "ignore-all-space", "ignore-space-change", "abbrev?",
	"find-renames?", "find-copies?", "diff-filter=", "src-prefix=", "dst-prefix=",
	"no-prefix", "line-prefix=", "orderfile=", "cached", "staged", "no-index", "exit-code",
	"quiet", "check", "full-index", "binary", "submodule?", "anchored=", "diff-algorithm=",
	"histogram", "patience", "minimal", "function-context", "dirstat?", "summary", "compact-summary",
	"pickaxe-all", "pickaxe-regex", "irreversible-delete", "cc", "combined-all-paths", "merge", "merges")

var gitLogLongs = merge(gitDiffLongs, longs("oneline", "pretty?", "format=", "graph", "all",
	"branches?", "tags?", "remotes?", "author=", "committer=", "grep=", "since=", "until=",
	"after=", "before=", "max-count=", "skip=", "reverse", "follow", "decorate?", "no-decorate",
	"first-parent", "no-merges", "date=", "left-right", "walk-reflogs", "source", "notes?",
	"show-signature", "ignore-case", "regexp-ignore-case", "extended-regexp", "fixed-strings",
	"perl-regexp", "all-match", "invert-grep", "name-rev?", "topo-order", "date-order"))

var gitDiff = &optTable{valueShort: "nSGL", optionalShort: "MCBUl", long: gitLogLongs,
	alias: aliasMap("-c", "--combined-diff", "-n", "--max-count", "-p", "--patch", "-u", "--patch")}

var gitGlobal = optTable{
	valueShort: "cC",
	long: longs("exec-path?", "git-dir=", "work-tree=", "namespace=", "super-prefix=", "config-env=",
		"list-cmds=", "attr-source=", "paginate", "no-pager", "bare", "no-replace-objects",
		"no-lazy-fetch", "no-optional-locks", "no-advice", "literal-pathspecs", "glob-pathspecs",
		"noglob-pathspecs", "icase-pathspecs", "html-path", "man-path", "info-path", "version", "help"),
	alias: aliasMap("-p", "--paginate", "-P", "--no-pager"),
}

var gitSubs = func() map[string]*optTable {
	known := []string{"add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch",
		"bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format",
		"checkout", "cherry", "cherry-pick", "clean", "clone", "commit", "commit-graph", "commit-tree",
		"count-objects", "describe", "diff", "diff-files", "diff-index", "diff-tree", "fetch",
		"for-each-ref", "format-patch", "fsck", "gc", "grep", "hash-object", "help", "init",
		"log", "ls-files", "ls-remote", "ls-tree", "merge", "merge-base", "merge-file", "merge-tree",
		"mv", "name-rev", "notes", "pull", "push", "range-diff", "read-tree", "rebase", "reflog",
		"remote", "repack", "replace", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
		"shortlog", "show", "show-branch", "show-ref", "sparse-checkout", "stash", "status",
		"submodule", "switch", "symbolic-ref", "tag", "update-index", "update-ref", "verify-commit",
		"verify-tag", "version", "whatchanged", "worktree", "write-tree", "var", "prune",
		"pack-objects", "unpack-objects", "index-pack", "verify-pack", "mktag", "mktree",
		"interpret-trailers", "column", "stripspace", "fast-export", "fast-import", "request-pull",
		"get-tar-commit-id", "pack-refs", "fmt-merge-msg", "merge-index", "mailinfo", "mailsplit",
		"patch-id", "cherry-pick", "backfill", "last-modified", "refs", "repo", "replay",
		// Known so that rules can name them; the shipped policy denies these.
		"config", "difftool", "mergetool", "filter-branch", "send-email", "daemon", "instaweb",
		"credential", "credential-cache", "credential-store", "maintenance", "hook",
		"upload-pack", "receive-pack", "upload-archive", "shell", "imap-send", "p4", "svn",
		"cvsimport", "cvsserver", "cvsexportcommit", "archimport", "quiltimport", "send-pack",
		"fetch-pack", "http-backend", "http-fetch", "http-push", "web--browse", "fsmonitor--daemon",
		"remote-ext", "remote-fd", "bugreport", "diagnose", "scalar", "sh-setup", "submodule--helper",
		"upload-archive--writer", "remote-http", "remote-https", "remote-ftp", "remote-ftps"}
	m := make(map[string]*optTable, len(known))
	for _, k := range known {
		m[k] = nil
	}
	for _, k := range []string{"diff", "log", "show", "whatchanged", "diff-tree", "diff-index",
		"diff-files", "format-patch", "range-diff", "shortlog"} {
		m[k] = gitDiff
	}
	m["format-patch"] = &optTable{valueShort: "nSGLov", optionalShort: "MCBUl",
		long:  merge(gitLogLongs, longs("output-directory=", "subject-prefix=", "cover-letter", "to=", "cc=")),
		alias: aliasMap("-o", "--output-directory", "-c", "--combined-diff")}
	remote := longs("upload-pack=", "receive-pack=", "exec=", "all", "append", "depth=", "deepen=",
		"shallow-since=", "shallow-exclude=", "unshallow", "update-shallow", "negotiation-tip=",
		"dry-run", "force", "keep", "multiple", "prune", "prune-tags", "tags", "no-tags", "jobs=",
		"recurse-submodules?", "refmap=", "server-option=", "quiet", "verbose", "progress",
		"update-head-ok", "set-upstream", "porcelain", "rebase?", "strategy=", "strategy-option=",
		"ff", "no-ff", "ff-only", "autostash", "append", "atomic", "ipv4", "ipv6", "filter=")
	m["fetch"] = &optTable{valueShort: "jo", long: remote, alias: aliasMap("-f", "--force", "-j", "--jobs")}
	m["pull"] = &optTable{valueShort: "jsXo", long: remote, alias: aliasMap("-f", "--force", "-s", "--strategy")}
	m["push"] = &optTable{valueShort: "o",
		long: longs("force", "force-with-lease?", "force-if-includes", "receive-pack=", "exec=", "repo=",
			"mirror", "delete", "prune", "all", "branches", "tags", "follow-tags", "set-upstream", "dry-run",
			"porcelain", "verbose", "quiet", "atomic", "push-option=", "signed?", "no-verify", "verify",
			"thin", "no-thin", "ipv4", "ipv6", "recurse-submodules=", "progress", "no-force-with-lease"),
		alias: aliasMap("-f", "--force", "-d", "--delete", "-u", "--set-upstream", "-n", "--dry-run",
			"-o", "--push-option", "--exec", "--receive-pack")}
	m["clone"] = &optTable{valueShort: "obujc",
		long: longs("upload-pack=", "config=", "template=", "separate-git-dir=", "reference=",
			"reference-if-able=", "origin=", "branch=", "depth=", "jobs=", "filter=", "bare", "mirror",
			"recurse-submodules?", "shallow-submodules", "single-branch", "no-single-branch",
			"no-checkout", "server-option=", "local", "shared", "no-hardlinks", "quiet", "verbose",
			"progress", "sparse", "dissociate", "shallow-since=", "shallow-exclude=", "bundle-uri=",
			"ref-format=", "also-filter-submodules", "remote-submodules", "no-tags", "revision="),
		alias: aliasMap("-u", "--upload-pack", "-c", "--config", "-o", "--origin", "-b", "--branch",
			"-j", "--jobs")}
	m["ls-remote"] = &optTable{valueShort: "o",
		long: longs("upload-pack=", "exec=", "heads", "tags", "branches", "refs", "get-url", "quiet",
			"sort=", "symref", "server-option="),
		alias: aliasMap("--exec", "--upload-pack")}
	m["archive"] = &optTable{valueShort: "o",
		long: longs("remote=", "exec=", "output=", "format=", "prefix=", "worktree-attributes", "list",
			"verbose", "add-file=", "add-virtual-file=", "mtime="),
		alias: aliasMap("-o", "--output")}
	m["grep"] = &optTable{valueShort: "efABCm", optionalShort: "O",
		long: longs("open-files-in-pager?", "count", "threads=", "max-depth=", "max-count=", "context=",
			"after-context=", "before-context=", "function-context", "ignore-case", "word-regexp",
			"invert-match", "files-with-matches", "files-without-match", "line-number", "column",
			"extended-regexp", "fixed-strings", "perl-regexp", "basic-regexp", "cached", "untracked",
			"no-index", "recurse-submodules", "only-matching", "quiet", "all-match", "and", "or", "not",
			"break", "heading", "null", "show-function", "full-name", "text", "textconv", "no-textconv",
			"exclude-standard", "no-exclude-standard", "color?", "no-color"),
		alias: aliasMap("-O", "--open-files-in-pager", "-c", "--count")}
	m["commit"] = &optTable{valueShort: "mFCct", optionalShort: "uS",
		long: longs("message=", "file=", "reuse-message=", "reedit-message=", "template=", "author=",
			"date=", "fixup=", "squash=", "cleanup=", "trailer=", "all", "amend", "no-edit", "edit",
			"no-verify", "verify", "signoff", "dry-run", "allow-empty", "allow-empty-message",
			"patch", "interactive", "only", "include", "quiet", "verbose", "status", "no-status",
			"gpg-sign?", "no-gpg-sign", "reset-author", "untracked-files?", "pathspec-from-file="),
		alias: aliasMap("-c", "--reedit-message", "-C", "--reuse-message", "-m", "--message",
			"-t", "--template")}
	m["clean"] = &optTable{valueShort: "e",
		long:  longs("force", "dry-run", "quiet", "interactive", "exclude="),
		alias: aliasMap("-f", "--force", "-n", "--dry-run", "-i", "--interactive")}
	m["reset"] = &optTable{long: longs("hard", "soft", "mixed", "merge", "keep", "quiet", "patch",
		"pathspec-from-file=", "recurse-submodules?", "no-refresh")}
	m["rebase"] = &optTable{valueShort: "sXx",
		long: longs("exec=", "interactive", "onto=", "continue", "abort", "skip", "quit", "autosquash",
			"autostash", "strategy=", "strategy-option=", "root", "rebase-merges?", "update-refs",
			"keep-base", "no-verify", "verify", "signoff", "edit-todo", "show-current-patch"),
		alias: aliasMap("-x", "--exec", "-i", "--interactive", "-s", "--strategy")}
	m["init"] = &optTable{valueShort: "b",
		long: longs("template=", "separate-git-dir=", "bare", "quiet", "shared?", "initial-branch=",
			"object-format=", "ref-format="),
		alias: aliasMap("-b", "--initial-branch")}
	m["branch"] = &optTable{valueShort: "u",
		long: longs("delete", "force", "move", "copy", "list", "all", "remotes", "set-upstream-to=",
			"unset-upstream", "contains?", "merged?", "no-merged?", "sort=", "format=", "track?",
			"show-current", "verbose", "column?", "color?"),
		alias: aliasMap("-c", "--copy", "-C", "--copy", "-d", "--delete", "-D", "--delete",
			"-m", "--move", "-M", "--move", "-f", "--force", "-u", "--set-upstream-to")}
	m["switch"] = &optTable{valueShort: "cC",
		long:  longs("create=", "force-create=", "detach", "discard-changes", "force", "merge", "orphan=", "track?"),
		alias: aliasMap("-c", "--create", "-C", "--force-create", "-f", "--force")}
	m["checkout"] = &optTable{valueShort: "bB",
		long:  longs("force", "ours", "theirs", "track?", "detach", "orphan=", "merge", "patch", "conflict="),
		alias: aliasMap("-b", "--branch", "-B", "--force-branch", "-f", "--force")}
	m["apply"] = &optTable{valueShort: "pC",
		long:  longs("unsafe-paths", "directory=", "check", "stat", "numstat", "index", "cached", "reverse", "3way", "exclude=", "include="),
		alias: aliasMap("-R", "--reverse")}
	m["rm"] = &optTable{long: longs("force", "cached", "dry-run", "quiet", "ignore-unmatch", "sparse", "pathspec-from-file="),
		alias: aliasMap("-f", "--force", "-n", "--dry-run", "-r", "--recursive", "-q", "--quiet")}
	m["help"] = &optTable{long: longs("all", "web", "man", "info", "guides", "config", "verbose"),
		alias: aliasMap("-w", "--web", "-m", "--man", "-i", "--info", "-a", "--all")}
	m["merge"] = &optTable{valueShort: "mFsX", long: longs("strategy=", "strategy-option=", "message=", "file=", "ff", "no-ff", "ff-only", "squash", "abort", "continue", "no-verify", "verify")}
	m["cherry-pick"] = &optTable{valueShort: "mX", long: longs("mainline=", "strategy=", "strategy-option=", "continue", "abort", "skip", "no-commit", "edit", "signoff")}
	m["revert"] = m["cherry-pick"]
	m["tag"] = &optTable{valueShort: "mFu", long: longs("message=", "file=", "local-user=", "delete", "force", "list", "annotate", "sign", "contains?", "sort=", "format="),
		alias: aliasMap("-d", "--delete", "-f", "--force", "-l", "--list")}
	m["blame"] = &optTable{valueShort: "LS", long: longs("contents=", "ignore-rev=", "ignore-revs-file=", "porcelain", "line-porcelain", "show-email")}
	m["stash"] = &optTable{valueShort: "m", long: longs("message=", "keep-index", "include-untracked", "all", "patch", "quiet")}
	return m
}()

var specs = map[string]*cmdSpec{
	"git": {opts: gitGlobal, subs: gitSubs, strictSubs: true},
	"tar": {oldStyle: true, opts: optTable{
		// GNU tar's value-taking short options; bsdtar's -s is left out on
		// purpose (GNU reads it as a flag, and a flag hides nothing).
		valueShort: "bCfFgHIKLNTVX",
		long: longs("checkpoint-action=", "checkpoint?", "use-compress-program=", "to-command=",
			"rsh-command=", "rmt-command=", "info-script=", "new-volume-script=", "absolute-names",
			"remove-files", "recursive-unlink", "unlink-first", "overwrite", "overwrite-dir",
			"file=", "directory=", "files-from=", "exclude=", "exclude-from=", "extract", "get",
			"create", "list", "append", "update", "diff", "compare", "delete", "concatenate",
			"catenate", "gzip", "gunzip", "bzip2", "xz", "lzip", "lzma", "lzop", "zstd", "compress",
			"uncompress", "auto-compress", "verbose", "to-stdout", "totals?", "touch", "transform=",
			"xform=", "strip-components=", "wildcards", "no-wildcards", "keep-old-files",
			"keep-newer-files", "skip-old-files", "no-overwrite-dir", "owner=", "group=", "mode=",
			"mtime=", "sort=", "format=", "blocking-factor=", "listed-incremental=", "label=",
			"tape-length=", "newer=", "after-date=", "starting-file=", "index-file=", "volno-file=",
			"backup?", "suffix=", "preserve-permissions", "same-permissions", "numeric-owner",
			"one-file-system", "dereference", "hard-dereference", "null", "record-size=",
			"occurrence?", "show-transformed-names", "show-stored-names", "warning=", "quoting-style=",
			"options=", "acls", "xattrs", "selinux", "sparse", "no-recursion", "recursion",
			"exclude-vcs", "exclude-caches", "anchored", "ignore-case", "multi-volume", "verify",
			"interactive", "confirmation", "help", "version", "usage", "show-defaults",
			"ignore-failed-read", "ignore-zeros", "restrict", "check-device", "no-check-device"),
		alias: aliasMap("-I", "--use-compress-program", "-F", "--info-script",
			"--new-volume-script", "--info-script", "-P", "--absolute-names", "-f", "--file",
			"-C", "--directory", "-T", "--files-from", "-X", "--exclude-from", "-O", "--to-stdout",
			"--get", "--extract", "-x", "--extract", "-c", "--create", "-t", "--list",
			"-U", "--unlink-first", "--xform", "--transform", "--rmt-command", "--rsh-command"),
	}},
	"sort": {opts: optTable{valueShort: "kotTS",
		long: longs("output=", "compress-program=", "temporary-directory=", "key=", "field-separator=",
			"buffer-size=", "files0-from=", "random-source=", "parallel=", "batch-size=", "sort=",
			"reverse", "numeric-sort", "general-numeric-sort", "human-numeric-sort", "month-sort",
			"version-sort", "random-sort", "unique", "stable", "check?", "merge", "zero-terminated",
			"ignore-case", "ignore-leading-blanks", "dictionary-order", "ignore-nonprinting", "debug"),
		alias: aliasMap("-o", "--output", "-T", "--temporary-directory", "-k", "--key",
			"-t", "--field-separator", "-S", "--buffer-size")}},
	"find": {singleDash: true},
	"cp": {opts: optTable{valueShort: "tS",
		long: longs("target-directory=", "suffix=", "symbolic-link", "link", "recursive", "force",
			"interactive", "no-clobber", "update?", "preserve?", "no-preserve=", "parents", "archive",
			"backup?", "reflink?", "sparse=", "strip-trailing-slashes", "no-target-directory",
			"verbose", "dereference", "no-dereference", "remove-destination", "attributes-only",
			"one-file-system", "copy-contents", "debug", "keep-directory-symlink"),
		alias: aliasMap("-t", "--target-directory", "-s", "--symbolic-link", "-l", "--link",
			"-S", "--suffix")}},
	"mv": {opts: optTable{valueShort: "tS",
		long: longs("target-directory=", "suffix=", "force", "interactive", "no-clobber", "update?",
			"backup?", "strip-trailing-slashes", "no-target-directory", "verbose", "exchange",
			"no-copy", "debug"),
		alias: aliasMap("-t", "--target-directory", "-S", "--suffix")}},
	"touch": {opts: optTable{valueShort: "rdt", long: longs("reference=", "date=", "time=", "no-create", "no-dereference")}},
	"mkdir": {opts: optTable{valueShort: "m", long: longs("mode=", "parents", "verbose", "context?")}},
	"head":  {opts: optTable{valueShort: "nc", long: longs("lines=", "bytes=", "quiet", "silent", "verbose", "zero-terminated")}},
	"tail":  {opts: optTable{valueShort: "ncs", long: longs("lines=", "bytes=", "follow?", "pid=", "sleep-interval=", "retry", "max-unchanged-stats=", "quiet", "silent", "verbose", "zero-terminated"), alias: aliasMap("-f", "--follow", "-F", "--follow")}},
	"grep":  {opts: optTable{valueShort: "efABCmdD", long: longs("regexp=", "file=", "after-context=", "before-context=", "context=", "max-count=", "include=", "exclude=", "exclude-dir=", "exclude-from=", "label=", "binary-files=", "directories=", "devices=", "color?", "colour?")}},
	"diff":  {opts: optTable{valueShort: "xXCUFIDSL", long: longs("to-file=", "from-file=", "diff-program=", "label=", "unified?", "context?", "exclude=", "exclude-from=", "ignore-matching-lines=", "starting-file=", "show-function-line=", "line-format=", "color?", "palette=")}},
	"stat":  {opts: optTable{valueShort: "c", long: longs("format=", "printf=", "dereference", "file-system", "terse", "cached=")}},
	"wc":    {opts: optTable{long: longs("files0-from=", "total=", "bytes", "chars", "lines", "words", "max-line-length")}},
	"ls":    {opts: optTable{valueShort: "ITw", long: longs("ignore=", "hide=", "tabsize=", "width=", "format=", "sort=", "time=", "time-style=", "color?", "block-size=", "quoting-style=", "indicator-style=")}},
	"cat":   {},
	"echo":  {},
	"pwd":   {},
}

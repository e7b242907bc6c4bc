package audit

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RunVerifyCommand runs `<server> audit verify FILE...`. args are the words
// after "audit verify": one FILE, or a log and its rotated files in any
// order ("--" may precede FILEs that begin with "-"). For one file it
// prints "ok: N records, chain intact" and returns 0, or prints "broken:
// line L: reason" (a change inside the chain) or "torn: line L: ..." (a
// cut-off end, which the server sets aside at its next start) and returns
// 1. Recoveries recorded in the chain are listed, with whether each
// sidecar is still there and matches. For several files it prints one
// line per file in chain order and checks the links between them. A usage
// error, or a file that cannot be read, prints to stderr and returns 2.
//
// A server's main calls it before anything else:
//
//	if len(os.Args) > 2 && os.Args[1] == "audit" && os.Args[2] == "verify" {
//		os.Exit(audit.RunVerifyCommand(os.Args[3:], os.Stdout, os.Stderr))
//	}
func RunVerifyCommand(args []string, stdout, stderr io.Writer) int {
	prog := filepath.Base(os.Args[0])
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: %s audit verify FILE [ROTATED-FILE...]\n\n"+
			"Checks the audit log FILE: every line a record, every seq one more than the last,\n"+
			"every prev the SHA-256 of the line before. Given a log and its rotated files\n"+
			"(FILE FILE.1 FILE.2 ...), in any order, it also checks that each file continues\n"+
			"the one before. Exit 0 intact, 1 broken or torn, 2 usage or read error.\n", prog)
	}
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		usage(stdout)
		return 0
	}
	files, ok := fileArgs(args)
	if !ok {
		usage(stderr)
		return 2
	}
	if len(files) > 1 {
		return verifySet(files, stdout, stderr)
	}
	rep, err := VerifyFile(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "error: cannot read %s: %v\n", files[0], err)
		return 2
	}
	return printReport(stdout, files[0], rep, prog)
}

// fileArgs returns the FILE arguments: one or more non-empty names, none
// starting with "-" unless "--" comes first.
func fileArgs(args []string) ([]string, bool) {
	dashes := len(args) > 0 && args[0] == "--"
	if dashes {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil, false
	}
	for _, a := range args {
		if a == "" || (!dashes && a[0] == '-') {
			return nil, false
		}
	}
	return args, true
}

// printReport prints one file's report and returns the exit code.
func printReport(w io.Writer, path string, rep Report, prog string) int {
	code := 0
	switch {
	case rep.OK:
		fmt.Fprintf(w, "ok: %d records, chain intact\n", rep.Records)
	case rep.Torn:
		fmt.Fprintf(w, "torn: line %d: %s; the log ends in a torn tail (%d records before it are intact), which %s sets aside when it next opens the log\n",
			rep.BrokenAt, rep.Reason, rep.Records, prog)
		code = 1
	default:
		fmt.Fprintf(w, "broken: line %d: %s\n", rep.BrokenAt, rep.Reason)
		return 1
	}
	if rep.Records > 0 {
		fmt.Fprintf(w, "head: seq %d, sha256 %s\n", rep.LastSeq, rep.Head)
	}
	for _, rc := range rep.Recoveries {
		fmt.Fprintf(w, "recovered: line %d (seq %d): a torn tail of %d bytes was set aside in %s, sha256 %s (%s); %s\n",
			rc.Line, rc.Seq, rc.Bytes, rc.Sidecar, rc.SHA256, rc.Reason, sidecarState(filepath.Dir(path), rc))
	}
	if rep.Note != "" {
		fmt.Fprintf(w, "note: %s\n", rep.Note)
	}
	return code
}

// verifySet runs the several-files form.
func verifySet(files []string, stdout, stderr io.Writer) int {
	reps, ok, err := VerifyFiles(files)
	if err != nil {
		fmt.Fprintf(stderr, "error: cannot read %v\n", err)
		return 2
	}
	total := 0
	for _, r := range reps {
		total += r.Records
		switch {
		case r.OK && r.Records == 0:
			fmt.Fprintf(stdout, "%s: ok: empty\n", r.Path)
		case r.OK:
			fmt.Fprintf(stdout, "%s: ok: %d records, seq %d to %d\n", r.Path, r.Records, r.FirstSeq, r.LastSeq)
		case r.Torn:
			fmt.Fprintf(stdout, "%s: torn: line %d: %s\n", r.Path, r.BrokenAt, r.Reason)
		default:
			fmt.Fprintf(stdout, "%s: broken: line %d: %s\n", r.Path, r.BrokenAt, r.Reason)
		}
		for _, rc := range r.Recoveries {
			fmt.Fprintf(stdout, "%s: recovered: line %d (seq %d): %d bytes set aside in %s, sha256 %s; %s\n",
				r.Path, rc.Line, rc.Seq, rc.Bytes, rc.Sidecar, rc.SHA256, sidecarState(filepath.Dir(r.Path), rc))
		}
		if r.Note != "" {
			fmt.Fprintf(stdout, "%s: note: %s\n", r.Path, r.Note)
		}
	}
	if !ok {
		fmt.Fprintf(stdout, "broken: %d files, see above\n", len(reps))
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d records in %d files, chain intact\n", total, len(reps))
	if first := reps[0]; first.Records > 0 && first.FirstPrev != GenesisPrev {
		fmt.Fprintf(stdout, "note: the oldest file, %s, continues a chain from a file not given (seq %d)\n", first.Path, first.FirstSeq-1)
	}
	return 0
}

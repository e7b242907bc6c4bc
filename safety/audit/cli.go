package audit

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RunVerifyCommand runs `<server> audit verify FILE`. args are the words
// after "audit verify": exactly one FILE ("--" may precede a FILE that
// begins with "-"). It prints "ok: N records, chain intact" and returns 0,
// or prints "broken: line L: reason" and returns 1. A usage error, or a
// file that cannot be read, prints to stderr and returns 2.
//
// A server's main calls it before anything else:
//
//	if len(os.Args) > 2 && os.Args[1] == "audit" && os.Args[2] == "verify" {
//		os.Exit(audit.RunVerifyCommand(os.Args[3:], os.Stdout, os.Stderr))
//	}
func RunVerifyCommand(args []string, stdout, stderr io.Writer) int {
	prog := filepath.Base(os.Args[0])
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: %s audit verify FILE\n\n"+
			"Checks the audit log FILE: every line a record, every seq one more than the last,\n"+
			"every prev the SHA-256 of the line before. Exit 0 intact, 1 broken, 2 usage or read error.\n", prog)
	}
	var file string
	switch {
	case len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		usage(stdout)
		return 0
	case len(args) == 1 && args[0] != "" && args[0][0] != '-':
		file = args[0]
	case len(args) == 2 && args[0] == "--" && args[1] != "":
		file = args[1]
	default:
		usage(stderr)
		return 2
	}
	rep, err := VerifyFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "error: cannot read %s: %v\n", file, err)
		return 2
	}
	if !rep.OK {
		fmt.Fprintf(stdout, "broken: line %d: %s\n", rep.BrokenAt, rep.Reason)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d records, chain intact\n", rep.Records)
	if rep.Records > 0 {
		fmt.Fprintf(stdout, "head: seq %d, sha256 %s\n", rep.LastSeq, rep.Head)
	}
	if rep.Note != "" {
		fmt.Fprintf(stdout, "note: %s\n", rep.Note)
	}
	return 0
}

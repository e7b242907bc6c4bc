package sandbox

import (
	"io"
	"os"

	"github.com/bastion-mcp/bastion/safety/result"
)

// stdinFile returns the descriptor a command gets as its standard input
// for r (Spec.Stdin) and the function that closes what stdinFile opened:
// /dev/null for nil; r itself for an *os.File (the caller's to close); for
// any other reader the read end of a new pipe that a goroutine fills from
// r, closing the write end at r's end. That goroutine ends when r returns
// an error or EOF, or, once the command is over and every read end is
// closed, at its next write.
func stdinFile(r io.Reader) (*os.File, func(), error) {
	switch f := r.(type) {
	case nil:
		null, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, result.Wrap(result.InternalError, "the sandbox could not open /dev/null for stdin", err)
		}
		return null, func() { null.Close() }, nil
	case *os.File:
		return f, func() {}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, result.Wrap(result.InternalError, "the sandbox could not create the input pipe", err)
	}
	go func() {
		_, _ = io.Copy(pw, r)
		pw.Close()
	}()
	return pr, func() { pr.Close() }, nil
}

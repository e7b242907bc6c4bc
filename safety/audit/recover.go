package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bastion-mcp/bastion/safety/internal/fsx"
)

// damaged is a log this package will not write to: its message is for the
// operator and names the file, so callers answering a client wrap it in a
// reason of their own.
type damaged struct{ msg string }

func (d *damaged) Error() string { return d.msg }

// scan verifies the whole of t's file as it stands.
func scan(t *target) (Report, error) {
	return Verify(io.NewSectionReader(t.f, 0, t.size))
}

// mend deals with a log whose chain rep found broken; the caller holds the
// lock. A torn tail is set aside and a recovered record written in its
// place, whatever the fail mode. A break in the middle of the chain, or a
// torn tail that cannot be set aside, is a *damaged error in closed mode;
// in open mode it is reported to the logger and the log goes on after the
// break, with l.known cleared so the next append looks again. The returned
// prefix closes a torn last line that open mode appends after.
func (l *Log) mend(t *target, rep Report) (prefix []byte, err error) {
	var msg string
	if rep.Torn {
		rc, err := l.setAside(t, rep)
		if err == nil {
			err = l.recordRecovery(t, rc)
			if err != nil && l.openMode { // l.pending keeps the record for the next append
				l.logger.Warn("audit: a torn tail was set aside but its recovered record could not be written yet; continuing because the audit fail mode is open",
					"server", l.server, "path", l.path, "sidecar", rc.Sidecar, "error", err.Error())
				l.known, err = nil, nil
			}
			return nil, err
		}
		msg = fmt.Sprintf("the audit log %s ends in a torn record (line %d: %s) that could not be set aside (%v); free space or fix permissions in %s and start again",
			l.path, rep.BrokenAt, rep.Reason, err, l.dir)
	} else {
		msg = describeTampered(l.server, l.path, rep)
	}
	if !l.openMode {
		return nil, &damaged{msg}
	}
	l.logger.Warn("audit: "+msg+"; appending after the break because the audit fail mode is open",
		"server", l.server, "path", l.path)
	st, err := l.state(t.f, t.size)
	if err != nil {
		return nil, err
	}
	l.head, l.known = st.head, nil
	if st.partial {
		prefix = []byte{'\n'}
	}
	return prefix, nil
}

// describeTampered is the operator-facing sentence for a break before the
// end of the file.
func describeTampered(server, path string, rep Report) string {
	return fmt.Sprintf("the audit log %s is broken at line %d: %s. That is not a cut-off write at the end "+
		"(which %s sets aside by itself) but a change inside the chain: the file was edited, or the disk corrupted it, "+
		"so %s will not write to it. Run `%s audit verify %s`, keep the file as evidence, and move it aside to start a new chain",
		path, rep.BrokenAt, rep.Reason, server, server, server, path)
}

// setAside copies the torn tail of t's file (everything after
// rep.ValidBytes) into a new sidecar file beside the log, makes it
// durable, then cuts the log back to its last whole record. On error the
// log is as it was (a sidecar already written may remain: it holds a copy,
// and the next try writes another).
func (l *Log) setAside(t *target, rep Report) (Recovery, error) {
	n := t.size - rep.ValidBytes
	side, name, err := l.createSidecar()
	if err != nil {
		return Recovery{}, err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(side, h), io.NewSectionReader(t.f, rep.ValidBytes, n))
	if err == nil {
		err = side.Sync()
	}
	if cerr := side.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsx.SyncDir(l.dir)
	}
	if err != nil {
		_ = os.Remove(name)
		return Recovery{}, fmt.Errorf("write %s: %w", filepath.Base(name), err)
	}
	if err := t.f.Truncate(rep.ValidBytes); err != nil {
		return Recovery{}, fmt.Errorf("truncate the log: %w", err)
	}
	if err := t.f.Sync(); err != nil {
		return Recovery{}, fmt.Errorf("sync the log: %w", err)
	}
	t.size = rep.ValidBytes
	return Recovery{Sidecar: filepath.Base(name), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Reason: rep.Reason}, nil
}

// sidecarInfix separates the log's name from the time in a sidecar's name:
// FILE.torn-20261201T133000.123456789Z. The name never ends in ".N", so a
// sidecar is never taken for a rotated file.
const sidecarInfix = ".torn-"

// createSidecar creates a new, empty sidecar file (0600, never through a
// symbolic link) and returns it with its path.
func (l *Log) createSidecar() (*os.File, string, error) {
	base := l.path + sidecarInfix + time.Now().UTC().Format("20060102T150405.000000000Z")
	name := base
	for i := 1; ; i++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|fsx.NoFollow, 0o600)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) || i == 100 {
			return nil, "", err
		}
		name = base + "-" + strconv.Itoa(i)
	}
}

// recordRecovery writes the recovered record that says what setAside did,
// chained to the log's last whole record (or, for a log that held nothing
// whole, to where an empty log continues).
func (l *Log) recordRecovery(t *target, rc Recovery) error {
	st, err := l.state(t.f, t.size)
	if err != nil {
		return err
	}
	if st.broken != "" {
		return &damaged{describeBroken(l.server, st.fileOr(l.path), st.broken)}
	}
	l.head = st.head
	l.pending = &rc
	if err := l.writePending(t); err != nil {
		return err
	}
	l.logger.Warn("audit: the log ended in a torn record; it was set aside and the chain goes on",
		"server", l.server, "path", l.path, "sidecar", rc.Sidecar, "bytes", rc.Bytes, "sha256", rc.SHA256)
	return nil
}

// writePending writes the recovered record of a tail set aside earlier
// whose record could not be written then (the disk was full, say), so a
// recovery is never left unrecorded while this Log lives.
func (l *Log) writePending(t *target) error {
	if l.pending == nil {
		return nil
	}
	rc := l.pending
	fields := map[string]any{"sidecar": rc.Sidecar, "bytes": rc.Bytes, "sha256": rc.SHA256, "reason": rc.Reason}
	if _, err := l.writeRecord(t, nil, record{Kind: KindEvent, Server: l.server, Action: ActionRecovered, Fields: fields}); err != nil {
		return err
	}
	l.pending = nil
	return nil
}

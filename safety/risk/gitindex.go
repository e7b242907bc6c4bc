package risk

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
)

// maxIndexBytes bounds the index file the radar reads (git's index of a
// 100,000-file repository is about 10 MiB).
const maxIndexBytes = 256 << 20

// parseGitIndex reads the tracked paths of a git index file (the
// .git/index format, versions 2, 3 and 4), sorted. It refuses, with a
// reason, what it cannot read faithfully: another version, a bad
// checksum, a split index (the "link" extension: the paths live in a
// second file) and a sparse index (the "sdir" extension: a directory entry
// stands for paths the index does not list).
func parseGitIndex(data []byte) ([]string, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, fmt.Errorf("the index file has no DIRC signature")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index format version %d is not supported (2, 3 and 4 are)", version)
	}
	hashLen, err := indexHashLen(data)
	if err != nil {
		return nil, err
	}
	body := data[:len(data)-hashLen]
	count := binary.BigEndian.Uint32(data[8:12])
	paths, off, err := indexEntries(body, version, hashLen, count)
	if err != nil {
		return nil, err
	}
	if err := indexExtensions(body[off:]); err != nil {
		return nil, err
	}
	if len(paths) > 0 && paths[0] == "" {
		return nil, fmt.Errorf("the index file has an entry without a path")
	}
	if !sort.StringsAreSorted(paths) {
		sort.Strings(paths)
	}
	return paths, nil
}

// indexHashLen tells SHA-1 from SHA-256 repositories by the trailing
// checksum, which must match; an all-zero trailer (index.skipHash) is
// taken as SHA-1.
func indexHashLen(data []byte) (int, error) {
	if n := len(data) - sha1.Size; n >= 12 {
		sum := sha1.Sum(data[:n])
		if bytes.Equal(sum[:], data[n:]) {
			return sha1.Size, nil
		}
		if bytes.Equal(data[n:], make([]byte, sha1.Size)) {
			return sha1.Size, nil
		}
	}
	if n := len(data) - sha256.Size; n >= 12 {
		sum := sha256.Sum256(data[:n])
		if bytes.Equal(sum[:], data[n:]) {
			return sha256.Size, nil
		}
	}
	return 0, fmt.Errorf("the index file's checksum does not match its content")
}

// indexEntries decodes count entries from body[12:], returning their paths
// and the offset just past the last entry.
func indexEntries(body []byte, version uint32, hashLen int, count uint32) ([]string, int, error) {
	fixed := 40 + hashLen + 2 // stat data, object name, flags
	off := 12
	paths := make([]string, 0, min(int(count), len(body)/fixed))
	prev := ""
	for i := uint32(0); i < count; i++ {
		start := off
		if off+fixed > len(body) {
			return nil, 0, fmt.Errorf("the index file is truncated")
		}
		mode := binary.BigEndian.Uint32(body[off+24 : off+28])
		flags := binary.BigEndian.Uint16(body[off+fixed-2 : off+fixed])
		off += fixed
		if flags&0x4000 != 0 { // extended flags
			if version < 3 {
				return nil, 0, fmt.Errorf("the index file has extended flags in a version 2 entry")
			}
			if off+2 > len(body) {
				return nil, 0, fmt.Errorf("the index file is truncated")
			}
			off += 2
		}
		if mode&0o170000 == 0o040000 {
			return nil, 0, fmt.Errorf("the index is sparse (it holds directory entries); sparse indexes are not supported")
		}
		name, next, err := indexName(body, off, version, prev)
		if err != nil {
			return nil, 0, err
		}
		off = next
		if version < 4 {
			// One to eight NULs pad the entry to a multiple of eight bytes.
			off = start + (off-start+7)&^7
			if off > len(body) {
				return nil, 0, fmt.Errorf("the index file is truncated")
			}
		}
		if len(paths) == 0 || paths[len(paths)-1] != name { // stages of a conflict share a path
			paths = append(paths, name)
		}
		prev = name
	}
	return paths, off, nil
}

// indexName reads an entry's path at off: NUL-terminated, and in version 4
// prefixed by a varint saying how many bytes of the previous path to drop.
// It returns the path and the offset past its NUL.
func indexName(body []byte, off int, version uint32, prev string) (string, int, error) {
	prefix := ""
	if version == 4 {
		drop, n := indexVarint(body[off:])
		if n == 0 || drop > uint64(len(prev)) {
			return "", 0, fmt.Errorf("the index file has a bad path prefix")
		}
		off += n
		prefix = prev[:len(prev)-int(drop)]
	}
	end := bytes.IndexByte(body[off:], 0)
	if end < 0 {
		return "", 0, fmt.Errorf("the index file is truncated")
	}
	// An empty path is a split index's replacement of a shared entry;
	// the "link" extension, read after the entries, refuses it.
	name := prefix + string(body[off:off+end])
	return name, off + end + 1, nil
}

// indexVarint decodes git's offset varint (each continuation adds one
// before shifting); n is 0 when it is malformed.
func indexVarint(b []byte) (v uint64, n int) {
	for n < len(b) && n < 10 {
		c := b[n]
		n++
		v += uint64(c & 0x7f)
		if c&0x80 == 0 {
			return v, n
		}
		v = (v + 1) << 7
	}
	return 0, 0
}

// indexExtensions walks the extensions after the entries. Optional ones
// (an upper-case first letter: TREE, REUC, UNTR, FSMN, EOIE, IEOT) are
// skipped; a required one the radar does not read is refused.
func indexExtensions(b []byte) error {
	for len(b) > 0 {
		if len(b) < 8 {
			return fmt.Errorf("the index file has a truncated extension")
		}
		sig := string(b[:4])
		size := binary.BigEndian.Uint32(b[4:8])
		if uint64(size) > uint64(len(b)-8) {
			return fmt.Errorf("the index file has a truncated %q extension", sig)
		}
		switch {
		case sig == "link":
			return fmt.Errorf("the index is split (core.splitIndex); split indexes are not supported")
		case sig == "sdir":
			return fmt.Errorf("the index is sparse (index.sparse); sparse indexes are not supported")
		case sig[0] < 'A' || sig[0] > 'Z':
			return fmt.Errorf("the index file has a required extension %q the radar does not read", sig)
		}
		b = b[8+int(size):]
	}
	return nil
}

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/macho"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// entry is one file of an archive: its name inside, its bytes, and whether
// it is executable.
type entry struct {
	name string
	data []byte
	exec bool
}

// archive writes <server>_<version>_<os>_<arch>.tar.gz (.zip for Windows):
// a directory of that name holding the binary, LICENSE and README.md.
func (j *job) archive(s string, p platform) (string, error) {
	base := s + "_" + j.version + "_" + p.String()
	bin, err := os.ReadFile(j.binPath(s, p))
	if err != nil {
		return "", err
	}
	es := []entry{{name: base + "/" + filepath.Base(j.binPath(s, p)), data: bin, exec: true}}
	for _, doc := range []string{"LICENSE", "README.md"} {
		b, err := os.ReadFile(filepath.Join(j.repo, doc))
		if err != nil {
			return "", err
		}
		es = append(es, entry{name: base + "/" + doc, data: b})
	}
	if p.OS == "windows" {
		return base + ".zip", writeZip(filepath.Join(j.out, base+".zip"), es, j.stamp)
	}
	return base + ".tar.gz", writeTarGz(filepath.Join(j.out, base+".tar.gz"), es, j.stamp)
}

func sortEntries(es []entry) {
	sort.Slice(es, func(a, b int) bool { return es[a].name < es[b].name })
}

func mode(e entry) int64 {
	if e.exec {
		return 0o755
	}
	return 0o644
}

// writeTarGz writes es, sorted, as a gzip-compressed ustar archive whose
// headers carry only what the bytes need: no owner names, no host times.
func writeTarGz(path string, es []entry, stamp time.Time) error {
	sortEntries(es)
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, e := range es {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Size: int64(len(e.data)), Mode: mode(e),
			ModTime: stamp, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeZip writes es, sorted and deflated, every entry stamped alike.
func writeZip(path string, es []entry, stamp time.Time) error {
	sortEntries(es)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range es {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: stamp}
		h.SetMode(os.FileMode(mode(e)))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(e.data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// fatAlign is the alignment of each slice in a universal binary: 2^14, the
// arm64 page size, which also satisfies x86_64.
const fatAlign = 14

// universal joins thin Mach-O binaries into one universal ("fat") binary,
// the format macOS loads on either CPU. The layout is the documented one:
// a big-endian header (magic 0xcafebabe, slice count), one record per slice
// (CPU type, subtype, offset, size, alignment), then each slice at an
// aligned offset.
func universal(thin ...[]byte) ([]byte, error) {
	type slice struct {
		cpu, sub uint32
		data     []byte
		off      uint32
	}
	var ss []slice
	off := uint32(8 + 20*len(thin))
	for _, b := range thin {
		f, err := macho.NewFile(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("not a thin Mach-O binary: %v", err)
		}
		off = (off + 1<<fatAlign - 1) &^ (1<<fatAlign - 1)
		ss = append(ss, slice{uint32(f.Cpu), f.SubCpu, b, off})
		off += uint32(len(b))
	}
	var buf bytes.Buffer
	w := func(v ...uint32) {
		for _, x := range v {
			_ = binary.Write(&buf, binary.BigEndian, x)
		}
	}
	w(macho.MagicFat, uint32(len(ss)))
	for _, s := range ss {
		w(s.cpu, s.sub, s.off, uint32(len(s.data)), fatAlign)
	}
	for _, s := range ss {
		buf.Write(make([]byte, int(s.off)-buf.Len()))
		buf.Write(s.data)
	}
	return buf.Bytes(), nil
}

// fileSHA256 is the lower-case hex SHA-256 of a file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

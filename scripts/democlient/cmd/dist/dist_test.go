package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/macho"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// repo is the repository root, seen from this package's directory.
const repo = "../../../.."

// thinMachO is the smallest Mach-O file debug/macho reads: a 64-bit header
// with no load commands, followed by a payload that tells slices apart.
func thinMachO(cpu macho.Cpu, sub uint32, payload string) []byte {
	var b bytes.Buffer
	for _, v := range []uint32{macho.Magic64, uint32(cpu), sub, uint32(macho.TypeExec), 0, 0, 0, 0} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString(payload)
	return b.Bytes()
}

func TestUniversalBinaryHoldsEachSliceAligned(t *testing.T) {
	amd := thinMachO(macho.CpuAmd64, 3, "intel")
	arm := thinMachO(macho.CpuArm64, 0, "apple")
	fat, err := universal(amd, arm)
	if err != nil {
		t.Fatal(err)
	}
	ff, err := macho.NewFatFile(bytes.NewReader(fat))
	if err != nil {
		t.Fatalf("not a universal binary macOS would read: %v", err)
	}
	want := []struct {
		cpu  macho.Cpu
		data []byte
	}{{macho.CpuAmd64, amd}, {macho.CpuArm64, arm}}
	if len(ff.Arches) != len(want) {
		t.Fatalf("%d slices, want %d", len(ff.Arches), len(want))
	}
	for i, a := range ff.Arches {
		if a.Cpu != want[i].cpu || a.Offset%(1<<fatAlign) != 0 || a.Align != fatAlign {
			t.Errorf("slice %d: cpu %v offset %d align %d", i, a.Cpu, a.Offset, a.Align)
		}
		if got := fat[a.Offset : a.Offset+a.Size]; !bytes.Equal(got, want[i].data) {
			t.Errorf("slice %d does not hold the thin binary's bytes", i)
		}
	}
	if _, err := universal([]byte("#!/bin/sh\n")); err == nil {
		t.Error("a file that is not Mach-O was joined")
	}
}

// TestArchivesAreTheSameBytesWhateverTheOrder: the same entries given in
// another order, at another wall-clock time, make the same archive.
func TestArchivesAreTheSameBytesWhateverTheOrder(t *testing.T) {
	stamp := time.Unix(1700000000, 0).UTC()
	es := func(rev bool) []entry {
		e := []entry{{name: "d/bin", data: []byte("binary"), exec: true}, {name: "d/LICENSE", data: []byte("MIT")}}
		if rev {
			e[0], e[1] = e[1], e[0]
		}
		return e
	}
	dir := t.TempDir()
	for _, w := range []struct {
		name  string
		write func(string, []entry, time.Time) error
	}{{"tar.gz", writeTarGz}, {"zip", writeZip}} {
		t.Run(w.name, func(t *testing.T) {
			a, b := filepath.Join(dir, "a."+w.name), filepath.Join(dir, "b."+w.name)
			if err := w.write(a, es(false), stamp); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1100 * time.Millisecond) // a wall-clock time leaking in would show
			if err := w.write(b, es(true), stamp); err != nil {
				t.Fatal(err)
			}
			ab, _ := os.ReadFile(a)
			bb, _ := os.ReadFile(b)
			if !bytes.Equal(ab, bb) {
				t.Fatal("two writes of the same entries differ")
			}
			checkEntries(t, w.name, ab, stamp)
		})
	}
}

// checkEntries reads an archive back: sorted names, modes, the stamp.
func checkEntries(t *testing.T, kind string, b []byte, stamp time.Time) {
	t.Helper()
	type got struct {
		name string
		mode os.FileMode
		mod  time.Time
	}
	var gs []got
	if kind == "zip" {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			gs = append(gs, got{f.Name, f.Mode().Perm(), f.Modified.UTC()})
		}
	} else {
		gz, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
				t.Errorf("%s: owner %d/%d %q leaks the builder's account", h.Name, h.Uid, h.Gid, h.Uname)
			}
			gs = append(gs, got{h.Name, os.FileMode(h.Mode).Perm(), h.ModTime.UTC()})
		}
	}
	want := []got{{"d/LICENSE", 0o644, stamp}, {"d/bin", 0o755, stamp}}
	if len(gs) != len(want) {
		t.Fatalf("entries %v, want %v", gs, want)
	}
	for i := range want {
		if gs[i].name != want[i].name || gs[i].mode != want[i].mode || !gs[i].mod.Equal(want[i].mod) {
			t.Errorf("entry %d: %+v, want %+v", i, gs[i], want[i])
		}
	}
}

func TestServerJSONFollowsTheRegistrySchema(t *testing.T) {
	for _, s := range servers {
		t.Run(s, func(t *testing.T) {
			tmpl, err := os.ReadFile(filepath.Join(repo, "packaging", s, "server.json"))
			if err != nil {
				t.Fatal(err)
			}
			url := "https://github.com/bastion-mcp/bastion/releases/download/v1.2.3/" + s + "_v1.2.3.mcpb"
			doc, err := fillServerJSON(tmpl, "1.2.3", url, strings.Repeat("ab", 32))
			if err != nil {
				t.Fatal(err)
			}
			if err := validateServerJSON(repo, doc); err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			_ = json.Unmarshal(doc, &m)
			m["description"] = strings.Repeat("too long ", 20) // the registry allows 100 characters
			bad, _ := json.Marshal(m)
			if err := validateServerJSON(repo, bad); err == nil {
				t.Fatal("a description over the registry's limit passed the schema")
			}
		})
	}
}

func TestBundleRefusesACommandItDoesNotHold(t *testing.T) {
	_, m, err := readManifest(repo, "sweepd")
	if err != nil {
		t.Fatal(err)
	}
	es := []entry{{name: "server/linux/sweepd"}, {name: "server/darwin/sweepd"}, {name: "server/win32/sweepd.exe"}}
	if err := checkCommands(m, es); err != nil {
		t.Fatalf("a complete bundle was refused: %v", err)
	}
	if err := checkCommands(m, es[:2]); err == nil || !strings.Contains(err.Error(), "win32") {
		t.Fatalf("a bundle without its Windows binary: %v", err)
	}
}

func TestOutputDirectoryMustBeEmpty(t *testing.T) {
	dir := t.TempDir()
	if err := emptyDir(filepath.Join(dir, "new")); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old.tar.gz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := emptyDir(dir); err == nil {
		t.Fatal("a directory holding an old artifact was accepted")
	}
	j := job{version: "1.2", out: filepath.Join(dir, "x")}
	if err := j.run(); err == nil || !strings.Contains(err.Error(), "vX.Y.Z") {
		t.Fatalf("version 1.2: %v", err)
	}
}

// Command modproxy writes a file:// Go module proxy (the GOPROXY protocol's
// directory layout: <module>/@v/list, <version>.info, .mod, .zip) from
// module directories of a working tree, so scripts/install-proof.sh can
// prove `go install <module>@<version>` works before anything is tagged.
//
// Usage:
//
//	modproxy -out DIR DIR@VERSION [DIR@VERSION ...]
//
// Each module zip holds every regular file under DIR with the
// "<module>@<version>/" prefix, leaving out VCS directories, nested modules
// (subdirectories with their own go.mod) and symlinks, as `go mod download`
// would. It never overwrites a version that is already in the proxy with
// different content.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
)

func main() {
	out := flag.String("out", "", "proxy `DIR` to write into")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR MODDIR@VERSION ...")
		os.Exit(2)
	}
	for _, arg := range flag.Args() {
		dir, version, ok := strings.Cut(arg, "@")
		if !ok || !strings.HasPrefix(version, "v") {
			fail("%q: want MODDIR@vX.Y.Z", arg)
		}
		if err := add(*out, dir, version); err != nil {
			fail("%s: %v", arg, err)
		}
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "modproxy: "+format+"\n", a...)
	os.Exit(1)
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// escape applies the module proxy's case encoding (upper case -> !lower).
func escape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func add(out, dir, version string) error {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("no go.mod: %v", err)
	}
	mod := modulePath(gomod)
	if mod == "" {
		return fmt.Errorf("go.mod has no module line")
	}
	vdir := filepath.Join(out, escape(mod), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	zb, err := zipModule(dir, mod+"@"+version)
	if err != nil {
		return err
	}
	zpath := filepath.Join(vdir, version+".zip")
	if old, err := os.ReadFile(zpath); err == nil && !bytes.Equal(old, zb) {
		return fmt.Errorf("%s@%s is already in the proxy with other content", mod, version)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, b := range map[string][]byte{version + ".mod": gomod, version + ".zip": zb, version + ".info": info} {
		if err := os.WriteFile(filepath.Join(vdir, name), b, 0o644); err != nil {
			return err
		}
	}
	list, _ := os.ReadFile(filepath.Join(vdir, "list"))
	versions := map[string]bool{version: true}
	for _, v := range strings.Fields(string(list)) {
		versions[v] = true
	}
	var vs []string
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	fmt.Printf("modproxy: %s@%s (%d bytes)\n", mod, version, len(zb))
	return os.WriteFile(filepath.Join(vdir, "list"), []byte(strings.Join(vs, "\n")+"\n"), 0o644)
}

func zipModule(dir, prefix string) ([]byte, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".hg", ".svn", ".bzr", "node_modules":
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module is not part of this one
				}
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: prefix + "/" + f, Method: zip.Deflate})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Command dist builds Bastion's release artifacts into one directory, the
// same bytes every time for the same commit and version:
//
//   - for each server and platform, an archive holding the binary, LICENSE
//     and README.md (tar.gz; zip for Windows);
//   - for each server, an MCP bundle (.mcpb) from packaging/<server>/manifest.json,
//     with a binary per platform it declares (macOS: one universal binary
//     for amd64 and arm64; Linux and Windows: amd64);
//   - for each server, registry/<server>/server.json for the MCP registry,
//     naming the bundle's download URL, version and SHA-256, validated
//     against the vendored registry schema;
//   - SHA256SUMS of every archive and bundle.
//
// Usage (from the repository root; `make dist VERSION=vX.Y.Z` runs it):
//
//	dist -version vX.Y.Z [-out dist] [-url BASE]
//
// Reproducible: binaries are built with -trimpath, -buildvcs=false, an
// empty build id and CGO off; archive entries are sorted, owned by 0:0 and
// stamped with $SOURCE_DATE_EPOCH, else the commit time of HEAD.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// servers are the three binaries, each its own module directory.
var servers = []string{"sweepd", "terminald", "organizerd"}

// platform is one GOOS/GOARCH the release ships.
type platform struct{ OS, Arch string }

func (p platform) String() string { return p.OS + "_" + p.Arch }

// platforms are the release's targets, in the order the archives list.
var platforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}

var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// job is one dist run's settings.
type job struct {
	version string // vX.Y.Z
	repo    string // repository root
	out     string // output directory
	baseURL string // release download base; /<version>/<file> is appended
	stamp   time.Time
	work    string // temporary build directory
}

func main() {
	j := job{}
	flag.StringVar(&j.version, "version", "", "release `VERSION`, vX.Y.Z")
	flag.StringVar(&j.out, "out", "dist", "output `DIR` (must be absent or empty)")
	flag.StringVar(&j.repo, "repo", ".", "repository root `DIR`")
	flag.StringVar(&j.baseURL, "url", "https://github.com/bastion-mcp/bastion/releases/download", "download `BASE` URL of release assets")
	flag.Parse()
	if err := j.run(); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func (j *job) run() error {
	if !versionRE.MatchString(j.version) {
		return fmt.Errorf("-version %q is not vX.Y.Z", j.version)
	}
	if err := emptyDir(j.out); err != nil {
		return err
	}
	var err error
	if j.stamp, err = sourceDate(j.repo); err != nil {
		return err
	}
	if j.work, err = os.MkdirTemp("", "bastion-dist-"); err != nil {
		return err
	}
	defer os.RemoveAll(j.work)
	if err := j.buildAll(); err != nil {
		return err
	}
	var assets []string
	for _, s := range servers {
		a, err := j.server(s)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		assets = append(assets, a...)
	}
	return writeSums(j.out, assets)
}

// server writes one server's archives, bundle and server.json and returns
// the names of its release assets.
func (j *job) server(s string) ([]string, error) {
	var assets []string
	for _, p := range platforms {
		name, err := j.archive(s, p)
		if err != nil {
			return nil, err
		}
		assets = append(assets, name)
	}
	bundle, sum, err := j.bundle(s)
	if err != nil {
		return nil, err
	}
	assets = append(assets, bundle)
	return assets, j.serverJSON(s, bundle, sum)
}

// emptyDir creates dir, or accepts it when it exists and is empty, so a
// release never mixes new artifacts with old ones.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty: remove it first (make dist does)", dir)
	}
	return nil
}

// sourceDate is the time stamped on every archive entry: $SOURCE_DATE_EPOCH
// when set (the reproducible-builds convention), else HEAD's commit time.
func sourceDate(repo string) (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("no SOURCE_DATE_EPOCH and no git commit time: %v", err)
		}
		v = strings.TrimSpace(string(out))
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 315532800 { // zip cannot hold a time before 1980
		return time.Time{}, fmt.Errorf("source date %q is not a Unix time after 1980", v)
	}
	return time.Unix(n, 0).UTC(), nil
}

// binPath is where buildAll leaves a server's binary for a platform.
func (j *job) binPath(s string, p platform) string {
	name := s
	if p.OS == "windows" {
		name += ".exe"
	}
	return filepath.Join(j.work, "bin", p.String(), name)
}

// buildAll builds every server for every platform, two at a time.
func (j *job) buildAll() error {
	type target struct {
		s string
		p platform
	}
	var ts []target
	for _, s := range servers {
		for _, p := range platforms {
			ts = append(ts, target{s, p})
		}
	}
	errs := make([]error, len(ts))
	sem := make(chan struct{}, 2)
	done := make(chan struct{})
	for i, t := range ts {
		go func() {
			sem <- struct{}{}
			errs[i] = j.build(t.s, t.p)
			<-sem
			done <- struct{}{}
		}()
	}
	for range ts {
		<-done
	}
	return errors.Join(errs...)
}

// build runs go build for one server and platform, reproducibly.
func (j *job) build(s string, p platform) error {
	ldflags := "-s -w -buildid= -X main.version=" + strings.TrimPrefix(j.version, "v")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", j.binPath(s, p), "./"+s)
	cmd.Dir = j.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %v\n%s", s, p, err, out)
	}
	return nil
}

// writeSums writes SHA256SUMS: one "hex  name" line per asset, sorted.
func writeSums(out string, assets []string) error {
	sort.Strings(assets)
	var b strings.Builder
	for _, a := range assets {
		sum, err := fileSHA256(filepath.Join(out, a))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, a)
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644)
}

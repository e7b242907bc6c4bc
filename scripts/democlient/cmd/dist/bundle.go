package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// bundleBinaries maps an MCP bundle platform to where its binary sits in
// the bundle and the GOOS/GOARCH builds it is made of (two for macOS: one
// universal binary serves Intel and Apple silicon). Linux and Windows
// bundles carry amd64; arm64 Linux users take the release archive.
var bundleBinaries = map[string]struct {
	dir   string
	ext   string
	thins []platform
}{
	"darwin": {"server/darwin/", "", []platform{{"darwin", "amd64"}, {"darwin", "arm64"}}},
	"linux":  {"server/linux/", "", []platform{{"linux", "amd64"}}},
	"win32":  {"server/win32/", ".exe", []platform{{"windows", "amd64"}}},
}

// bundleExtras are files a server's bundle carries besides its binaries,
// by source path in the repository and name in the bundle.
var bundleExtras = map[string][][2]string{
	// terminald starts only with a policy; the shipped one is its default
	// (--fallback-config), and the person may name their own at install.
	"terminald": {{"policies/policy.toml", "policy.toml"}},
}

// Manifest is the part of an MCP bundle manifest dist reads; the rest is
// carried through unchanged.
type Manifest struct {
	Version       string `json:"version"`
	Compatibility struct {
		Platforms []string `json:"platforms"`
	} `json:"compatibility"`
	Server struct {
		EntryPoint string `json:"entry_point"`
		MCPConfig  struct {
			Command   string                              `json:"command"`
			Overrides map[string]struct{ Command string } `json:"platform_overrides"`
		} `json:"mcp_config"`
	} `json:"server"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	Prompts []struct {
		Name      string   `json:"name"`
		Arguments []string `json:"arguments"`
	} `json:"prompts"`
}

// readManifest returns packaging/<server>/manifest.json as raw fields and
// as the typed view.
func readManifest(repo, s string) (map[string]any, Manifest, error) {
	var raw map[string]any
	var m Manifest
	b, err := os.ReadFile(filepath.Join(repo, "packaging", s, "manifest.json"))
	if err != nil {
		return nil, m, err
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, m, fmt.Errorf("manifest.json: %v", err)
	}
	return raw, m, json.Unmarshal(b, &m)
}

// bundle writes <server>_<version>.mcpb and returns its name and SHA-256.
func (j *job) bundle(s string) (string, string, error) {
	raw, m, err := readManifest(j.repo, s)
	if err != nil {
		return "", "", err
	}
	raw["version"] = strings.TrimPrefix(j.version, "v")
	mb, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return "", "", err
	}
	es := []entry{{name: "manifest.json", data: append(mb, '\n')}}
	for _, plat := range m.Compatibility.Platforms {
		e, err := j.bundleBinary(s, plat)
		if err != nil {
			return "", "", err
		}
		es = append(es, e)
	}
	extras := append([][2]string{{"LICENSE", "LICENSE"}}, bundleExtras[s]...)
	for _, x := range extras {
		b, err := os.ReadFile(filepath.Join(j.repo, x[0]))
		if err != nil {
			return "", "", err
		}
		es = append(es, entry{name: x[1], data: b})
	}
	if err := checkCommands(m, es); err != nil {
		return "", "", err
	}
	name := s + "_" + j.version + ".mcpb"
	if err := writeZip(filepath.Join(j.out, name), es, j.stamp); err != nil {
		return "", "", err
	}
	sum, err := fileSHA256(filepath.Join(j.out, name))
	return name, sum, err
}

// bundleBinary is the bundle entry of one platform's binary.
func (j *job) bundleBinary(s, plat string) (entry, error) {
	bb, ok := bundleBinaries[plat]
	if !ok {
		return entry{}, fmt.Errorf("manifest declares platform %q; dist builds darwin, linux and win32", plat)
	}
	var thins [][]byte
	for _, p := range bb.thins {
		b, err := os.ReadFile(j.binPath(s, p))
		if err != nil {
			return entry{}, err
		}
		thins = append(thins, b)
	}
	data := thins[0]
	if len(thins) > 1 {
		var err error
		if data, err = universal(thins...); err != nil {
			return entry{}, err
		}
	}
	return entry{name: bb.dir + s + bb.ext, data: data, exec: true}, nil
}

// checkCommands refuses a manifest whose entry point or commands name a
// file the bundle does not hold.
func checkCommands(m Manifest, es []entry) error {
	have := map[string]bool{}
	for _, e := range es {
		have[e.name] = true
	}
	want := []string{m.Server.EntryPoint, m.Server.MCPConfig.Command}
	for _, o := range m.Server.MCPConfig.Overrides {
		want = append(want, o.Command)
	}
	for _, w := range want {
		if !have[strings.TrimPrefix(w, "${__dirname}/")] {
			return fmt.Errorf("manifest names %q, which the bundle does not hold", w)
		}
	}
	return nil
}

package proxy

import "slices"

// registries maps each ecosystem preset of [terminal.sandbox] registries
// to the host names its package manager reaches with its default
// configuration: the index or proxy it asks and the host its downloads
// come from. Nothing else: a preset never admits a code host (github.com)
// or a mirror the tool does not use by default.
var registries = map[string][]string{
	// The Go module proxy and checksum database (GOPROXY and GOSUMDB
	// defaults); modules and toolchains are both served by the proxy.
	"go": {"proxy.golang.org", "sum.golang.org"},
	// The npm registry serves package metadata and tarballs.
	"npm": {"registry.npmjs.org"},
	// PyPI's index and the host its files are downloaded from.
	"pip": {"pypi.org", "files.pythonhosted.org"},
	// crates.io's API, its sparse index and its download host.
	"cargo": {"crates.io", "index.crates.io", "static.crates.io"},
}

// RegistryNames returns the ecosystem presets RegistryHosts knows, sorted.
func RegistryNames() []string {
	names := make([]string, 0, len(registries))
	for n := range registries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RegistryHosts returns the host names of the ecosystem preset name ("go",
// "npm", "pip", "cargo"), and false for a name it does not know. The slice
// is a copy.
func RegistryHosts(name string) ([]string, bool) {
	h, ok := registries[name]
	return slices.Clone(h), ok
}

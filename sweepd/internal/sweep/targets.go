// Package sweep is sweepd's domain: which directories are regenerable
// artifacts, how a scan walks the roots, and the MCP tools. Every
// refusal it relies on (containment, symlinks, mounts, identity, markers,
// .bastion-keep, tickets, the audit gate) is decided in the safety module.
package sweep

import "strings"

// Target is one kind of regenerable directory.
type Target struct {
	Kind       string   `json:"kind"`
	Ecosystem  string   `json:"ecosystem"`
	Dirs       []string `json:"dirs"`    // paths relative to the project directory
	Markers    []string `json:"markers"` // path.Match patterns; one regular file beside the artifact (in the project dir) must match
	Inside     []string `json:"inside,omitempty"`
	Regenerate string   `json:"regenerate"`
}

var (
	pyMarkers   = []string{"*.py", "pyproject.toml", "setup.py", "setup.cfg", "requirements*.txt", "tox.ini", "noxfile.py", "Pipfile"}
	nodeMarkers = []string{"package.json"}
)

// Catalog is the built-in list of targets, in priority order: when two kinds
// claim the same directory (target/ for Cargo, Maven and SBT), the first
// whose marker is present wins.
var Catalog = []Target{
	{"cargo", "rust", []string{"target", ".xwin-cache"}, []string{"Cargo.toml"}, nil, "cargo build"},
	{"node_modules", "node", []string{"node_modules"}, nodeMarkers, nil, "npm install (or pnpm/yarn install)"},
	{"next", "node", []string{".next"}, nodeMarkers, nil, "next build"},
	{"nuxt", "node", []string{".nuxt", ".output"}, []string{"nuxt.config.*"}, nil, "nuxt build"},
	{"angular", "node", []string{".angular"}, []string{"angular.json", "package.json"}, nil, "ng build (cache)"},
	{"turbo", "node", []string{".turbo"}, []string{"turbo.json", "package.json"}, nil, "turbo run (cache)"},
	{"parcel", "node", []string{".parcel-cache"}, nodeMarkers, nil, "parcel build (cache)"},
	{"svelte-kit", "node", []string{".svelte-kit"}, []string{"svelte.config.*", "package.json"}, nil, "vite build / svelte-kit sync"},
	{"pycache", "python", []string{"__pycache__"}, []string{"*.py"}, nil, "recreated by Python on import"},
	{"venv", "python", []string{".venv", "venv"}, nil, []string{"pyvenv.cfg"}, "python -m venv .venv && pip install -r requirements.txt (or uv sync / poetry install)"},
	{"python-caches", "python", []string{".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", "__pypackages__"}, pyMarkers, nil, "recreated by pytest / mypy / ruff / tox / nox on the next run"},
	{"maven", "jvm", []string{"target"}, []string{"pom.xml"}, nil, "mvn package"},
	{"gradle", "jvm", []string{"build", ".gradle"}, []string{"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"}, nil, "gradle build"},
	{"sbt", "jvm", []string{"target", "project/target"}, []string{"build.sbt"}, nil, "sbt compile"},
	{"cmake", "c-cpp", []string{"build", "cmake-build-debug", "cmake-build-release"}, []string{"CMakeLists.txt"}, nil, "cmake -B build && cmake --build build"},
	{"unity", "unity", []string{"Library", "Temp", "Obj", "Logs", "MemoryCaptures", "Build", "Builds"}, []string{"Assembly-CSharp.csproj"}, nil, "reopen the project in Unity"},
	{"unreal", "unreal", []string{"Binaries", "Build", "Saved", "DerivedDataCache", "Intermediate"}, []string{"*.uproject"}, nil, "regenerate project files and rebuild in Unreal"},
	{"stack", "haskell", []string{".stack-work"}, []string{"stack.yaml"}, nil, "stack build"},
	{"cabal", "haskell", []string{"dist-newstyle"}, []string{"cabal.project", "*.cabal"}, nil, "cabal build"},
	{"composer", "php", []string{"vendor"}, []string{"composer.json"}, nil, "composer install"},
	{"dart", "dart", []string{".dart_tool", "build"}, []string{"pubspec.yaml"}, nil, "dart pub get / flutter build"},
	{"elixir", "elixir", []string{"_build", ".elixir_ls", ".elixir-tools", ".lexical"}, []string{"mix.exs"}, nil, "mix compile"},
	{"swift", "swift", []string{".build", ".swiftpm"}, []string{"Package.swift"}, nil, "swift build"},
	{"zig", "zig", []string{"zig-cache", ".zig-cache", "zig-out"}, []string{"build.zig"}, nil, "zig build"},
	{"godot", "godot", []string{".godot"}, []string{"project.godot"}, nil, "reopen the project in Godot"},
	{"dotnet", "dotnet", []string{"bin", "obj"}, []string{"*.csproj", "*.fsproj", "*.vbproj"}, nil, "dotnet build"},
	{"terraform", "infra", []string{".terraform"}, []string{".terraform.lock.hcl", "*.tf"}, nil, "terraform init"},
	{"jupyter", "python", []string{".ipynb_checkpoints"}, []string{"*.ipynb"}, nil, "recreated by Jupyter when notebooks are saved"},
	{"pixi", "python", []string{".pixi"}, []string{"pixi.toml"}, nil, "pixi install"},
	{"cocoapods", "swift", []string{"Pods"}, []string{"Podfile"}, nil, "pod install"},
}

// vcsDirs are never entered by a scan.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true, ".bzr": true, "_darcs": true, ".pijul": true}

// KeepFile marks a project or artifact directory (and everything beneath)
// as never reclaimable.
const KeepFile = ".bastion-keep"

// index maps an artifact's first path component to candidate targets.
type index struct {
	byName map[string][]*Target
	kinds  map[string]*Target
}

func newIndex(targets []Target, disabled map[string]bool) *index {
	ix := &index{byName: map[string][]*Target{}, kinds: map[string]*Target{}}
	for i := range targets {
		t := &targets[i]
		if disabled[t.Kind] {
			continue
		}
		ix.kinds[t.Kind] = t
		for _, d := range t.Dirs {
			first, _, _ := strings.Cut(d, "/")
			ix.byName[first] = append(ix.byName[first], t)
		}
	}
	return ix
}

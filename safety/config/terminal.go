package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/safety/proxy"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// Values of [terminal] profile.
const (
	// ProfileAllowlist (the default): shells, wrappers and interpreters can
	// never be allowlisted, so the command policy bounds what runs.
	ProfileAllowlist = "allowlist"
	// ProfileSandbox: they may be allowlisted, and the kernel boundary
	// (namespaces, Landlock, seccomp, limits) is the guarantee.
	ProfileSandbox = "sandbox"
)

// Values of [terminal.sandbox] isolation.
const (
	IsolationNamespaces = "namespaces" // the default
	IsolationLandlock   = "landlock"
)

// Values of [terminal.sandbox] network.
const (
	NetworkDeny  = "deny" // the default
	NetworkAllow = "allow"
	NetworkProxy = "proxy"
)

// Values of [terminal.sandbox] landlock.
const (
	LandlockRequired   = "required" // the default
	LandlockBestEffort = "best-effort"
	LandlockOff        = "off"
)

// Names of the persistent tool caches of [terminal.sandbox] caches.
const (
	CacheGo    = "go"
	CacheNpm   = "npm"
	CachePip   = "pip"
	CacheCargo = "cargo"
)

// The values each key accepts, default first (empty means the default).
var (
	Profiles      = []string{ProfileAllowlist, ProfileSandbox}
	Isolations    = []string{IsolationNamespaces, IsolationLandlock}
	Networks      = []string{NetworkDeny, NetworkAllow, NetworkProxy}
	LandlockModes = []string{LandlockRequired, LandlockBestEffort, LandlockOff}
	CacheNames    = []string{CacheGo, CacheNpm, CachePip, CacheCargo}
)

// Defaults and bounds of [terminal.limits]. A key left at 0 takes its
// default; any other value outside [Min, Max] is a startup error. The
// per-command limits' defaults are the sandbox's own (one source).
const (
	DefaultTimeoutSeconds = 30
	TimeoutSecondsMin     = 1
	TimeoutSecondsMax     = 3600

	DefaultMaxOutputBytes = 65536
	MaxOutputBytesMin     = 1
	MaxOutputBytesMax     = 16 << 20

	DefaultMemoryMB = sandbox.DefaultMemoryMB
	MemoryMBMin     = 16
	MemoryMBMax     = 65536

	// MaxProcesses counts tasks: processes and threads.
	DefaultMaxProcesses = sandbox.DefaultMaxProcesses
	MaxProcessesMin     = 8
	MaxProcessesMax     = 65536

	DefaultCPUSeconds = sandbox.DefaultCPUSeconds
	CPUSecondsMin     = 1
	CPUSecondsMax     = 86400

	DefaultMaxFileMB = sandbox.DefaultMaxFileMB
	MaxFileMBMin     = 1
	MaxFileMBMax     = 1048576

	DefaultMaxOpenFiles = sandbox.DefaultMaxOpenFiles
	MaxOpenFilesMin     = 16
	MaxOpenFilesMax     = 1048576

	// MaxConcurrent counts commands running at once; MaxQueued the calls
	// waiting for one of them to end.
	DefaultMaxConcurrent = 2
	MaxConcurrentMin     = 1
	MaxConcurrentMax     = 64

	// [terminal.sessions]: live sessions, idle and lifetime bounds.
	DefaultSessionsMax            = 4
	SessionsMaxMin                = 1
	SessionsMaxMax                = 64
	DefaultSessionIdleMinutes     = 30
	SessionIdleMinutesMin         = 1
	SessionIdleMinutesMax         = 1440
	DefaultSessionLifetimeMinutes = 240
	SessionLifetimeMinutesMin     = 1
	SessionLifetimeMinutesMax     = 10080

	DefaultMaxQueued = 8
	MaxQueuedMin     = 1
	MaxQueuedMax     = 1024
	DefaultDiskMB    = sandbox.DefaultDiskMB
	DiskMBMin        = 1
	DiskMBMax        = 1048576
)

// sandboxNeeds is why the sandbox profile needs the full kernel boundary.
const sandboxNeeds = `the sandbox profile lets shells and interpreters run, so the kernel boundary is the guarantee: ` +
	`it needs landlock = "required" and isolation = "namespaces"`

// EffectiveProfile returns profile with its default applied: "allowlist"
// or "sandbox".
func (t Terminal) EffectiveProfile() string { return or(t.Profile, ProfileAllowlist) }

// Sandboxed reports whether the profile is "sandbox".
func (t Terminal) Sandboxed() bool { return t.EffectiveProfile() == ProfileSandbox }

// EffectiveIsolation returns isolation with its default applied.
func (s TerminalSandbox) EffectiveIsolation() string { return or(s.Isolation, IsolationNamespaces) }

// EffectiveNetwork returns network with its default applied.
func (s TerminalSandbox) EffectiveNetwork() string { return or(s.Network, NetworkDeny) }

// EffectiveLandlock returns landlock with its default applied.
func (s TerminalSandbox) EffectiveLandlock() string { return or(s.Landlock, LandlockRequired) }

// WithDefaults returns l with every key left at 0 set to its default.
func (l TerminalLimits) WithDefaults() TerminalLimits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.TimeoutSeconds, DefaultTimeoutSeconds)
	def(&l.MaxOutputBytes, DefaultMaxOutputBytes)
	def(&l.MemoryMB, DefaultMemoryMB)
	def(&l.MaxProcesses, DefaultMaxProcesses)
	def(&l.CPUSeconds, DefaultCPUSeconds)
	def(&l.MaxFileMB, DefaultMaxFileMB)
	def(&l.MaxOpenFiles, DefaultMaxOpenFiles)
	def(&l.MaxConcurrent, DefaultMaxConcurrent)
	def(&l.MaxQueued, DefaultMaxQueued)
	def(&l.DiskMB, DefaultDiskMB)
	return l
}

// WithDefaults returns s with every key left at 0 set to its default.
func (s TerminalSessions) WithDefaults() TerminalSessions {
	if s.Max == 0 {
		s.Max = DefaultSessionsMax
	}
	if s.IdleMinutes == 0 {
		s.IdleMinutes = DefaultSessionIdleMinutes
	}
	if s.MaxLifetimeMinutes == 0 {
		s.MaxLifetimeMinutes = DefaultSessionLifetimeMinutes
	}
	return s
}

// bounds describes the [terminal.sessions] keys for validation.
func (s TerminalSessions) bounds() []limitBounds {
	return []limitBounds{
		{"max", s.Max, SessionsMaxMin, SessionsMaxMax, DefaultSessionsMax, "sessions"},
		{"idle_minutes", s.IdleMinutes, SessionIdleMinutesMin, SessionIdleMinutesMax, DefaultSessionIdleMinutes, "minutes"},
		{"max_lifetime_minutes", s.MaxLifetimeMinutes, SessionLifetimeMinutesMin, SessionLifetimeMinutesMax,
			DefaultSessionLifetimeMinutes, "minutes"},
	}
}

// limitBounds describes one [terminal.limits] key for validation.
type limitBounds struct {
	key           string
	value         int
	min, max, def int
	unit          string
}

func (l TerminalLimits) bounds() []limitBounds {
	return []limitBounds{
		{"timeout_seconds", l.TimeoutSeconds, TimeoutSecondsMin, TimeoutSecondsMax, DefaultTimeoutSeconds, "seconds"},
		{"max_output_bytes", l.MaxOutputBytes, MaxOutputBytesMin, MaxOutputBytesMax, DefaultMaxOutputBytes, "bytes"},
		{"memory_mb", l.MemoryMB, MemoryMBMin, MemoryMBMax, DefaultMemoryMB, "MiB"},
		{"max_processes", l.MaxProcesses, MaxProcessesMin, MaxProcessesMax, DefaultMaxProcesses, "processes and threads"},
		{"cpu_seconds", l.CPUSeconds, CPUSecondsMin, CPUSecondsMax, DefaultCPUSeconds, "seconds"},
		{"max_file_mb", l.MaxFileMB, MaxFileMBMin, MaxFileMBMax, DefaultMaxFileMB, "MiB"},
		{"max_open_files", l.MaxOpenFiles, MaxOpenFilesMin, MaxOpenFilesMax, DefaultMaxOpenFiles, "descriptors"},
		{"max_concurrent", l.MaxConcurrent, MaxConcurrentMin, MaxConcurrentMax, DefaultMaxConcurrent, "commands"},
		{"max_queued", l.MaxQueued, MaxQueuedMin, MaxQueuedMax, DefaultMaxQueued, "calls"},
		{"disk_mb", l.DiskMB, DiskMBMin, DiskMBMax, DefaultDiskMB, "MiB"},
	}
}

// Validate checks the [terminal] keys that need no filesystem: profile,
// isolation, landlock, network, allowed_hosts, caches and the resource
// limits, and how they combine. It lower-cases allowed_hosts in place.
// Load calls it; every problem is a Fatal naming the key and the values
// it accepts.
func (t *Terminal) Validate() error {
	s := &t.Sandbox
	for _, c := range []struct {
		key, value string
		allowed    []string
	}{
		{"terminal.profile", t.Profile, Profiles},
		{"terminal.sandbox.isolation", s.Isolation, Isolations},
		{"terminal.sandbox.landlock", s.Landlock, LandlockModes},
		{"terminal.sandbox.network", s.Network, Networks},
	} {
		if c.value != "" && !contains(c.allowed, c.value) {
			return keyFatalf(c.key, "%s must be %s, not %q%s", c.key, oneOf(c.allowed), c.value, meant(c.value, c.allowed))
		}
	}
	for _, table := range []struct {
		name   string
		bounds []limitBounds
	}{{"sessions", t.Sessions.bounds()}, {"limits", t.Limits.bounds()}} {
		for _, b := range table.bounds {
			if b.value != 0 && (b.value < b.min || b.value > b.max) {
				key := "terminal." + table.name + "." + b.key
				return keyFatalf(key, "%s must be between %d and %d %s (0 or unset means the default, %d), not %d",
					key, b.min, b.max, b.unit, b.def, b.value)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range s.Caches {
		if !contains(CacheNames, c) {
			return keyFatalf("terminal.sandbox.caches", "terminal.sandbox.caches entry %q is not a cache terminald knows%s; use some of %s", c, meant(c, CacheNames), oneOf(CacheNames))
		}
		if seen[c] {
			return keyFatalf("terminal.sandbox.caches", "terminal.sandbox.caches lists %q twice", c)
		}
		seen[c] = true
	}
	for i, h := range s.AllowedHosts {
		norm, err := HostPattern(h)
		if err != nil {
			return keyFatalf("terminal.sandbox.allowed_hosts", "terminal.sandbox.allowed_hosts entry %q: %v", h, err)
		}
		s.AllowedHosts[i] = norm
	}
	seen = map[string]bool{}
	for _, r := range s.Registries {
		if _, ok := proxy.RegistryHosts(r); !ok {
			return keyFatalf("terminal.sandbox.registries", "terminal.sandbox.registries entry %q is not a registry preset terminald knows%s; use some of %s",
				r, meant(r, proxy.RegistryNames()), oneOf(proxy.RegistryNames()))
		}
		if seen[r] {
			return keyFatalf("terminal.sandbox.registries", "terminal.sandbox.registries lists %q twice", r)
		}
		seen[r] = true
	}
	network := s.EffectiveNetwork()
	switch {
	case len(s.AllowedHosts) > 0 && network != NetworkProxy:
		return keyFatalf("terminal.sandbox.allowed_hosts", "terminal.sandbox.allowed_hosts only applies to network = \"proxy\" (network is %q): "+
			"set network = \"proxy\" or remove allowed_hosts", network)
	case len(s.Registries) > 0 && network != NetworkProxy:
		return keyFatalf("terminal.sandbox.registries", "terminal.sandbox.registries only applies to network = \"proxy\" (network is %q): "+
			"set network = \"proxy\" or remove registries", network)
	case network == NetworkProxy && len(s.AllowedHosts) == 0 && len(s.Registries) == 0:
		return keyFatalf("terminal.sandbox.network", "terminal.sandbox.network = \"proxy\" needs registries, allowed_hosts or both: the package "+
			"registries (registries = [\"go\", \"npm\", \"pip\", \"cargo\"]) and other hosts commands may reach "+
			"through the proxy (for example allowed_hosts = [\"example.com\", \"*.example.org\"])")
	case network == NetworkProxy && s.EffectiveIsolation() != IsolationNamespaces:
		return keyFatalf("terminal.sandbox.network", "terminal.sandbox.network = \"proxy\" needs isolation = \"namespaces\": only a network "+
			"namespace makes the proxy the command's only way out")
	}
	if t.Sandboxed() && (s.EffectiveLandlock() != LandlockRequired || s.EffectiveIsolation() != IsolationNamespaces) {
		return keyFatalf("terminal.profile", "terminal.profile = \"sandbox\" with landlock = %q and isolation = %q: %s",
			s.EffectiveLandlock(), s.EffectiveIsolation(), sandboxNeeds)
	}
	return nil
}

// ProxyHosts returns the host patterns the proxy admits: allowed_hosts,
// then the hosts of each registries preset not already listed.
func (s TerminalSandbox) ProxyHosts() []string {
	hosts := slices.Clone(s.AllowedHosts)
	for _, r := range s.Registries {
		rh, _ := proxy.RegistryHosts(r)
		for _, h := range rh {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}

// HostPattern checks one allowed_hosts entry and returns it in lower
// case. A pattern is a host name ("example.com", "localhost"), an IPv4
// address, or "*." followed by a domain of at least two labels whose last
// label is not numeric ("*.example.org"). It refuses schemes, user info,
// paths, ports (an allowed host is admitted on any port), IPv6 addresses,
// a trailing dot, "*" alone, single-label wildcards such as "*.com", and
// '*' anywhere but a leading "*.".
func HostPattern(s string) (string, error) {
	h := strings.ToLower(s)
	switch {
	case h == "":
		return "", fmt.Errorf("an empty host")
	case strings.Contains(h, "://"):
		return "", fmt.Errorf("write the host alone, without a scheme (example.com, not https://example.com)")
	case strings.ContainsAny(h, "/?#"):
		return "", fmt.Errorf("write the host alone, without a path")
	case strings.Contains(h, "@"):
		return "", fmt.Errorf("write the host alone, without user information")
	case strings.Contains(h, ":"):
		return "", fmt.Errorf("write the host alone: a pattern has no port (an allowed host is admitted on any port) and IPv6 addresses are not supported")
	case h == "*" || h == "*.":
		return "", fmt.Errorf("\"*\" would admit every host; list the hosts, or use network = \"allow\" if that is really meant")
	case strings.HasPrefix(h, "."):
		return "", fmt.Errorf("write \"*%s\" for the subdomains of %s", h, h[1:])
	case strings.HasSuffix(h, "."):
		return "", fmt.Errorf("write it without the trailing dot")
	}
	name, wild := strings.CutPrefix(h, "*.")
	if strings.Contains(name, "*") {
		return "", fmt.Errorf("'*' is allowed only as a leading \"*.\" (*.example.org)")
	}
	labels, err := hostLabels(name)
	if err != nil {
		return "", err
	}
	numeric := isNumeric(labels[len(labels)-1])
	switch {
	case wild && (len(labels) < 2 || numeric):
		return "", fmt.Errorf("a wildcard needs a domain of at least two labels (*.example.org), not a top-level domain or an address")
	case numeric && !wild:
		if ip := net.ParseIP(name); ip == nil || ip.To4() == nil {
			return "", fmt.Errorf("%q is neither a host name nor an IPv4 address", name)
		}
	}
	return h, nil
}

// hostLabels splits a lower-case host name into its labels, refusing
// anything that is not a DNS name of ASCII letters, digits, '-' and '_'.
func hostLabels(name string) ([]string, error) {
	if len(name) > 253 {
		return nil, fmt.Errorf("a host name is at most 253 characters")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return nil, fmt.Errorf("an empty label (two dots in a row)")
		}
		if len(l) > 63 {
			return nil, fmt.Errorf("the label %q is longer than 63 characters", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return nil, fmt.Errorf("the label %q starts or ends with '-'", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if c >= 0x80 {
				return nil, fmt.Errorf("write an internationalised name in its ASCII (xn--) form")
			}
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return nil, fmt.Errorf("%q is not a character of a host name", string(c))
			}
		}
	}
	return labels, nil
}

func isNumeric(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// MatchHost reports whether host (as a client names it, without a port)
// matches any of the validated patterns. The host is compared in lower
// case and without one trailing dot; "*.example.org" matches a.example.org
// and a.b.example.org but not example.org; anything that is not a valid
// host name matches nothing.
func MatchHost(patterns []string, host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" || strings.Contains(h, "*") {
		return false
	}
	if _, err := hostLabels(h); err != nil {
		return false
	}
	for _, p := range patterns {
		if d, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(h, "."+d) {
				return true
			}
		} else if h == p {
			return true
		}
	}
	return false
}

// oneOf renders allowed values as `"a", "b" or "c"`.
func oneOf(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

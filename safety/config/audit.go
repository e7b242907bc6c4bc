package config

// Audit is the [audit] section: how the audit log rotates. The log's file
// and fail mode are the top-level keys audit_log and audit_fail_mode.
type Audit struct {
	// MaxMB rotates the audit log before a record would grow it past this
	// many MiB (1..1024, default 8; 0 means the default). The log FILE
	// becomes FILE.1, FILE.1 becomes FILE.2 and so on, and the first record
	// of the new FILE names the hash of the last record of FILE.1, so the
	// chain goes on across files; `<server> audit verify FILE FILE.1 ...`
	// checks a set of them. A server verifies the whole current file at
	// every start (a record changed in the middle stops it), so this also
	// bounds start time: 50 to 110 ms for a full 8 MiB file on a busy
	// 2-vCPU machine, about ten times that for 64 MiB (audit's
	// BenchmarkOpenFullLog).
	MaxMB int `toml:"max_mb" json:"max_mb"`
	// Keep is how many rotated files are kept, FILE.1 (the newest) to
	// FILE.<keep> (1..1000, default 5; 0 means the default); at rotation
	// the oldest is replaced. Lowering it leaves older files in place.
	Keep int `toml:"keep" json:"keep"`
}

// [audit] bounds and defaults (docs/policy.md and the policy schema list
// them).
const (
	AuditMaxMBMin     = 1
	AuditMaxMBMax     = 1024
	DefaultAuditMaxMB = 8
	AuditKeepMin      = 1
	AuditKeepMax      = 1000
	DefaultAuditKeep  = 5
)

// MaxBytes returns max_mb in bytes, with the default applied (what
// audit.Options.MaxBytes takes).
func (a Audit) MaxBytes() int64 {
	mb := a.MaxMB
	if mb == 0 {
		mb = DefaultAuditMaxMB
	}
	return int64(mb) << 20
}

// Files returns keep with the default applied (what audit.Options.Keep
// takes).
func (a Audit) Files() int {
	if a.Keep == 0 {
		return DefaultAuditKeep
	}
	return a.Keep
}

// validate refuses a value outside its range.
func (a Audit) validate() error {
	if a.MaxMB != 0 && (a.MaxMB < AuditMaxMBMin || a.MaxMB > AuditMaxMBMax) {
		return keyFatalf("audit.max_mb", "[audit] max_mb must be between %d and %d, not %d", AuditMaxMBMin, AuditMaxMBMax, a.MaxMB)
	}
	if a.Keep != 0 && (a.Keep < AuditKeepMin || a.Keep > AuditKeepMax) {
		return keyFatalf("audit.keep", "[audit] keep must be between %d and %d, not %d", AuditKeepMin, AuditKeepMax, a.Keep)
	}
	return nil
}

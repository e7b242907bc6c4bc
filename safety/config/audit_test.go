package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditRotationKeys(t *testing.T) {
	cases := []struct {
		name     string
		toml     string
		maxBytes int64
		keep     int
		err      string
	}{
		{name: "defaults", toml: "", maxBytes: DefaultAuditMaxMB << 20, keep: DefaultAuditKeep},
		{name: "both set", toml: "[audit]\nmax_mb = 64\nkeep = 10\n", maxBytes: 64 << 20, keep: 10},
		{name: "smallest", toml: "[audit]\nmax_mb = 1\nkeep = 1\n", maxBytes: 1 << 20, keep: 1},
		{name: "largest", toml: "[audit]\nmax_mb = 1024\nkeep = 1000\n", maxBytes: 1024 << 20, keep: 1000},
		{name: "max_mb negative", toml: "[audit]\nmax_mb = -1\n", err: "[audit] max_mb must be between 1 and 1024, not -1"},
		{name: "max_mb too large", toml: "[audit]\nmax_mb = 1025\n", err: "[audit] max_mb must be between"},
		{name: "keep negative", toml: "[audit]\nkeep = -5\n", err: "[audit] keep must be between 1 and 1000, not -5"},
		{name: "keep too large", toml: "[audit]\nkeep = 1001\n", err: "[audit] keep must be between"},
		{name: "max_mb not an integer", toml: "[audit]\nmax_mb = \"8\"\n", err: "line 2"},
		{name: "unknown key", toml: "[audit]\nmax_files = 3\n", err: "line 2: unknown key audit.max_files"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(path, []byte(c.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := Load(path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Load: %v, want an error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Audit.MaxBytes() != c.maxBytes || p.Audit.Files() != c.keep {
				t.Fatalf("MaxBytes %d, Files %d; want %d, %d", p.Audit.MaxBytes(), p.Audit.Files(), c.maxBytes, c.keep)
			}
		})
	}
}

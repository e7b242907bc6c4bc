package config

import "testing"

// TestRadarSummaryMaxEntries: [radar] summary_max_entries loads within its
// bounds and refuses the start outside them.
func TestRadarSummaryMaxEntries(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		want       int
		fatal      string
	}{
		{"absent", "", 0, ""},
		{"raised", "summary_max_entries = 5000000", 5_000_000, ""},
		{"lowest", "summary_max_entries = 1000", 1000, ""},
		{"too low", "summary_max_entries = 999", 0, "radar.summary_max_entries must be between 1000 and 1000000000"},
		{"negative", "summary_max_entries = -1", 0, "radar.summary_max_entries"},
		{"too high", "summary_max_entries = 1000000001", 0, "radar.summary_max_entries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol, err := Load(write(t, dir, "policy.toml", "[radar]\n"+c.body+"\n"))
			if c.fatal != "" {
				wantFatal(t, err, c.fatal)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pol.Radar.SummaryMaxEntries != c.want {
				t.Fatalf("summary_max_entries %d, want %d", pol.Radar.SummaryMaxEntries, c.want)
			}
		})
	}
}

package config

// Bounds of [radar] summary_max_entries; 0 (absent) means the radar's
// default of 2,000,000 entries (risk.DefaultSummaryMaxEntries).
const (
	MinSummaryMaxEntries = 1_000
	MaxSummaryMaxEntries = 1_000_000_000
)

// validate checks the radar's section: summary_max_entries is absent or
// within its bounds.
func (r Radar) validate() error {
	n := r.SummaryMaxEntries
	if n != 0 && (n < MinSummaryMaxEntries || n > MaxSummaryMaxEntries) {
		return keyFatalf("radar.summary_max_entries", "radar.summary_max_entries must be between %d and %d (absent means 2000000), not %d",
			MinSummaryMaxEntries, MaxSummaryMaxEntries, n)
	}
	return nil
}

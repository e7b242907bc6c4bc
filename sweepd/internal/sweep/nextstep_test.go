package sweep

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReclaimDescriptionStatesTheConfiguredTicketTTL checks the reclaim
// tool tells the client how long its ids live as ticket_ttl sets it, not a
// fixed hour.
func TestReclaimDescriptionStatesTheConfiguredTicketTTL(t *testing.T) {
	for _, c := range []struct {
		name string
		ttl  time.Duration // 0: the default
		want string
	}{
		{"default", 0, "expire 1h after the scan"},
		{"ninety minutes", 90 * time.Minute, "expire 1h30m after the scan"},
		{"ten minutes", 10 * time.Minute, "expire 10m after the scan"},
		{"one week", 168 * time.Hour, "expire 168h after the scan"},
		{"seconds", 45 * time.Second, "expire 45s after the scan"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []envOpt
			if c.ttl != 0 {
				opts = append(opts, withTTL(c.ttl))
			}
			e := newEnv(t, opts...)
			for _, tool := range wireTools(t, e.srv) {
				if tool["name"] != "reclaim" {
					continue
				}
				d, _ := tool["description"].(string)
				if !strings.Contains(d, c.want) || strings.Contains(d, "an hour") {
					t.Fatalf("description %q: want %q", d, c.want)
				}
				return
			}
			t.Fatal("no reclaim tool")
		})
	}
}

// TestReclaimReasonsNameTheRightNextStep checks each reclaim answer that
// names a next step names the one that works.
func TestReclaimReasonsNameTheRightNextStep(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.root, "proj"))
	id := e.scanOne("proj").ID
	for _, c := range []struct {
		name   string
		args   map[string]any
		reason string // in the whole answer's reason
		per    string // in the one id's reason
	}{
		{"dry run says confirm delete", map[string]any{"ids": []string{id}}, `call reclaim again with the same ids and confirm: "delete"`, "would be deleted"},
		{"wrong confirm says confirm delete", map[string]any{"ids": []string{id}, "confirm": "yes"}, `call reclaim again with the same ids and confirm: "delete"`, "would be deleted"},
		{"deleted", map[string]any{"ids": []string{id}, "confirm": "delete"}, "1 of 1 deleted", "deleted"},
		{"used id says scan again", map[string]any{"ids": []string{id}, "confirm": "delete"}, "see results", "scan again"},
		{"unknown id says scan again", map[string]any{"ids": []string{"f-0123456789abcdef01234567"}}, "see results", "scan again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, d := e.reclaim(c.args)
			if !strings.Contains(r.Reason, c.reason) {
				t.Fatalf("reason %q: want %q", r.Reason, c.reason)
			}
			if o := oneOutcome(t, d); !strings.Contains(o.Reason, c.per) {
				t.Fatalf("result %+v: want %q", o, c.per)
			}
		})
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchSandbox is a demo sandbox whose policy also allows `true`.
func benchSandbox(b *testing.B) string {
	b.Helper()
	d := demoSandbox(b)
	p := filepath.Join(d, "policy.toml")
	pol, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	s := strings.Replace(string(pol), "[terminal.allowlist]\ncommands = [\n", "[terminal.allowlist]\ncommands = [\n  \"true\",\n", 1)
	if s == string(pol) {
		b.Fatal("the demo policy has no [terminal.allowlist] commands list to add true to")
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
	return d
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkTelemetryOverhead measures what telemetry costs a tool call:
// run_command("true") on terminald and move_file on organizerd, each
// against servers started side by side, telemetry off, on (sending
// to a live local Collector) and on with the Collector down, the calls
// interleaved round-robin so that all three see the same machine. It
// reports the p50 ratios on/off and down/off (goal: <= 1.05 each), and
// off-again/off, a second server without telemetry, as the noise floor.
// BASTION_OTEL_BENCH_CALLS sets the calls per server (default 400),
// BASTION_OTEL_BENCH_TOOLS=move_file measures one tool only, and
// BASTION_OTEL_BENCH_SIGNALS=1 adds one server per signal alone.
func BenchmarkTelemetryOverhead(b *testing.B) {
	bin, otelcol := otelBinaries(b)
	col := startCollector(b, otelcol)
	n := 400
	if v, err := strconv.Atoi(os.Getenv("BASTION_OTEL_BENCH_CALLS")); err == nil && v > 0 {
		n = v
	}
	modes := []struct {
		name string
		env  []string
	}{
		{"off", nil},
		{"off-again", nil}, // the noise floor: the same as off
		{"on", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.http, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}},
		{"down", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + freeAddr(b), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}},
	}
	if os.Getenv("BASTION_OTEL_BENCH_SIGNALS") != "" { // where the cost goes: one signal at a time
		on := modes[2].env
		modes = append(modes[:2],
			struct {
				name string
				env  []string
			}{"traces", append([]string{"OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}, on...)},
			struct {
				name string
				env  []string
			}{"metrics", append([]string{"OTEL_TRACES_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}, on...)},
			struct {
				name string
				env  []string
			}{"logs", append([]string{"OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"}, on...)})
	}
	for _, tool := range []struct{ server, name string }{{"terminald", "run_command"}, {"organizerd", "move_file"}} {
		if only := os.Getenv("BASTION_OTEL_BENCH_TOOLS"); only != "" && !strings.Contains(only, tool.name) {
			continue
		}
		servers := make([]*server, len(modes))
		for i, m := range modes {
			servers[i] = startServer(b, bin, tool.server, filepath.Join(benchSandbox(b), "policy.toml"), m.env...)
		}
		times := make([][]time.Duration, len(modes))
		for i := 0; i < n+20; i++ {
			args := map[string]any{"command": "true"}
			if tool.name == "move_file" {
				args = map[string]any{"src": "report.pdf", "dest": "Documents/report.pdf"}
				if i%2 == 1 {
					args = map[string]any{"src": "Documents/report.pdf", "dest": "report.pdf"}
				}
			}
			for k := range servers {
				j := (i + k) % len(servers) // each server goes first in turn
				s := servers[j]
				code, d := s.call(b, tool.name, args)
				if code != "OK" {
					b.Fatalf("%s %s (%s): %s\n%s", tool.server, tool.name, modes[j].name, code, s.stderr.String())
				}
				if i >= 20 { // warm-up
					times[j] = append(times[j], d)
				}
			}
		}
		for _, s := range servers {
			s.stop()
		}
		off := p50(times[0])
		line := fmt.Sprintf("%s %s: p50 off %v", tool.server, tool.name, off)
		for j := 1; j < len(modes); j++ {
			r := float64(p50(times[j])) / float64(off)
			line += fmt.Sprintf(", %s %v (%.3fx)", modes[j].name, p50(times[j]), r)
			b.ReportMetric(r, tool.name+"_"+modes[j].name+"/off")
		}
		fmt.Println(line + " (goal: on and down <= 1.05x)")
	}
}

package mcpkit

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// soakFigures is what a soak samples of the server process.
type soakFigures struct {
	RSSKB, HWMKB, FDs, Threads, Goroutines int
}

func (f soakFigures) String() string {
	s := fmt.Sprintf("RSS %d KiB (peak %d KiB), %d fds, %d threads", f.RSSKB, f.HWMKB, f.FDs, f.Threads)
	if f.Goroutines > 0 {
		s += fmt.Sprintf(", %d goroutines", f.Goroutines)
	}
	return s
}

// soakTools are the read-only tools of the child server.
var soakTools = []string{"echo", "runtime_stats"}

// soakCall makes one tools/call and waits for its answer.
func (c *child) soakCall(id int, tool string) map[string]any {
	c.t.Helper()
	c.sendLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`,
		id, tool, map[string]string{"echo": `{"path":"soak","depth":3}`}[tool]+map[string]string{"runtime_stats": `{}`}[tool]))
	m := c.next(30 * time.Second)
	if m["id"] != float64(id) || m["result"] == nil {
		c.t.Fatalf("call %d of %s: %v", id, tool, trim(m))
	}
	return m
}

func (c *child) figures(id int) soakFigures {
	c.t.Helper()
	m := c.soakCall(id, "runtime_stats")
	var st struct {
		Detail struct{ Goroutines int } `json:"detail"`
	}
	sc, _ := m["result"].(map[string]any)["structuredContent"]
	b, _ := json.Marshal(sc)
	if err := json.Unmarshal(b, &st); err != nil || st.Detail.Goroutines == 0 {
		c.t.Fatalf("runtime_stats: %v %s", err, b)
	}
	pid := c.cmd.Process.Pid
	return soakFigures{status(c.t, pid, "VmRSS"), status(c.t, pid, "VmHWM"), openFDs(c.t, pid), status(c.t, pid, "Threads"), st.Detail.Goroutines}
}

// soak makes n calls of each read-only tool in one stdio session and
// returns the figures after a warm-up and at the end.
func soak(t testing.TB, n int) (start, end soakFigures, took time.Duration) {
	c := startChild(t, "stdio")
	c.sendLine(initLine)
	c.next(10 * time.Second)
	c.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 0
	for ; id < 200; id++ { // warm-up
		c.soakCall(id, soakTools[id%len(soakTools)])
	}
	start = c.figures(id)
	t0 := time.Now()
	for i := 0; i < n*len(soakTools); i++ {
		id++
		c.soakCall(id, soakTools[i%len(soakTools)])
	}
	took = time.Since(t0)
	end = c.figures(id + 1)
	return start, end, took
}

// soakCaps is how much each figure may grow between start and end.
type soakCaps struct{ RSSKB, FDs, Threads, Goroutines int }

// soakGrowth is the soak's caps. The RSS cap is widened by raceMemFactor
// for a server process that is this test binary built with -race.
var soakGrowth = soakCaps{RSSKB: 16 << 10 * raceMemFactor, FDs: 2, Threads: 4, Goroutines: 8}

// checkSoak fails when a figure grew past its cap between start and end.
func checkSoak(t testing.TB, start, end soakFigures) {
	t.Helper()
	checkGrowth(t, start, end, soakGrowth)
}

// checkGrowth fails when a figure grew past its cap in caps.
func checkGrowth(t testing.TB, start, end soakFigures, caps soakCaps) {
	t.Helper()
	if end.RSSKB > start.RSSKB+caps.RSSKB {
		t.Errorf("RSS grew from %d KiB to %d KiB (cap +%d KiB)", start.RSSKB, end.RSSKB, caps.RSSKB)
	}
	if end.FDs > start.FDs+caps.FDs {
		t.Errorf("open fds grew from %d to %d (cap +%d)", start.FDs, end.FDs, caps.FDs)
	}
	if end.Goroutines > start.Goroutines+caps.Goroutines {
		t.Errorf("goroutines grew from %d to %d (cap +%d)", start.Goroutines, end.Goroutines, caps.Goroutines)
	}
	if end.Threads > start.Threads+caps.Threads {
		t.Errorf("threads grew from %d to %d (cap +%d)", start.Threads, end.Threads, caps.Threads)
	}
}

// TestSoakReadOnlyTools: 5,000 calls of each read-only tool in one session;
// RSS, fds, threads and goroutines do not grow past their caps.
// BenchmarkSoakReadOnlyTools makes the full 100,000.
func TestSoakReadOnlyTools(t *testing.T) {
	start, end, took := soak(t, 5000)
	t.Logf("5,000 calls of each of %v in %s\n  start: %v\n  end:   %v", soakTools, took.Round(time.Millisecond), start, end)
	checkSoak(t, start, end)
}

// BenchmarkSoakReadOnlyTools: 100,000 calls of each read-only tool in one
// stdio session of a server process; prints the figures at start and end
// and fails past the same caps as the test. Run with -benchtime 1x.
func BenchmarkSoakReadOnlyTools(b *testing.B) {
	for i := 0; i < b.N; i++ {
		start, end, took := soak(b, 100000)
		fmt.Printf("soak: 100,000 calls of each of %v in one stdio session in %s (%.0f calls/s)\n  start: %v\n  end:   %v\n",
			soakTools, took.Round(time.Millisecond), float64(100000*len(soakTools))/took.Seconds(), start, end)
		checkSoak(b, start, end)
		b.ReportMetric(float64(end.RSSKB-start.RSSKB), "rss-growth-KiB")
	}
}

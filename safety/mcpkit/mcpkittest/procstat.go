package mcpkittest

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ProcStatus is one numeric field of /proc/<pid>/status (VmHWM and VmRSS
// in kB, Threads as a count). Benchmarks and soak tests read a server
// process's figures from outside it.
func ProcStatus(t testing.TB, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// ProcCPU is a process's user+system CPU time so far, from
// /proc/<pid>/stat (clock ticks of 10 ms).
func ProcCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which ends at the last ')'.
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, st)
	}
	return time.Duration(u+s) * 10 * time.Millisecond
}

// Median is the middle of ds (the upper middle of an even count).
func Median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

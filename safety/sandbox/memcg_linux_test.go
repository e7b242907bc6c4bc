package sandbox

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The oom_kill count is read from both files that carry it.
func TestOOMKillCountIsReadFromV1AndV2Files(t *testing.T) {
	v1 := "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"
	v2 := "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n"
	if n := oomKills([]byte(v1)); n != 3 {
		t.Errorf("memory.oom_control: %d, want 3", n)
	}
	if n := oomKills([]byte(v2)); n != 2 {
		t.Errorf("memory.events: %d, want 2", n)
	}
	if n := oomKills([]byte("oom_kill_disable 0\n")); n != 0 {
		t.Errorf("no oom_kill line: %d", n)
	}
}

// A run's memory cgroup does not outlive its helper: after a few runs and
// the end of the helper kept for the next command, the server holds at
// most the group of the armed thread kept ready. Where the server
// cannot make memory cgroups (unprivileged on cgroup v1), the confinement
// names the watchdog instead.
func TestMemoryCgroupOfARunIsRemoved(t *testing.T) {
	kind, parent := memcgAvailable()
	bx := newBox(t)
	s := bx.spec(t, "true")
	s.Stdout, s.Stderr = io.Discard, io.Discard
	for i := 0; i < 4; i++ {
		out, err := Run(context.Background(), s)
		if err != nil || out.ExitCode != 0 {
			t.Fatalf("run %d: %v %+v", i, err, out)
		}
		if kind == memcgNone {
			if !strings.Contains(out.Confinement, "memory: watchdog") {
				t.Fatalf("no memory cgroup, yet the confinement says %q", out.Confinement)
			}
			return
		}
		if !strings.Contains(out.Confinement, "memory: memcg v") {
			t.Errorf("run %d: the confinement %q does not name the memory cgroup", i, out.Confinement)
		}
	}
	// The helper kept for the next command (reuse_linux.go) keeps its
	// group until it ends.
	DiscardPrepared()
	prefix := "bastion-" + strconv.Itoa(os.Getpid()) + "-"
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				left = append(left, filepath.Join(parent, e.Name()))
			}
		}
		if len(left) <= 1 {
			return
		}
	}
	t.Errorf("memory cgroups left after the runs: %v", left)
}

// TestCommandIsTheOOMKillersChoice: where a run has a memory cgroup and
// the server could shield the helper (oom_score_adj -1000, which needs
// CAP_SYS_RESOURCE), the command starts at 1000, so that the group's OOM
// killer chooses it rather than its helper. The forker's write was refused
// by its own Landlock domain and the command kept the helper's score; the
// helper's main goroutine writes it now (forker.raiseOOM), for a fresh
// helper and for one kept from the last command alike. Where the server
// cannot lower a score, the helper is asked to raise the command's anyway
// (raiseOOMEnv), so that the write itself is tested; without a memory
// cgroup the command keeps the score it inherits.
func TestCommandIsTheOOMKillersChoice(t *testing.T) {
	kind, _ := memcgAvailable()
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(b))
	if kind != memcgNone {
		want = "1000"
		if !canLowerOOMScore(t) {
			old := helperEnv
			helperEnv = append(slices.Clip(old), raiseOOMEnv+"=1")
			t.Cleanup(func() { helperEnv = old })
		}
	}
	bx := newBox(t)
	for i := 0; i < 3; i++ {
		var out bytes.Buffer
		s := bx.spec(t, "cat", "/proc/self/oom_score_adj")
		s.Stdout, s.Stderr = &out, io.Discard
		o, err := Run(context.Background(), s)
		if err != nil || o.ExitCode != 0 {
			t.Fatalf("run %d: %v %+v", i, err, o)
		}
		if got := strings.TrimSpace(out.String()); got != want {
			t.Fatalf("run %d (%s): the command's oom_score_adj is %s, want %s", i, o.Confinement, got, want)
		}
	}
}

// canLowerOOMScore reports whether this process may lower another's
// oom_score_adj below 0, as shieldFromOOM does.
func canLowerOOMScore(t *testing.T) bool {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	return os.WriteFile("/proc/"+strconv.Itoa(c.Process.Pid)+"/oom_score_adj", []byte("-1000"), 0) == nil
}

// Files a command writes pass through the page cache, which the memory
// cgroup charges too: writing five times memory_mb of files (each under
// max_file_mb, all under disk_mb) must not be taken for a memory hog, the
// kernel reclaiming the written pages instead. Each file reaches the disk
// before the next: cgroup v1 does not throttle a group's dirty pages, so
// on a loaded machine a command that writes faster than the disk takes it
// can be stopped as memory (docs/terminald.md, Memory the command pins).
func TestMemoryCgroupLetsWrittenFilesBeReclaimed(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		token := bndToken("diskholdsync")
		s := b.py(t, "diskholdsync", "107", "3", token)
		s.Limits = Limits{MaxFileMB: 4, MemoryMB: 64}
		s.Timeout = 60 * time.Second
		out, err := bndRunGuarded(t, s, token, 70*time.Second)
		if err != nil || out.ExitCode != 0 || bndHeldMiB(b.stdout.String()) != 321 {
			t.Errorf("%s: writing 321 MiB of files under memory_mb = 64: %v %+v\n%s", iso, err, out, b.transcript())
		}
	})
}

package main

import (
	"os"
	"strings"
	"testing"
)

// TestBinaryWarnsOfAJailUnderDevShm: a jail under /dev/shm starts, with a
// warning that names it and says why every command will start its own
// helper (sandbox.UnderViewShm); a jail elsewhere gets no such warning.
func TestBinaryWarnsOfAJailUnderDevShm(t *testing.T) {
	jail, err := os.MkdirTemp("/dev/shm", "jail-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(jail) })
	const warning = "no sandbox helper can be kept between commands"
	r := runBin(t, cleanEnv(t, "XDG_STATE_HOME="+t.TempDir()), "--config", policy(t, jail, allow))
	if r.Code != 0 || !strings.Contains(r.Stderr, "terminald ready") || !strings.Contains(r.Stderr, warning) || !strings.Contains(r.Stderr, "path="+jail) {
		t.Fatalf("jail under /dev/shm: exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
	r = runBin(t, cleanEnv(t, "XDG_STATE_HOME="+t.TempDir()), "--config", policy(t, t.TempDir(), allow))
	if r.Code != 0 || !strings.Contains(r.Stderr, "terminald ready") || strings.Contains(r.Stderr, warning) {
		t.Fatalf("jail elsewhere: exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
}

package risk

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

type reloads struct {
	mu  sync.Mutex
	got []error
	ch  chan struct{}
}

func (r *reloads) hook(_ uint64, err error) {
	r.mu.Lock()
	r.got = append(r.got, err)
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

func (r *reloads) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-r.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

const ruleA = "[[rule]]\npattern = \"*.alpha\"\ncategory = \"RISK\"\nreason = \"alpha\"\n"
const ruleB = "[[rule]]\npattern = \"*.beta\"\ncategory = \"RISK\"\nreason = \"beta\"\n"

// saveByRename writes content the way editors do: a temporary file renamed
// over the original.
func saveByRename(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".swp-tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func startWatch(t *testing.T, e *Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	time.Sleep(50 * time.Millisecond) // let the watch be registered
}

func TestWatchReloadsRuleFileSavedByRename(t *testing.T) {
	dir := t.TempDir()
	op := filepath.Join(dir, "rules.toml")
	saveByRename(t, op, ruleA)
	rl := &reloads{ch: make(chan struct{}, 1)}
	e := newEngine(t, Options{RuleFiles: []string{op}, OnReload: rl.hook})
	root := t.TempDir()
	if classifyPath(t, e, root, "x.beta", false).Metadata.Importance == HighRisk {
		t.Fatal("beta rule active before the edit")
	}
	startWatch(t, e)
	v := e.Version()
	saveByRename(t, op, ruleB)
	if err := rl.wait(t); err != nil {
		t.Fatalf("reload failed: %v", err)
	}
	if e.Version() <= v {
		t.Errorf("version not bumped: %d -> %d", v, e.Version())
	}
	if classifyPath(t, e, root, "x.beta", false).Metadata.Importance != HighRisk {
		t.Error("reload did not pick up the new rule")
	}
	if classifyPath(t, e, root, "x.alpha", false).Metadata.Importance == HighRisk {
		t.Error("old rule still active after reload")
	}
	// A second save in the same directory is seen too (the watch survived the rename).
	saveByRename(t, op, ruleA)
	if err := rl.wait(t); err != nil || classifyPath(t, e, root, "x.alpha", false).Metadata.Importance != HighRisk {
		t.Errorf("second reload: %v", err)
	}
}

func TestWatchKeepsLastGoodRulesOnBrokenEdit(t *testing.T) {
	dir := t.TempDir()
	op := filepath.Join(dir, "rules.toml")
	saveByRename(t, op, ruleA)
	rl := &reloads{ch: make(chan struct{}, 1)}
	e := newEngine(t, Options{RuleFiles: []string{op}, OnReload: rl.hook})
	startWatch(t, e)
	v := e.Version()
	// Not TOML (a missing "]"): the whole file is refused. A rule that is
	// merely invalid is refused alone (TestRuleFileDecodingIsStrict).
	saveByRename(t, op, "[[rule]\npattern = \"*.beta\"\ncategory = \"RISK\"\nreason = \"typo\"\n")
	if err := rl.wait(t); err == nil {
		t.Fatal("a broken edit reloaded without error")
	}
	if e.Version() != v {
		t.Errorf("version changed on a failed reload: %d -> %d", v, e.Version())
	}
	if classifyPath(t, e, t.TempDir(), "x.alpha", false).Metadata.Importance != HighRisk {
		t.Error("the last good rules were dropped")
	}
}

func TestWatchDebouncesBurstIntoOneReload(t *testing.T) {
	dir := t.TempDir()
	op := filepath.Join(dir, "rules.toml")
	saveByRename(t, op, ruleA)
	rl := &reloads{ch: make(chan struct{}, 1)}
	e := newEngine(t, Options{RuleFiles: []string{op}, OnReload: rl.hook})
	startWatch(t, e)
	for range 5 {
		if err := os.WriteFile(op, []byte(ruleB), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rl.wait(t)
	time.Sleep(300 * time.Millisecond)
	rl.mu.Lock()
	n := len(rl.got)
	rl.mu.Unlock()
	if n != 1 {
		t.Errorf("%d reloads for one burst of writes, want 1", n)
	}
}

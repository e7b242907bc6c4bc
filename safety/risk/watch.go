package risk

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/fsnotify/fsnotify"
)

// reloadDebounce is how long Watch waits after the last change to a rule
// file before reloading, so an editor's burst of events costs one reload.
const reloadDebounce = 100 * time.Millisecond

// Watch reloads the operator rule files when they change, until ctx is
// done. It watches the files' parent directories, not the files, because
// editors save by writing a temporary file and renaming it over the old
// one, which ends a watch on the file itself. A burst of events is
// debounced into one reload; a reload that fails keeps the last good rules
// and logs why (see Reload). Watch returns nil when ctx ends, or an error
// if the directories cannot be watched.
func (e *Engine) Watch(ctx context.Context) error {
	if len(e.opts.RuleFiles) == 0 {
		<-ctx.Done()
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return result.Wrap(result.OperationFailed, "the rule files cannot be watched for changes", err)
	}
	defer w.Close()
	files := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range e.opts.RuleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			return result.Wrap(result.InvalidRequest, "a rule file path cannot be made absolute", err)
		}
		files[abs] = true
		dirs[filepath.Dir(abs)] = true
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			return result.Wrap(result.OperationFailed, "the directory of a rule file cannot be watched", err)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if abs, err := filepath.Abs(ev.Name); err == nil && files[abs] {
				timer.Reset(reloadDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: one of them may have been ours.
				timer.Reset(reloadDebounce)
				continue
			}
			e.log.Warn("risk rule watch error", "reason", "the file watcher reported an error")
		case <-timer.C:
			_ = e.Reload()
		}
	}
}

package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		want error // nil: success
	}{
		{"a directory", dir, nil},
		{"a missing path", filepath.Join(dir, "missing"), fs.ErrNotExist},
		{"a regular file", file, syscall.ENOTDIR},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := SyncDir(c.path)
			if c.want == nil || !CanLock { // off the flock systems SyncDir does nothing
				if err != nil {
					t.Fatalf("SyncDir(%s) = %v, want nil", c.path, err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("SyncDir(%s) = %v, want %v", c.path, err, c.want)
			}
		})
	}
}

// openTwice opens one file twice: two open file descriptions, which flock
// treats as two holders even in one process.
func openTwice(t *testing.T) (a, b *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lock")
	var err error
	if a, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func TestTryLock(t *testing.T) {
	if !CanLock {
		t.Fatal("these tests need flock")
	}
	t.Run("held elsewhere is ErrLocked", func(t *testing.T) {
		a, b := openTwice(t)
		if err := Lock(a); err != nil {
			t.Fatal(err)
		}
		err := TryLock(b)
		var pe *os.PathError
		if !errors.Is(err, ErrLocked) || !errors.As(err, &pe) || pe.Op != "flock" || pe.Path != b.Name() {
			t.Fatalf("TryLock while held = %v, want ErrLocked in a flock PathError", err)
		}
	})
	t.Run("free after Unlock", func(t *testing.T) {
		a, b := openTwice(t)
		if err := TryLock(a); err != nil {
			t.Fatal(err)
		}
		if err := Unlock(a); err != nil {
			t.Fatal(err)
		}
		if err := TryLock(b); err != nil {
			t.Fatalf("TryLock after Unlock = %v", err)
		}
	})
	t.Run("free after Close", func(t *testing.T) {
		a, b := openTwice(t)
		if err := TryLock(a); err != nil {
			t.Fatal(err)
		}
		a.Close()
		if err := TryLock(b); err != nil {
			t.Fatalf("TryLock after the holder closed = %v", err)
		}
	})
	t.Run("a closed file is an error", func(t *testing.T) {
		a, _ := openTwice(t)
		a.Close()
		if err := TryLock(a); err == nil || errors.Is(err, ErrLocked) {
			t.Fatalf("TryLock on a closed file = %v", err)
		}
	})
}

func TestLockWaitsForTheHolder(t *testing.T) {
	if !CanLock {
		t.Fatal("this test needs flock")
	}
	a, b := openTwice(t)
	if err := Lock(a); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- Lock(b) }()
	select {
	case err := <-got:
		t.Fatalf("Lock returned (%v) while another file held the lock", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Lock after the holder unlocked = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lock still waiting after the holder unlocked")
	}
}

func TestOpenNoPoll(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	t.Run("creates and writes", func(t *testing.T) {
		f, err := OpenNoPoll(file, os.O_RDWR|os.O_CREATE|os.O_APPEND|NoFollow, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
		if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 5 {
			t.Fatalf("stat %v, %v; want mode 0600, 5 bytes", fi, err)
		}
	})
	t.Run("refuses a symbolic link with NoFollow", func(t *testing.T) {
		f, err := OpenNoPoll(link, os.O_RDWR|os.O_APPEND|NoFollow, 0)
		if err == nil {
			f.Close()
			t.Fatal("opened a symbolic link with NoFollow")
		}
		var pe *os.PathError
		if !errors.Is(err, syscall.ELOOP) || !errors.As(err, &pe) || pe.Op != "open" {
			t.Fatalf("err = %v, want ELOOP in an open PathError", err)
		}
	})
	t.Run("a missing file is ErrNotExist", func(t *testing.T) {
		_, err := OpenNoPoll(filepath.Join(dir, "missing"), os.O_RDONLY, 0)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestFsyncWaitsThroughThePollerAndReportsAsSyncDoes checks Fsync on
// Linux: AIO is set up (the asynchronous path is the one taken, not its
// fallback), every one of many concurrent fsyncs, more than the AIO
// context holds at once, returns, and a descriptor fsync(2) refuses (a
// pipe) gets the same error as from (*os.File).Sync.
func TestFsyncWaitsThroughThePollerAndReportsAsSyncDoes(t *testing.T) {
	if runtime.GOOS == "linux" && !AsyncFsync() {
		t.Fatal("Linux AIO could not be set up: Fsync falls back to fsync(2) on a thread")
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Create(filepath.Join(dir, fmt.Sprint(i)))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			if _, err := f.WriteString("record\n"); err != nil {
				errs <- err
				return
			}
			if err := Fsync(f); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	got, want := Fsync(w), w.Sync()
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Errorf("Fsync of a pipe: %v; (*os.File).Sync: %v", got, want)
	}
	// FsyncThen: every callback comes, with the result Fsync would give.
	f, err := os.Create(filepath.Join(dir, "then"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	results := make(chan error, 2)
	FsyncThen(f, func(err error) { results <- err })
	FsyncThen(w, func(err error) { results <- err })
	for range 2 {
		select {
		case err := <-results:
			if err != nil && err.Error() != want.Error() {
				t.Errorf("FsyncThen: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a FsyncThen callback never came")
		}
	}
}

package protect

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// RunQuarantineCommand is `terminald quarantine`: the person's own way
// to see and take back what commands planted at protected paths. It is a
// command line, never a tool: an agent cannot restore what it planted.
//
//	quarantine list DIR             each quarantined path, by RUN/N
//	quarantine restore DIR RUN/N    move it back to where the command put it
//
// DIR is the quarantine directory (the state directory's "quarantine").
// Restore never replaces anything: the path must not exist.
func RunQuarantineCommand(args []string, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, "usage: terminald quarantine list DIR\n       terminald quarantine restore DIR RUN/N")
		return 2
	}
	if len(args) < 2 {
		return usage()
	}
	dir := args[1]
	switch {
	case args[0] == "list" && len(args) == 2:
		runs, err := os.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(stderr, "quarantine: %v\n", err)
			return 1
		}
		for _, r := range runs {
			m, err := readManifest(filepath.Join(dir, r.Name()))
			if err != nil {
				continue
			}
			for _, e := range m {
				if _, err := os.Lstat(filepath.Join(dir, r.Name(), fmt.Sprint(e.N))); err != nil {
					continue // restored already
				}
				fmt.Fprintf(stdout, "%s/%d\t%s\t%s\t%s\t%s\n", r.Name(), e.N, e.Time.Format("2006-01-02T15:04:05Z"),
					e.Attempted, filepath.Join(e.Jail, filepath.FromSlash(e.Path)), e.ProtectedBy)
			}
		}
		return 0
	case args[0] == "restore" && len(args) == 3:
		if err := restoreItem(dir, args[2]); err != nil {
			fmt.Fprintf(stderr, "quarantine restore: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "restored %s\n", args[2])
		return 0
	}
	return usage()
}

func readManifest(run string) ([]manifestEntry, error) {
	b, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m []manifestEntry
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	sort.Slice(m, func(i, j int) bool { return m[i].N < m[j].N })
	return m, nil
}

// restoreItem moves RUN/N back to its path in its jail, refusing to
// replace anything or to follow a link on the way.
func restoreItem(dir, item string) error {
	run, n, ok := strings.Cut(item, "/")
	if !ok || run == "" || strings.ContainsAny(run, "/\x00") || filepath.Base(run) != run || run == ".." {
		return fmt.Errorf("%q is not RUN/N (see quarantine list)", item)
	}
	m, err := readManifest(filepath.Join(dir, run))
	if err != nil {
		return fmt.Errorf("no quarantine %s: %v", run, err)
	}
	for _, e := range m {
		if fmt.Sprint(e.N) != n {
			continue
		}
		jfd, err := unix.Open(e.Jail, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("the jail %s cannot be opened: %v", e.Jail, err)
		}
		defer unix.Close(jfd)
		parent, base := path.Split(e.Path)
		pfd := jfd
		if parent != "" {
			if pfd, err = openDirBeneath(jfd, strings.TrimSuffix(parent, "/")); err != nil {
				return fmt.Errorf("%s: its directory is not in the jail any more", e.Path)
			}
			defer unix.Close(pfd)
		}
		qfd, err := unix.Open(filepath.Join(dir, run), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(qfd)
		if err := unix.Renameat2(qfd, n, pfd, base, unix.RENAME_NOREPLACE); err != nil {
			return fmt.Errorf("%s could not be put back (it must not exist; it is not replaced): %v", e.Path, err)
		}
		return nil
	}
	return fmt.Errorf("no item %s in quarantine %s", n, run)
}

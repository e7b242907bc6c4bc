package risk

import (
	"context"
	"fmt"
	"testing"
)

// TestSummaryCapFromEngineOptions: the engine's SummaryMaxEntries ([radar]
// summary_max_entries) caps a walk whose limits set none, and raised past
// the tree it gives the whole counts.
func TestSummaryCapFromEngineOptions(t *testing.T) {
	root := t.TempDir()
	genTree(t, root, 300, 3)
	whole, err := newEngine(t, Options{}).Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if whole.Truncated || whole.Files != 302 {
		t.Fatalf("default cap: truncated %v, %d files, want 302 whole", whole.Truncated, whole.Files)
	}
	for _, tc := range []struct {
		name      string
		cap       int
		truncated bool
	}{
		{"below the tree", 40, true},
		{"exactly the tree", whole.Files + whole.Dirs, false},
		{"past the tree", 10 * (whole.Files + whole.Dirs), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newEngine(t, Options{SummaryMaxEntries: tc.cap}).Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Truncated != tc.truncated {
				t.Fatalf("cap %d: truncated %v, want %v", tc.cap, s.Truncated, tc.truncated)
			}
			if tc.truncated && s.Files+s.Dirs != tc.cap {
				t.Fatalf("cap %d: walked %d entries", tc.cap, s.Files+s.Dirs)
			}
			if !tc.truncated && (s.Files != whole.Files || s.Dirs != whole.Dirs || s.Counts[HighRisk] != whole.Counts[HighRisk]) {
				t.Fatalf("cap %d: %d files %d dirs, want %d and %d", tc.cap, s.Files, s.Dirs, whole.Files, whole.Dirs)
			}
		})
	}
	// SummaryLimits.MaxEntries still wins over the engine's cap.
	s, err := newEngine(t, Options{SummaryMaxEntries: 1000}).Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{MaxEntries: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || s.Files+s.Dirs != 10 {
		t.Fatalf("limits' MaxEntries 10 under engine cap 1000: truncated %v, %d entries", s.Truncated, s.Files+s.Dirs)
	}
}

// TestSummaryProgress: Progress is called every ProgressEvery entries with
// growing counts, and never past the walk.
func TestSummaryProgress(t *testing.T) {
	root := t.TempDir()
	genTree(t, root, 300, 3)
	var calls [][3]int
	s, err := newEngine(t, Options{}).Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{ProgressEvery: 25,
		Progress: func(entries, files, dirs int) { calls = append(calls, [3]int{entries, files, dirs}) }})
	if err != nil {
		t.Fatal(err)
	}
	total := s.Files + s.Dirs
	if want := total / 25; len(calls) != want {
		t.Fatalf("%d progress calls for %d entries every 25, want %d", len(calls), total, want)
	}
	for i, c := range calls {
		if c[0] != 25*(i+1) || c[1]+c[2] > c[0] || (i > 0 && c[1] < calls[i-1][1]) {
			t.Fatalf("call %d: entries %d files %d dirs %d (previous %v)", i, c[0], c[1], c[2], calls[max(i-1, 0)])
		}
	}
}

// TestSummaryHighRiskListIsBounded: high-risk files past MaxListed are
// counted in Omitted, the first ones found are listed, and the counts stay
// whole.
func TestSummaryHighRiskListIsBounded(t *testing.T) {
	root := t.TempDir()
	for i := range 40 {
		write(t, root, fmt.Sprintf("k%02d/id_rsa", i), "")
	}
	s, err := newEngine(t, Options{}).Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{MaxListed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts[HighRisk] != 40 || len(s.HighRisk) != 5 || s.Omitted[HighRisk] != 35 {
		t.Fatalf("HIGH_RISK %d, listed %d, omitted %d; want 40, 5, 35", s.Counts[HighRisk], len(s.HighRisk), s.Omitted[HighRisk])
	}
	for i, it := range s.HighRisk {
		if want := fmt.Sprintf("k%02d/id_rsa", i); it.Path != want {
			t.Fatalf("listed %d is %s, want %s (walk order)", i, it.Path, want)
		}
	}
}

// TestSummarizeStopsWhenCancelled: a context cancelled during the walk
// stops it within one directory listing (not at the end of the tree), and
// Summarize answers ErrSummaryCancelled with no partial summary; a context
// cancelled before the call walks nothing.
func TestSummarizeStopsWhenCancelled(t *testing.T) {
	root := t.TempDir()
	for d := range 40 {
		for f := range 30 {
			write(t, root, fmt.Sprintf("d%02d/f%02d.go", d, f), "package x\n")
		}
	}
	t.Run("during the walk", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		last := 0
		s, err := newEngine(t, Options{}).Summarize(ctx, openRoot(t, root), ".", SummaryLimits{ProgressEvery: 10,
			Progress: func(entries, _, _ int) {
				last = entries
				if entries >= 50 {
					cancel()
				}
			}})
		if err != ErrSummaryCancelled || s != nil {
			t.Fatalf("Summarize = %v, %v; want nil, ErrSummaryCancelled", s, err)
		}
		// Cancelled at 50 entries: at most the rest of one directory (31
		// entries) is walked after that, of the tree's 1,240.
		if last < 50 || last > 50+31 {
			t.Fatalf("last progress at %d entries; want the walk stopped by 81", last)
		}
	})
	t.Run("before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		calls := 0
		_, err := newEngine(t, Options{}).Summarize(ctx, openRoot(t, root), ".", SummaryLimits{ProgressEvery: 1,
			Progress: func(int, int, int) { calls++ }})
		if err != ErrSummaryCancelled || calls != 0 {
			t.Fatalf("err %v after %d entries; want ErrSummaryCancelled after 0", err, calls)
		}
	})
}

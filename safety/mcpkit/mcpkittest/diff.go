package mcpkittest

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines Diff shows around a change.
const diffContext = 2

// maxDiffCells bounds the work of Diff (lines of a times lines of b).
const maxDiffCells = 16 << 20

// Diff is a line diff of a against b: hunks headed "@@ line N @@" (N the
// line in a), unchanged lines indented by a space, lines only in a marked
// "-", lines only in b marked "+". Equal texts give "". Texts too large
// for a line-by-line comparison are shown from their first difference.
func Diff(a, b string) string {
	if a == b {
		return ""
	}
	x, y := lines(a), lines(b)
	if len(x)*len(y) > maxDiffCells {
		return firstDifference(x, y)
	}
	ops := editScript(x, y)
	var out strings.Builder
	for start := 0; start < len(ops); {
		// Find the next change and the run of changes near it.
		first := start
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		end := first
		for i := first; i < len(ops) && i <= end+2*diffContext; i++ {
			if ops[i].kind != ' ' {
				end = i
			}
		}
		from, to := max(first-diffContext, start), min(end+diffContext+1, len(ops))
		fmt.Fprintf(&out, "@@ line %d @@\n", ops[from].line)
		for _, o := range ops[from:to] {
			out.WriteString(string(o.kind) + shown(o.text) + "\n")
		}
		start = to
	}
	return out.String()
}

// lines splits s after each newline; a final line without one is kept.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// shown is a line without its newline, or marked as having none.
func shown(line string) string {
	if t, ok := strings.CutSuffix(line, "\n"); ok {
		return t
	}
	return line + " (no newline at end)"
}

// diffOp is one line of an edit script: kept (' '), removed ('-') or
// added ('+'); line is its 1-based number in a (for an added line, that
// of the next line of a).
type diffOp struct {
	kind byte
	text string
	line int
}

// editScript is a shortest edit script from x to y (longest common
// subsequence, by dynamic programming).
func editScript(x, y []string) []diffOp {
	n, m := len(x), len(y)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i], i + 1})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', x[i], i + 1})
			i++
		default:
			ops = append(ops, diffOp{'+', y[j], i + 1})
			j++
		}
	}
	return ops
}

// firstDifference shows the first line where x and y differ.
func firstDifference(x, y []string) string {
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	line := func(l []string) string {
		if i < len(l) {
			return shown(l[i])
		}
		return "(end of text)"
	}
	return fmt.Sprintf("@@ line %d (first difference; the texts are too long to compare line by line) @@\n-%s\n+%s\n", i+1, line(x), line(y))
}

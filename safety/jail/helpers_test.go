package jail

import (
	"strconv"
	"testing"
	"unicode"
)

// caseName names a subtest after a path or name: as it is when it is
// printable, quoted otherwise (and for the empty string), so that -run can
// select one case.
func caseName(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == ' ' {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

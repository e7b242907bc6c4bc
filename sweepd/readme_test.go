package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/bastion-mcp/bastion/sweepd/internal/sweep"
)

// TestReadmeCountsTheCatalogsKinds keeps the README's number of target kinds
// equal to the catalog's: the README is the first thing a newcomer reads.
func TestReadmeCountsTheCatalogsKinds(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ms := regexp.MustCompile(`(?:outputs of|the) (\d+) kinds`).FindAllSubmatch(b, -1)
	if len(ms) == 0 {
		t.Fatal("README.md no longer states the number of target kinds; update this test with it")
	}
	for _, m := range ms {
		if n, _ := strconv.Atoi(string(m[1])); n != len(sweep.Catalog) {
			t.Errorf("README.md says %q, the catalog has %d kinds", m[0], len(sweep.Catalog))
		}
	}
}

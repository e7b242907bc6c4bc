//go:build !race

package mcpkit

// raceMemFactor is 1 in a normal build: the memory caps hold as stated.
const raceMemFactor = 1

//go:build race

package mcpkit

// raceMemFactor widens the memory caps of tests whose server process is
// this test binary: built with -race, its shadow memory and the detector's
// bookkeeping multiply what the same serve path holds (the Go race detector
// documents 5–10×). The caps as stated hold for the normal build.
const raceMemFactor = 3

//go:build !linux

package protect

// treeCache is Scan's memory of a tree; Scan exists on Linux only.
type treeCache struct{}

//go:build !linux

package protect

// treeCache is Scan's memory of a tree; Scan exists on Linux only.
type treeCache struct{}

// session is Begin's state; Begin exists on Linux only.
type session struct{}

// Close releases what Scan remembers; Scan exists on Linux only.
func (s *Set) Close() {}

//go:build !unix

package journal

// lockFile is a no-op where flock is absent: one journal must have one
// organizerd (documented).
func lockFile(path string) (func(), error) { return func() {}, nil }

package risk

import (
	"net/url"
	"strings"
)

// PathOfURI returns the path a descriptor's file-context:// URI names (its
// segments unescaped, as URIFor escaped them) and whether the URI is one:
// the scheme, then a non-empty path with no empty, "." or ".." segment (a
// leading "/" of an absolute path aside), no query or fragment, and every
// segment validly escaped.
func PathOfURI(uri string) (string, bool) {
	p, ok := strings.CutPrefix(uri, URIScheme)
	if !ok || p == "" || strings.ContainsAny(p, "?#") {
		return "", false
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" || u == "." || u == ".." || strings.ContainsAny(u, "/\x00") {
			return "", false
		}
		segs[i] = u
	}
	out := strings.Join(segs, "/")
	if strings.HasPrefix(p, "/") {
		out = "/" + out
	}
	return out, true
}

package gitignore

// Results of wildmatch, with git's meaning: a match, no match, and two
// "give up" signals that let an outer '*' stop trying further positions.
const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

// at returns s[i], or 0 past the end (the C string terminator the
// algorithm was designed around).
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// isGlobSpecial reports the bytes git treats as the start of a wildcard
// when it measures a pattern's literal prefix.
func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

// wildmatch matches text against pattern with git's wildmatch rules. With
// pathname set, '*', '?' and classes never match '/', and "**" between
// slashes spans directories.
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, 0, text, 0, pathname) == wmMatch
}

func dowild(p string, pi int, t string, ti int, pathname bool) int {
	start := pi
	for ; pi < len(p) && p[pi] != 0; ti, pi = ti+1, pi+1 {
		pc := p[pi]
		tc := at(t, ti)
		if tc == 0 && pc != '*' {
			return wmAbortAll
		}
		switch pc {
		case '\\':
			pi++
			if tc != at(p, pi) {
				return wmNoMatch
			}
			if pi >= len(p) {
				// A trailing backslash matches nothing; stop here
				// rather than step past the end.
				return wmNoMatch
			}
			continue
		default:
			if tc != pc {
				return wmNoMatch
			}
			continue
		case '?':
			if pathname && tc == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			pi++
			if at(p, pi) == '*' {
				prev := pi - 2
				for pi++; at(p, pi) == '*'; pi++ {
				}
				switch {
				case !pathname:
					matchSlash = true
				case (prev < start || p[prev] == '/') &&
					(at(p, pi) == 0 || at(p, pi) == '/' || (at(p, pi) == '\\' && at(p, pi+1) == '/')):
					// "**/" may match no directory at all.
					if at(p, pi) == '/' && dowild(p, pi+1, t, ti, pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				default:
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if at(p, pi) == 0 {
				// A trailing "**" matches everything; a trailing '*'
				// only what has no further slash.
				if !matchSlash && indexByte(t, ti, '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			}
			if !matchSlash && at(p, pi) == '/' {
				// One '*' before a slash matches the rest of this
				// path component exactly.
				slash := indexByte(t, ti, '/')
				if slash < 0 {
					return wmNoMatch
				}
				ti = slash
				// The loop's increment consumes the slash in both.
				continue
			}
			for {
				if tc == 0 {
					break
				}
				if nc := at(p, pi); !isGlobSpecial(nc) {
					// Skip ahead to the next occurrence of the literal
					// that follows the star.
					for {
						tc = at(t, ti)
						if tc == 0 || (!matchSlash && tc == '/') || tc == nc {
							break
						}
						ti++
					}
					if tc != nc {
						return wmNoMatch
					}
				}
				if m := dowild(p, pi, t, ti, pathname); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tc == '/' {
					return wmAbortToStarStar
				}
				ti++
				tc = at(t, ti)
			}
			return wmAbortAll
		case '[':
			pi++
			pch := at(p, pi)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				pi++
				pch = at(p, pi)
			}
			var prev byte
			matched := false
			for {
				if pch == 0 {
					return wmAbortAll
				}
				switch {
				case pch == '\\':
					pi++
					pch = at(p, pi)
					if pch == 0 {
						return wmAbortAll
					}
					if tc == pch {
						matched = true
					}
				case pch == '-' && prev != 0 && at(p, pi+1) != 0 && at(p, pi+1) != ']':
					pi++
					pch = at(p, pi)
					if pch == '\\' {
						pi++
						pch = at(p, pi)
						if pch == 0 {
							return wmAbortAll
						}
					}
					if tc <= pch && tc >= prev {
						matched = true
					}
					pch = 0 // a range cannot start another range
				case pch == '[' && at(p, pi+1) == ':':
					pi += 2
					s := pi
					for pch = at(p, pi); pch != 0 && pch != ']'; pch = at(p, pi) {
						pi++
					}
					if pch == 0 {
						return wmAbortAll
					}
					n := pi - s - 1
					if n < 0 || p[pi-1] != ':' {
						// Not "[:name:]": the '[' is an ordinary member.
						pi = s - 2
						pch = '['
						if tc == pch {
							matched = true
						}
						break
					}
					ok, known := inClass(p[s:s+n], tc)
					if !known {
						return wmAbortAll
					}
					if ok {
						matched = true
					}
					pch = 0
				default:
					if tc == pch {
						matched = true
					}
				}
				prev = pch
				pi++
				pch = at(p, pi)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (pathname && tc == '/') {
				return wmNoMatch
			}
			continue
		}
	}
	if ti < len(t) {
		return wmNoMatch
	}
	return wmMatch
}

func indexByte(s string, from int, c byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// inClass reports whether c belongs to the class name as git's ctype sees
// it (ASCII only), and
// whether name is a class wildmatch knows.
func inClass(name string, c byte) (in, known bool) {
	isUpper := c >= 'A' && c <= 'Z'
	isLower := c >= 'a' && c <= 'z'
	isDigit := c >= '0' && c <= '9'
	isAlpha := isUpper || isLower
	isSpace := c == ' ' || c == '\t' || c == '\n' || c == '\r' // git's own ctype: no \v or \f
	isPrint := c >= 0x20 && c < 0x7f
	switch name {
	case "alnum":
		return isAlpha || isDigit, true
	case "alpha":
		return isAlpha, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return isPrint && c != ' ', true
	case "lower":
		return isLower, true
	case "print":
		return isPrint, true
	case "punct":
		return isPrint && c != ' ' && !isAlpha && !isDigit, true
	case "space":
		return isSpace, true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}

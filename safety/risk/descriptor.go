package risk

import (
	"net/url"
	"path"
	"strings"
	"time"
)

// Importance is the one-word verdict on a file.
type Importance string

// The importances, from a winning rule's category (or NORMAL when no rule
// matched and the content scan found nothing alarming).
const (
	HighRisk  Importance = "HIGH_RISK"
	HighValue Importance = "HIGH_VALUE"
	Normal    Importance = "NORMAL"
	Ignorable Importance = "IGNORABLE"
)

// CategoryNone is Metadata.Category when no rule matched.
const CategoryNone = "NONE"

// URIScheme prefixes every descriptor's URI: file-context://<path>.
const URIScheme = "file-context://"

// Descriptor is the radar's answer about one path.
type Descriptor struct {
	URI      string   `json:"uri"`
	MimeType string   `json:"mimeType"`
	Metadata Metadata `json:"metadata"`
}

// Metadata is what the radar knows about the path. It never holds file
// content.
type Metadata struct {
	Importance      Importance    `json:"importance"`
	Category        string        `json:"category"`
	Reasons         []string      `json:"reasons"`
	MatchedRules    []MatchedRule `json:"matched_rules"`
	SuggestedAction Action        `json:"suggestedAction"`
	Size            int64         `json:"size"`
	LastModified    string        `json:"lastModified,omitempty"`
	// Git is what the repository's git files say (see GitFacts); absent
	// outside a repository's top or when its index was refused.
	Git *GitFacts `json:"git,omitempty"`
}

// MatchedRule is one rule that matched, winner first.
type MatchedRule struct {
	Pattern  string   `json:"pattern"`
	Category Category `json:"category"`
	Source   string   `json:"source"`
	Reason   string   `json:"reason"`
}

// URIFor returns the file-context URI of a slash-separated relative path,
// each segment percent-escaped.
func URIFor(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return URIScheme + strings.Join(segs, "/")
}

// mimeTypes is a fixed table, so answers do not depend on the host's
// mime.types.
var mimeTypes = map[string]string{
	".go": "text/x-go", ".py": "text/x-python", ".js": "text/javascript", ".mjs": "text/javascript",
	".cjs": "text/javascript", ".ts": "text/x-typescript", ".tsx": "text/x-typescript", ".jsx": "text/javascript",
	".json": "application/json", ".yaml": "application/yaml", ".yml": "application/yaml",
	".toml": "application/toml", ".md": "text/markdown", ".txt": "text/plain", ".html": "text/html",
	".css": "text/css", ".xml": "application/xml", ".sh": "text/x-shellscript", ".rs": "text/x-rust",
	".java": "text/x-java", ".kt": "text/x-kotlin", ".c": "text/x-c", ".h": "text/x-c", ".cpp": "text/x-c++",
	".cs": "text/x-csharp", ".rb": "text/x-ruby", ".php": "application/x-php", ".sql": "application/sql",
	".csv": "text/csv", ".ini": "text/plain", ".cfg": "text/plain", ".conf": "text/plain", ".env": "text/plain",
	".pem": "application/x-pem-file", ".key": "application/x-pem-file", ".crt": "application/x-x509-ca-cert",
	".p12": "application/x-pkcs12", ".pfx": "application/x-pkcs12", ".png": "image/png", ".jpg": "image/jpeg",
	".jpeg": "image/jpeg", ".gif": "image/gif", ".svg": "image/svg+xml", ".pdf": "application/pdf",
	".zip": "application/zip", ".gz": "application/gzip", ".tf": "text/plain", ".tfvars": "text/plain",
	".tfstate": "application/json", ".lock": "text/plain", ".log": "text/plain", ".ipynb": "application/x-ipynb+json",
}

// mimeFor guesses a MIME type from the name, then from what the content
// scan saw (text or binary), else application/octet-stream.
func mimeFor(rel string, isDir bool, scanned, binary bool) string {
	if isDir {
		return "inode/directory"
	}
	base := path.Base(rel)
	if t, ok := mimeTypes[strings.ToLower(path.Ext(base))]; ok {
		return t
	}
	if strings.HasPrefix(base, ".env") {
		return "text/plain"
	}
	if scanned && !binary {
		return "text/plain"
	}
	return "application/octet-stream"
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// clone returns a deep copy, so cached descriptors are never shared.
func (d Descriptor) clone() Descriptor {
	// Never nil: an empty list is [] in JSON on every read, cached or not.
	d.Metadata.Reasons = append(make([]string, 0, len(d.Metadata.Reasons)), d.Metadata.Reasons...)
	d.Metadata.MatchedRules = append(make([]MatchedRule, 0, len(d.Metadata.MatchedRules)), d.Metadata.MatchedRules...)
	if d.Metadata.Git != nil {
		g := *d.Metadata.Git
		d.Metadata.Git = &g
	}
	return d
}

package mcpkit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// FileContextTemplate is the URI template every Bastion server registers.
// "{+path}" (reserved expansion) lets the path carry slashes.
const FileContextTemplate = risk.URIScheme + "{+path}"

// DirPageSize is how many entries one read of a directory returns.
const DirPageSize = 200

// fileContextAction names the resource in refusals.
const fileContextAction = "file-context"

// DirContext is what reading a directory's file-context URI returns: the
// directory's own descriptor, one page of its entries' descriptors (sorted
// by name), and Next, the URI of the following page ("" on the last one).
type DirContext struct {
	risk.Descriptor
	Entries []risk.Descriptor `json:"entries"`
	// Total is the number of entries in the directory when this page was
	// read; Offset is the index of the first entry of this page.
	Total  int `json:"total"`
	Offset int `json:"offset"`
	// Next is the URI to read for the next page: the same path with
	// "?cursor=<offset>". The listing is read again for every page, so
	// entries created or removed between pages can shift it.
	Next string `json:"next,omitempty"`
}

// RegisterFileContext registers the resource template file-context://{+path}
// on s, answered by the risk radar eng for paths inside roots.
//
// The path is relative to roots[0], or absolute inside any root (the
// deepest root containing it answers); it may be percent-escaped segment by
// segment, as the descriptors' own URIs are. It is resolved with
// jail.Root.Clean and read through jail: a path that leaves its root, goes
// through or ends in a symbolic link, or crosses into another mount is
// refused. A file gives its descriptor (risk.Descriptor JSON). A directory
// gives a DirContext: its entries' descriptors, DirPageSize at a time, with
// Next naming the URI of the following page ("file-context://dir?cursor=200").
// "file-context://" alone is the first root.
//
// Every answer, refusals included, is one text content of MIME type
// application/json at the requested URI. A refusal is an OperationResult
// (ok false, a code such as PATH_ESCAPE or NOT_FOUND, a reason written for
// the model), never a JSON-RPC error, so the model can read why and act.
// No answer ever holds file content: content findings name the kind of
// secret and its line, never its value.
//
// terminald, organizerd and sweepd call it once on their *server.MCPServer
// after building it (mcpkit.NewServer already declares the resources
// capability). log receives one debug line per read (no paths' contents);
// nil means slog.Default().
func RegisterFileContext(s *server.MCPServer, roots []*jail.Root, eng *risk.Engine, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	fc := &fileContext{roots: roots, eng: eng, log: log}
	s.AddResourceTemplate(mcp.NewResourceTemplate(FileContextTemplate, "file-context",
		mcp.WithTemplateDescription("What the risk radar knows about a file or directory inside the server's roots: "+
			"importance (HIGH_RISK, HIGH_VALUE, NORMAL, IGNORABLE), the reasons and matched rules, and a suggested action "+
			"(READ_ONLY, CAREFUL_EDIT, SAFE_TO_IGNORE, CONSULT_HISTORY). The path is relative to the first root or absolute "+
			"inside a root. A directory lists its entries' descriptors 200 at a time; read the URI in \"next\" for more. "+
			"Never contains file content or secret values."),
		mcp.WithTemplateMIMEType("application/json"),
	), fc.read)
}

type fileContext struct {
	roots []*jail.Root
	eng   *risk.Engine
	log   *slog.Logger
}

func (fc *fileContext) read(_ context.Context, req mcp.ReadResourceRequest) (contents []mcp.ResourceContents, err error) {
	start := time.Now()
	uri := req.Params.URI
	defer func() {
		if p := recover(); p != nil {
			fc.log.Error("file-context panicked", "panic", p)
			contents = []mcp.ResourceContents{refusalContent(uri, result.With(fileContextAction, result.InternalError,
				"the server hit an internal error; nothing was read and the server keeps serving", nil, start))}
			err = nil
		}
	}()
	body, ferr := fc.answer(uri)
	if ferr != nil {
		fc.log.Debug("file-context refused", "code", string(result.CodeOf(ferr)))
		return []mcp.ResourceContents{refusalContent(uri, result.Fail(fileContextAction, ferr, nil, start))}, nil
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(body)}}, nil
}

func refusalContent(uri string, r result.OperationResult) mcp.ResourceContents {
	r.OK = false
	if r.Detail == nil {
		r.Detail = map[string]any{}
	}
	return mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(r.JSON())}
}

// answer resolves the URI and renders the descriptor or directory page.
func (fc *fileContext) answer(uri string) ([]byte, error) {
	p, cursor, err := parseFileContextURI(uri)
	if err != nil {
		return nil, err
	}
	root, rel, err := resolve(fc.roots, p)
	if err != nil {
		return nil, err
	}
	info, err := root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if info.IsSymlink() {
		return nil, result.New(result.PathEscape, "the path is a symbolic link, which is never followed; ask about the path it points to if that lies inside a root")
	}
	d, err := fc.eng.Classify(root, rel)
	if err != nil {
		return nil, err
	}
	d.URI = uriOf(fc.roots, root, rel)
	if !info.IsDir() {
		if cursor != "" {
			return nil, result.New(result.InvalidRequest, "a cursor applies only to a directory")
		}
		return json.Marshal(d)
	}
	page, err := fc.dirPage(root, rel, cursor)
	if err != nil {
		return nil, err
	}
	page.Descriptor = d
	return json.Marshal(page)
}

// dirPage lists rel and classifies one page of its entries.
func (fc *fileContext) dirPage(root *jail.Root, rel, cursor string) (*DirContext, error) {
	off := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || strconv.Itoa(n) != cursor {
			return nil, result.New(result.InvalidRequest, "the cursor must be the number given in a previous page's \"next\" URI")
		}
		off = n
	}
	dir, err := root.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	ents, err := dir.ReadDir()
	dir.Close()
	if err != nil {
		return nil, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	if off > len(ents) {
		return nil, result.New(result.InvalidRequest, "the cursor is past the end of the directory; read the directory again from the start")
	}
	end := min(off+DirPageSize, len(ents))
	page := &DirContext{Entries: make([]risk.Descriptor, 0, end-off), Total: len(ents), Offset: off}
	for _, en := range ents[off:end] {
		child := jail.Join(rel, en.Name)
		d, cerr := fc.eng.Classify(root, child)
		if cerr != nil {
			// A name jail refuses, or an entry gone since the listing:
			// answer by rules alone, so the entry is still seen.
			var err error
			d, err = fc.eng.ClassifyPath(root.Path(), child, en.Type.IsDir())
			if err != nil {
				continue
			}
			d.Metadata.Reasons = append(d.Metadata.Reasons, "content not examined: "+result.Reason(cerr))
		}
		d.URI = uriOf(fc.roots, root, child)
		page.Entries = append(page.Entries, d)
	}
	if end < len(ents) {
		page.Next = uriOf(fc.roots, root, rel) + "?cursor=" + strconv.Itoa(end)
	}
	return page, nil
}

// parseFileContextURI splits a file-context URI into its unescaped path and
// its cursor. A literal '?' in a name is escaped in every URI the radar
// gives out, so the first raw '?' starts the query.
func parseFileContextURI(uri string) (p, cursor string, err error) {
	rest, ok := strings.CutPrefix(uri, risk.URIScheme)
	if !ok {
		return "", "", result.New(result.InvalidRequest, "the URI must start with "+risk.URIScheme)
	}
	rawPath, rawQuery, hasQuery := strings.Cut(rest, "?")
	if i := strings.IndexByte(rawPath, '#'); i >= 0 {
		rawPath = rawPath[:i]
	}
	p, err = url.PathUnescape(rawPath)
	if err != nil {
		return "", "", result.New(result.InvalidRequest, "the path holds a malformed percent-escape")
	}
	if hasQuery {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return "", "", result.New(result.InvalidRequest, "the query is malformed; only cursor=<n> is understood")
		}
		for k := range q {
			if k != "cursor" {
				return "", "", result.New(result.InvalidRequest, "unknown query parameter; only cursor=<n> is understood")
			}
		}
		cursor = q.Get("cursor")
	}
	return p, cursor, nil
}

// resolve picks the root for p and returns p relative to it. A relative
// path (or "") belongs to roots[0]; an absolute one to the deepest root
// containing it.
func resolve(roots []*jail.Root, p string) (*jail.Root, string, error) {
	if len(roots) == 0 {
		return nil, "", result.New(result.PolicyDenied, "this server has no roots configured")
	}
	if p == "" || p == "." {
		return roots[0], ".", nil
	}
	if !filepath.IsAbs(filepath.FromSlash(p)) {
		rel, err := roots[0].Clean(p)
		if err != nil {
			return nil, "", err
		}
		return roots[0], rel, nil
	}
	var (
		best    *jail.Root
		bestRel string
		lastErr error = result.New(result.PathEscape, "the path is outside every root of this server; roots: "+rootNames(roots))
	)
	for _, r := range roots {
		rel, err := r.Clean(p)
		if err != nil {
			if !isEscape(err) {
				lastErr = err
			}
			continue
		}
		if best == nil || len(r.Path()) > len(best.Path()) {
			best, bestRel = r, rel
		}
	}
	if best == nil {
		return nil, "", lastErr
	}
	return best, bestRel, nil
}

func isEscape(err error) bool { return result.CodeOf(err) == result.PathEscape }

func rootNames(roots []*jail.Root) string {
	names := make([]string, len(roots))
	for i, r := range roots {
		names[i] = r.Path()
	}
	return strings.Join(names, ", ")
}

// uriOf is the file-context URI that names rel under root: relative for
// roots[0], absolute for the others.
func uriOf(roots []*jail.Root, root *jail.Root, rel string) string {
	if len(roots) > 0 && root == roots[0] {
		if rel == "." {
			return risk.URIFor("")
		}
		return risk.URIFor(rel)
	}
	abs := filepath.ToSlash(root.Path())
	if rel != "." {
		abs = strings.TrimSuffix(abs, "/") + "/" + rel
	}
	return risk.URIFor(abs)
}

// SummaryMaxListed is how many items get_context_summary lists per list
// (high risk, high value, ignorable) and per root: with paths of at most
// PATH_MAX bytes an answer stays within a few hundred KiB per root, and
// typically a few KiB.
const SummaryMaxListed = 50

// summaryArgs are get_context_summary's arguments. path is optional: an
// empty path means every root, as no path does.
type summaryArgs struct {
	Path string `json:"path,omitempty"`
}

// ContextSummaryTool builds the read-only tool get_context_summary(path?):
// a one-shot overview of a tree by the risk radar's rules — counts by
// importance, the high-risk files with their reasons, the high-value areas,
// and ignorable bulk summarised per area ("node_modules/: 48,112 files,
// ignorable"). path is absolute inside a root, or relative to the root
// when there is exactly one (with several roots a relative path is
// INVALID_REQUEST, as in sweepd's scan); escapes are PATH_ESCAPE, and
// symbolic links and other mounts are refused; without it every root is
// summarised. The answer is bounded: each of its three lists holds at
// most SummaryMaxListed items per root (the rest are counted in
// "omitted"), so its size does not grow with the tree. A cancelled call
// (notifications/cancelled, or the client gone) stops the walk within
// one directory listing and answers OPERATION_FAILED. The
// detail is {"summaries": [risk.Summary + "root"]} and the reason is the
// same overview as text. The summary is by rules (names); the only content
// it reads is that of files HIGH_RISK by name which placeholders could
// lower, as their descriptors are (risk.MaxSummaryContentChecks at most),
// and a file's content findings come from its file-context resource. The
// walk stops at the engine's entry cap (risk.Options.SummaryMaxEntries,
// the operator's [radar]
// summary_max_entries) with code OUTPUT_TRUNCATED and says its counts are
// partial; while it walks, a client that sent a progressToken receives
// notifications/progress every risk.DefaultProgressEvery entries and a
// last one when done. organizerd adds the returned tool to its server.
func ContextSummaryTool(roots []*jail.Root, eng *risk.Engine, log *slog.Logger) server.ServerTool {
	tool := NewTool("get_context_summary",
		"Overview of a directory tree by the risk radar, before you act on it: how many files are HIGH_RISK, HIGH_VALUE, NORMAL and IGNORABLE; "+
			"the high-risk files (secrets, credentials, production config, migrations) with the reason for each and the suggested action; "+
			"the high-value areas (core source, manifests); and the ignorable bulk summarised per area (dependencies, build output, caches, logs). "+
			"path is a directory inside the server's roots: absolute, or relative when there is one root; omit it to summarise every root. "+
			"Each list holds at most 50 items per root; the rest are counted. "+
			"Classification is by rules on names; read the file-context://<path> resource of a file for its content findings. Changes nothing.",
		Annotations{Title: "Summarise a tree's risk and value", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"path":{"type":"string","description":"Directory to summarise: absolute inside a root, or relative when there is exactly one root. Omit for every root."}`+
			`},"additionalProperties":false}`))
	cs := &contextSummary{roots: roots, eng: eng}
	return server.ServerTool{Tool: tool, Handler: Handle("get_context_summary", log, cs.summarize)}
}

// contextSummary answers get_context_summary.
type contextSummary struct {
	roots []*jail.Root
	eng   *risk.Engine
}

// summaryTarget is one tree to summarise.
type summaryTarget struct {
	root *jail.Root
	rel  string
}

// rootedSummary is one summary in the tool's detail.
type rootedSummary struct {
	Root string `json:"root"`
	*risk.Summary
}

// summarize walks each target under the engine's entry cap ([radar]
// summary_max_entries), sending notifications/progress while it walks
// when the client gave a progressToken.
func (cs *contextSummary) summarize(ctx context.Context, req mcp.CallToolRequest, a summaryArgs) result.OperationResult {
	start := time.Now()
	targets, err := cs.targets(a.Path)
	if err != nil {
		return result.Fail("get_context_summary", err, nil, start)
	}
	progress := Progress(ctx, req)
	var (
		out  []rootedSummary
		text []string
		done int // entries walked in the targets before this one
	)
	for _, t := range targets {
		if t.rel != "." {
			if info, err := t.root.Lstat(t.rel); err == nil && info.IsSymlink() {
				return result.With("get_context_summary", result.PathEscape,
					"the path is a symbolic link, which is never followed", nil, start)
			}
		}
		base := done
		s, err := cs.eng.Summarize(ctx, t.root, t.rel, risk.SummaryLimits{MaxListed: SummaryMaxListed, Progress: func(entries, files, dirs int) {
			done = base + entries
			progress(float64(done), 0, fmt.Sprintf("%d entries walked in %s: %d files, %d directories", entries, t.root.Path(), files, dirs))
		}})
		if err != nil {
			return result.Fail("get_context_summary", err, nil, start)
		}
		done = base + s.Files + s.Dirs
		if t.rel == "." {
			s.Path = t.root.Path()
		}
		out = append(out, rootedSummary{Root: t.root.Path(), Summary: s})
		linkSummary(ctx, t.root == cs.roots[0], t.root.Path(), s)
		text = append(text, s.Text())
	}
	progress(float64(done), float64(done), "done")
	code := result.OK
	for _, s := range out {
		if s.Truncated {
			code = result.OutputTruncated
		}
	}
	return result.With("get_context_summary", code, strings.TrimRight(strings.Join(text, "\n"), "\n"),
		map[string]any{"summaries": out}, start)
}

// targets is every root without a path, or the one tree path names.
func (cs *contextSummary) targets(path string) ([]summaryTarget, error) {
	if path == "" {
		if len(cs.roots) == 0 {
			return nil, result.New(result.PolicyDenied, "this server has no roots configured")
		}
		var ts []summaryTarget
		for _, r := range cs.roots {
			ts = append(ts, summaryTarget{r, "."})
		}
		return ts, nil
	}
	if len(cs.roots) > 1 && !filepath.IsAbs(filepath.FromSlash(path)) {
		// Like sweepd's scan: a relative path would silently pick one root.
		return nil, result.New(result.InvalidRequest,
			"with several roots, give an absolute path inside one of them: "+rootNames(cs.roots))
	}
	r, rel, err := resolve(cs.roots, path)
	if err != nil {
		return nil, err
	}
	return []summaryTarget{{r, rel}}, nil
}

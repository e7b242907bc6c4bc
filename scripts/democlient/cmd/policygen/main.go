// Command policygen generates policies/policy.schema.json (a JSON Schema
// for policy.toml, so editors with a TOML language server complete and
// validate it) and docs/policy.md (the key reference) from one source:
// safety/config's Policy type, walked by reflection for keys and types,
// and the doc comments of its fields, read from the package source with
// go/ast. With -policies it also generates the shipped [terminal] command
// policies from safety/command (Standard and Dev): all of
// policies/terminal-section.toml, and the marked section of policy.toml,
// policy.example.toml and dev.example.toml. `make test` regenerates
// everything into a temporary directory and fails when a committed file
// differs.
//
// Usage:
//
//	policygen -src safety/config -schema policies/policy.schema.json -doc docs/policy.md -policies policies
package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"

	"github.com/bastion-mcp/bastion/safety/config"
)

// enums lists the closed value sets the Go types cannot express (for an
// array, the set its items come from).
var enums = map[string][]string{
	"audit_fail_mode":            {"closed", "open"},
	"terminal.profile":           config.Profiles,
	"terminal.sandbox.isolation": config.Isolations,
	"terminal.sandbox.landlock":  config.LandlockModes,
	"terminal.sandbox.network":   config.Networks,
	"terminal.sandbox.caches":    config.CacheNames,
	"organizer.skip.layer":       {"protection", "restraint"},
	"approval.reclaim":           config.ApprovalWho,
	"approval.apply_plan":        config.ApprovalWho,
	"approval.move_file":         config.ApprovalWho,
	"approval.fallback":          config.ApprovalFallbacks,
	"telemetry.protocol":         config.TelemetryProtocols,
}

// bounds lists the ranges of integer keys (0, the default, is always
// accepted too).
var bounds = map[string][2]int{
	"terminal.limits.timeout_seconds":  {config.TimeoutSecondsMin, config.TimeoutSecondsMax},
	"terminal.limits.max_output_bytes": {config.MaxOutputBytesMin, config.MaxOutputBytesMax},
	"terminal.limits.memory_mb":        {config.MemoryMBMin, config.MemoryMBMax},
	"terminal.limits.max_processes":    {config.MaxProcessesMin, config.MaxProcessesMax},
	"terminal.limits.cpu_seconds":      {config.CPUSecondsMin, config.CPUSecondsMax},
	"terminal.limits.max_file_mb":      {config.MaxFileMBMin, config.MaxFileMBMax},
	"terminal.limits.max_open_files":   {config.MaxOpenFilesMin, config.MaxOpenFilesMax},
	"terminal.limits.max_concurrent":   {config.MaxConcurrentMin, config.MaxConcurrentMax},
	"terminal.limits.max_queued":       {config.MaxQueuedMin, config.MaxQueuedMax},
	"terminal.limits.disk_mb":          {config.DiskMBMin, config.DiskMBMax},
	"approval.timeout_seconds":         {1, config.ApprovalTimeoutMax},
	"audit.max_mb":                     {config.AuditMaxMBMin, config.AuditMaxMBMax},
	"audit.keep":                       {config.AuditKeepMin, config.AuditKeepMax},
}

// envs names the environment variable that overrides a key.
var envs = map[string]string{
	"audit_log":                config.EnvAuditLog,
	"audit_fail_mode":          config.EnvAuditFailMode,
	"sweep.roots":              config.EnvSweepRoots + " (OS path-list separated)",
	"terminal.jail_root":       config.EnvJailRoot,
	"organizer.workspace_root": config.EnvWorkspaceRoot,
	"organizer.journal":        config.EnvJournal,
}

// docs maps "Type.Field" and "Type" to their doc comments.
type docs map[string]string

func readDocs(dir string) (docs, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	d := docs{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					if doc != nil {
						d[ts.Name.Name] = clean(doc.Text())
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fld := range st.Fields.List {
						text := ""
						if fld.Doc != nil {
							text = fld.Doc.Text()
						} else if fld.Comment != nil {
							text = fld.Comment.Text()
						}
						for _, n := range fld.Names {
							d[ts.Name.Name+"."+n.Name] = clean(text)
						}
					}
				}
			}
		}
	}
	return d, nil
}

func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

// key is one documented policy key.
type key struct {
	path, typ, doc, env string
	enum                []string
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// walk builds the schema of t and appends the keys it documents.
func walk(t reflect.Type, prefix string, d docs, keys *[]key) map[string]any {
	switch t.Kind() {
	case reflect.Struct:
		props := map[string]any{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := tomlName(f)
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			path := strings.TrimPrefix(prefix+"."+name, ".")
			doc := d[t.Name()+"."+f.Name]
			ft := f.Type
			k := key{path: path, doc: doc, env: envs[path], enum: enums[path]}
			isTable := ft.Kind() == reflect.Struct
			if !isTable {
				k.typ = typeName(ft)
				*keys = append(*keys, k)
			} else {
				k.typ = "table"
				if k.doc == "" {
					k.doc = d[ft.Name()]
				}
				*keys = append(*keys, k)
			}
			s := walk(ft, path, d, keys)
			if k.doc != "" {
				s["description"] = k.doc
			}
			if len(k.enum) > 0 {
				if items, ok := s["items"].(map[string]any); ok {
					items["enum"] = k.enum
				} else {
					s["enum"] = k.enum
				}
			}
			if b, ok := bounds[path]; ok {
				// 0 means the default, so the schema admits it besides the range.
				s["anyOf"] = []any{map[string]any{"const": 0}, map[string]any{"minimum": b[0], "maximum": b[1]}}
			}
			props[name] = s
		}
		obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if shortForm(t) {
			return map[string]any{"anyOf": []any{map[string]any{"type": "string"}, obj}}
		}
		return obj
	case reflect.Slice:
		return map[string]any{"type": "array", "items": walk(t.Elem(), prefix, d, keys)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": walk(t.Elem(), prefix+".*", d, keys)}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	}
	panic("policygen: unsupported type " + t.String())
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// shortForm reports a table type that also takes a bare string, because
// it implements encoding.TextUnmarshaler (a [redaction] patterns entry).
func shortForm(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(textUnmarshaler)
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		if shortForm(t.Elem()) {
			return "array of strings or tables"
		}
		if t.Elem().Kind() == reflect.Struct {
			return "array of tables"
		}
		return "array of " + typeName(t.Elem()) + "s"
	case reflect.Map:
		return "table of " + typeName(t.Elem())
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Bool:
		return "boolean"
	}
	return t.Kind().String()
}

func main() {
	src := flag.String("src", "safety/config", "`DIR` of package config's source")
	schemaOut := flag.String("schema", "", "write the JSON Schema to `FILE`")
	docOut := flag.String("doc", "", "write the Markdown reference to `FILE`")
	polSrc := flag.String("policies", "", "read the shipped policies from `DIR` and regenerate their command sections")
	polOut := flag.String("policies-out", "", "write terminal-section.toml and the regenerated policies to `DIR` (default: -policies)")
	flag.Parse()
	if *polSrc != "" {
		if *polOut == "" {
			*polOut = *polSrc
		}
		if err := writePolicies(*polSrc, *polOut); err != nil {
			fmt.Fprintln(os.Stderr, "policygen:", err)
			os.Exit(1)
		}
	}
	d, err := readDocs(*src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "policygen:", err)
		os.Exit(1)
	}
	var keys []key
	schema := walk(reflect.TypeOf(config.Policy{}), "", d, &keys)
	schema["$schema"] = "http://json-schema.org/draft-07/schema#"
	schema["$id"] = "https://github.com/bastion-mcp/bastion/policies/policy.schema.json"
	schema["title"] = "Bastion policy.toml"
	schema["description"] = "One policy file for every Bastion server. Generated from safety/config by scripts/democlient/cmd/policygen; do not edit."
	if *schemaOut != "" {
		b, _ := json.MarshalIndent(schema, "", "  ")
		if err := os.WriteFile(*schemaOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "policygen:", err)
			os.Exit(1)
		}
	}
	if *docOut != "" {
		if err := os.WriteFile(*docOut, markdown(keys, d), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "policygen:", err)
			os.Exit(1)
		}
	}
}

func markdown(keys []key, d docs) []byte {
	var b bytes.Buffer
	b.WriteString("<!-- Generated by scripts/democlient/cmd/policygen from safety/config. Do not edit; run `make policy-docs`. -->\n")
	b.WriteString("# policy.toml reference\n\n")
	b.WriteString(d["Policy"] + "\n\n")
	b.WriteString("One TOML file serves every server; each reads its own section plus the shared keys. " +
		"Every error names the file, the line and the key, says what the key takes (a whole number, a list of strings, one of the listed values), " +
		"and for an unknown key the key probably meant; the server then exits 2. " +
		"Paths starting with `~/` resolve against your home directory; other relative paths resolve against the policy file's own directory, " +
		"so they change when the file is copied elsewhere (`check` warns about each one that leads out of that directory). " +
		"The file is named by `--config FILE` or `$" + config.EnvPolicyFile + "` (`--config` wins); there is no default file.\n\n" +
		"Check a policy before using it: `<server> check --config policy.toml` prints the settings the server would run with, its warnings and its errors.\n\n" +
		"Editor completion and validation: [`policies/policy.schema.json`](../policies/policy.schema.json) is a JSON Schema for this file. " +
		"With Taplo / Even Better TOML, put `#:schema ./policy.schema.json` (a path relative to the TOML file, or the schema's URL) on the first line of your policy.\n\n")
	sections := map[string][]key{}
	var order []string
	for _, k := range keys {
		sec := ""
		if i := strings.IndexByte(k.path, '.'); i >= 0 {
			sec = k.path[:i]
		} else if k.typ == "table" {
			sec = k.path
		}
		if _, ok := sections[sec]; !ok {
			order = append(order, sec)
		}
		sections[sec] = append(sections[sec], k)
	}
	for _, sec := range order {
		if sec == "" {
			b.WriteString("## Shared keys\n\n")
		} else {
			fmt.Fprintf(&b, "## [%s]\n\n", sec)
		}
		ks := sections[sec]
		if len(ks) > 0 && ks[0].path == sec && ks[0].doc != "" {
			b.WriteString(ks[0].doc + "\n\n")
		}
		b.WriteString("| key | type | meaning | env override |\n|---|---|---|---|\n")
		for _, k := range ks {
			if k.path == sec && k.typ == "table" {
				continue
			}
			doc := k.doc
			if doc == "" {
				doc = "(undocumented in safety/config)"
			}
			if len(k.enum) > 0 {
				lead := " One of: `"
				if strings.HasPrefix(k.typ, "array") {
					lead = " Each one of: `"
				}
				doc += lead + strings.Join(k.enum, "`, `") + "`."
			}
			env := k.env
			if env == "" {
				env = "—"
			} else {
				env = "`" + env + "`"
			}
			name := "`" + k.path + "`"
			if k.typ == "table" {
				name = "`[" + k.path + "]`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, k.typ, strings.ReplaceAll(doc, "|", `\|`), env)
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

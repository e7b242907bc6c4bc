package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaFile is the MCP registry's server.json schema, vendored with its
// source and date in packaging/registry/README.md.
const schemaFile = "packaging/registry/server.schema.2025-12-11.json"

// serverJSON writes registry/<server>/server.json: the template in
// packaging/<server>/server.json with this release's version and the
// bundle's URL and SHA-256, refused unless the registry's schema accepts it.
func (j *job) serverJSON(s, bundle, sum string) error {
	b, err := os.ReadFile(filepath.Join(j.repo, "packaging", s, "server.json"))
	if err != nil {
		return err
	}
	doc, err := fillServerJSON(b, strings.TrimPrefix(j.version, "v"), j.baseURL+"/"+j.version+"/"+bundle, sum)
	if err != nil {
		return err
	}
	if err := validateServerJSON(j.repo, doc); err != nil {
		return err
	}
	dir := filepath.Join(j.out, "registry", s)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "server.json"), doc, 0o644)
}

// fillServerJSON sets the version of the server and of its one mcpb
// package, the package's download URL and its SHA-256.
func fillServerJSON(tmpl []byte, version, url, sum string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(tmpl, &doc); err != nil {
		return nil, fmt.Errorf("server.json: %v", err)
	}
	pkgs, _ := doc["packages"].([]any)
	if len(pkgs) != 1 {
		return nil, fmt.Errorf("server.json: want exactly one package (the bundle), have %d", len(pkgs))
	}
	pkg, ok := pkgs[0].(map[string]any)
	if !ok || pkg["registryType"] != "mcpb" {
		return nil, fmt.Errorf("server.json: the package must be registryType \"mcpb\"")
	}
	doc["version"] = version
	pkg["version"] = version
	pkg["identifier"] = url
	pkg["fileSha256"] = sum
	out, err := json.MarshalIndent(doc, "", "  ")
	return append(out, '\n'), err
}

// validateServerJSON checks doc against the vendored registry schema.
func validateServerJSON(repo string, doc []byte) error {
	f, err := os.Open(filepath.Join(repo, schemaFile))
	if err != nil {
		return err
	}
	defer f.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return fmt.Errorf("%s: %v", schemaFile, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("server.schema.json", schemaDoc); err != nil {
		return err
	}
	sch, err := c.Compile("server.schema.json")
	if err != nil {
		return fmt.Errorf("%s: %v", schemaFile, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("server.json does not follow the registry schema: %v", err)
	}
	return nil
}

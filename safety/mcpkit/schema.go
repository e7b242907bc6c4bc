package mcpkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/result"
)

// ResultSchema is the output schema shared by every tool: an
// OperationResult. The code enum is result.Codes, in its order.
var ResultSchema = resultSchema(result.Codes)

func resultSchema(codes []result.Code) json.RawMessage {
	enum, err := json.Marshal(codes)
	if err != nil {
		panic(err)
	}
	return json.RawMessage(`{"type":"object","properties":{` +
		`"ok":{"type":"boolean"},` +
		`"code":{"type":"string","enum":` + string(enum) + `},` +
		`"action":{"type":"string"},"reason":{"type":"string"},"detail":{"type":"object"},"duration_ms":{"type":"number"}},` +
		`"required":["ok","code","action","reason","detail","duration_ms"]}`)
}

// CheckTools checks every tool of s with CheckTool and reports every
// mismatch, tool by tool. A server's tests call it on the server they
// build, so that a tool's input schema cannot drift from its arguments.
func CheckTools(s *server.MCPServer) error {
	tools := s.ListTools()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		if err := CheckTool(*tools[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CheckTool checks that st's handler was built by Handle and that its
// input schema describes exactly Handle's argument struct (see
// CheckInputSchema). It asks the handler for that type through a context
// value only this package can make: a Handle handler answers it without
// decoding or running anything. (A handler built otherwise cannot tell, and
// is called once with no arguments; every tool of a Bastion server is
// built with Handle.)
func CheckTool(st server.ServerTool) error {
	var args reflect.Type
	ctx := context.WithValue(context.Background(), argsTypeKey{}, &args)
	if st.Handler != nil {
		_, _ = st.Handler(ctx, mcp.CallToolRequest{})
	}
	if args == nil {
		return fmt.Errorf("tool %s: its handler was not built with mcpkit.Handle, so its arguments are not decoded strictly", st.Tool.Name)
	}
	if err := CheckInputSchema(st.Tool.RawInputSchema, args); err != nil {
		return fmt.Errorf("tool %s: %w", st.Tool.Name, err)
	}
	return nil
}

// argsTypeKey is the context key with which CheckTool asks a handler built
// by Handle for its argument type (a *reflect.Type to fill in).
type argsTypeKey struct{}

// CheckInputSchema reports every way schema fails to describe args, the
// struct Handle decodes a call's arguments into (pointers to it are
// followed):
//   - the schema is an object that refuses additional properties;
//   - its properties are exactly the struct's JSON names (as DecodeArgs
//     matches them), at every level of nested structs;
//   - each property has the JSON type of its field: string, boolean,
//     integer (Go integers), number (Go floats), array (slices, with items
//     checked when given), object (structs and maps);
//   - a required property's field is not a pointer, and an optional one's
//     field says it may be absent: a pointer, a slice, a map, or a field
//     tagged omitempty (where the zero value means "not given").
//
// Fields whose type decodes itself (json.Unmarshaler) or is an interface
// accept any schema type.
func CheckInputSchema(schema json.RawMessage, args reflect.Type) error {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("the input schema is not a JSON object: %v", err)
	}
	for args.Kind() == reflect.Pointer {
		args = args.Elem()
	}
	if args.Kind() != reflect.Struct {
		return fmt.Errorf("the arguments are a %s, not a struct", args)
	}
	var c schemaCheck
	c.value("arguments", s, args)
	return errors.Join(c.problems...)
}

// schemaCheck collects the problems of one CheckInputSchema.
type schemaCheck struct{ problems []error }

func (c *schemaCheck) addf(format string, a ...any) {
	c.problems = append(c.problems, fmt.Errorf(format, a...))
}

// value checks schema s of the value at where against Go type t.
func (c *schemaCheck) value(where string, s map[string]any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	want := schemaType(t)
	if got, _ := s["type"].(string); got != want {
		c.addf("%s: the schema says type %v, the field is a Go %s (JSON %s)", where, s["type"], t, want)
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if items, ok := s["items"].(map[string]any); ok {
			c.value(where+"[]", items, t.Elem())
		}
	case reflect.Struct:
		c.object(where, s, t)
	}
}

// object checks an object schema against struct t: its properties, their
// required-ness and additionalProperties.
func (c *schemaCheck) object(where string, s map[string]any, t reflect.Type) {
	if s["additionalProperties"] != false {
		c.addf("%s: the schema must say additionalProperties:false (unknown arguments are refused)", where)
	}
	props, _ := s["properties"].(map[string]any)
	fields := jsonFields(t)
	var required []string
	if r, ok := s["required"].([]any); ok {
		for _, n := range r {
			name, _ := n.(string)
			required = append(required, name)
			if _, ok := props[name]; !ok {
				c.addf("%s: %q is required but is not a property", where, name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if _, ok := fields[name]; !ok {
			c.addf("%s: property %q has no field in %s", where, name, t)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f := fields[name]
		p, ok := props[name].(map[string]any)
		if !ok {
			c.addf("%s: field %s (%q) is not a property of the schema", where, f.goName, name)
			continue
		}
		c.value(where+"."+name, p, f.typ)
		mayBeAbsent := f.omitEmpty
		switch f.typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			mayBeAbsent = true
		}
		switch isRequired := slices.Contains(required, name); {
		case isRequired && f.typ.Kind() == reflect.Pointer:
			c.addf("%s: %q is required, but field %s is a pointer (the way a field says it is optional)", where, name, f.goName)
		case !isRequired && !mayBeAbsent:
			c.addf("%s: %q is optional, but field %s cannot tell absent from zero: make it a pointer or tag it omitempty, or require it", where, name, f.goName)
		}
	}
}

// schemaType is the JSON Schema type of values of Go type t, as
// encoding/json reads them.
func schemaType(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[json.Number]():
		return "number"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "string" // base64
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return "(no JSON type: " + t.Kind().String() + ")"
}

package mcpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
)

// MaxArgumentBytes bounds the encoded arguments of one call.
const MaxArgumentBytes = 1 << 20

// DecodeArgs decodes raw tool arguments into dst strictly: unknown names,
// names that differ from the schema only in case ("PATH" for "path"),
// names given twice, wrong types and oversized input are refused with
// INVALID_REQUEST.
func DecodeArgs(raw any, dst any) error {
	var b []byte
	switch v := raw.(type) {
	case nil:
		b = []byte("{}")
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return result.New(result.InvalidRequest, "the arguments are not a JSON object")
		}
	}
	if len(b) > MaxArgumentBytes {
		return result.New(result.InvalidRequest, fmt.Sprintf("the arguments exceed %d bytes", MaxArgumentBytes))
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		b = []byte("{}")
	}
	if err := checkNames(b, reflect.TypeOf(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return result.New(result.InvalidRequest, argError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return result.New(result.InvalidRequest, "the arguments must be a single JSON object")
	}
	return nil
}

// checkNames refuses object keys that encoding/json would accept but that
// are not exactly a field's name: encoding/json matches names without regard
// to case and lets a repeated name silently override the first. It walks
// nested structs, slices and maps of structs. Input that is not valid JSON
// or whose shape does not match t is left to the decoder to report.
func checkNames(b []byte, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj []kv
		if !splitObject(b, &obj) {
			return nil
		}
		fields := jsonFields(t)
		seen := make(map[string]bool, len(obj))
		for _, e := range obj {
			f, ok := fields[e.key]
			if !ok {
				return result.New(result.InvalidRequest, fmt.Sprintf("unknown argument %q; this tool accepts only the arguments in its schema, with names spelled exactly as there", e.key))
			}
			if seen[e.key] {
				return result.New(result.InvalidRequest, fmt.Sprintf("argument %q is given more than once", e.key))
			}
			seen[e.key] = true
			if err := checkNames(e.val, f.typ); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var elems []json.RawMessage
		if json.Unmarshal(b, &elems) != nil {
			return nil
		}
		for _, e := range elems {
			if err := checkNames(e, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		for _, v := range m {
			if err := checkNames(v, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

type kv struct {
	key string
	val json.RawMessage
}

// splitObject reads b as one JSON object into its keys and values, in
// order and keeping repeats. It reports false when b is not an object.
func splitObject(b []byte, out *[]kv) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, ok := tok.(string)
		if !ok {
			return false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		*out = append(*out, kv{key, v})
	}
	return true
}

// argField is one field of an argument struct as encoding/json sees it.
type argField struct {
	typ       reflect.Type
	goName    string
	omitEmpty bool // tagged omitempty: the field says it may be absent
}

// jsonFields maps the exact JSON names encoding/json decodes into struct
// type t (promoted fields of embedded structs included) to their fields.
func jsonFields(t reflect.Type) map[string]argField {
	m := map[string]argField{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				continue // its fields are visited as promoted fields
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup || len(f.Index) == 1 {
			m[name] = argField{typ: f.Type, goName: f.Name, omitEmpty: hasOption(opts, "omitempty")}
		}
	}
	return m
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func argError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return "the arguments must be a JSON object"
		}
		return fmt.Sprintf("argument %q must be of type %s", te.Field, jsonType(te.Type.Kind().String()))
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown argument " + f + "; this tool accepts only the arguments in its schema"
	}
	return "the arguments are not valid JSON for this tool"
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "ptr":
		return "the documented type"
	}
	return "number"
}

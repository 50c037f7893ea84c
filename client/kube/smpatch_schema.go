package kube

import (
	"fmt"
	"reflect"
	"strings"
)

// mergeSchema is the Go type a part of a strategic merge patch applies to:
// its struct tags (patchStrategy, patchMergeKey) say how a field's lists and
// maps merge, as they do for the API server.
type mergeSchema struct{ t reflect.Type }

// fieldPatch is one field's strategic merge metadata.
type fieldPatch struct {
	// strategy is the field's patch strategy without retainKeys: "",
	// "merge" or "replace".
	strategy string
	// mergeKey is the key that identifies a list's elements.
	mergeKey string
}

// field returns the schema of the struct field whose JSON name is key and
// its merge metadata.
func (s mergeSchema) field(key string) (mergeSchema, fieldPatch, error) {
	t := s.t
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return mergeSchema{}, fieldPatch{}, fmt.Errorf("%q merges as an object but %s is not one", key, t)
	}
	f, ok := jsonField(t, key)
	if !ok {
		return mergeSchema{}, fieldPatch{}, fmt.Errorf("%s has no field %q", t, key)
	}
	strategy, err := mergeStrategy(f.Tag.Get("patchStrategy"))
	if err != nil {
		return mergeSchema{}, fieldPatch{}, fmt.Errorf("field %q: %w", key, err)
	}
	return mergeSchema{t: f.Type}, fieldPatch{strategy: strategy, mergeKey: f.Tag.Get("patchMergeKey")}, nil
}

// elem returns the schema of the elements of the list field key and the
// field's merge metadata.
func (s mergeSchema) elem(key string) (mergeSchema, fieldPatch, error) {
	sub, fp, err := s.field(key)
	if err != nil {
		return mergeSchema{}, fieldPatch{}, err
	}
	t := sub.t
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		t = t.Elem()
		if k := t.Kind(); k == reflect.Slice || k == reflect.Array {
			return mergeSchema{}, fieldPatch{}, fmt.Errorf("field %q is a list of lists", key)
		}
	case reflect.Pointer:
		t = t.Elem()
		if k := t.Kind(); k == reflect.Slice || k == reflect.Array {
			t = t.Elem()
		}
	default:
		return mergeSchema{}, fieldPatch{}, fmt.Errorf("%q merges as a list but is a %s", key, t.Kind())
	}
	return mergeSchema{t: t}, fp, nil
}

// mergeStrategy returns the strategy of a patchStrategy tag without its
// retainKeys part (retainKeys only says a patch may carry $retainKeys).
func mergeStrategy(tag string) (string, error) {
	parts := strings.Split(tag, ",")
	var other []string
	for _, p := range parts {
		if p != "retainKeys" {
			other = append(other, p)
		}
	}
	switch {
	case len(parts) > 2 || len(parts) == 2 && len(other) != 1:
		return "", fmt.Errorf("unexpected patch strategy %q", tag)
	case len(other) == 0:
		return "", nil
	}
	return other[0], nil
}

// jsonField returns the field of struct t that encoding/json reads the
// key name into: the shallowest one, fields of embedded structs without a
// JSON name counting as the embedding struct's own; a name that is no
// field's matches a field whose name equals it but for case.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	if f, ok := findJSONField(t, func(n string) bool { return n == name }); ok {
		return f, true
	}
	return findJSONField(t, func(n string) bool { return strings.EqualFold(n, name) })
}

// findJSONField returns the shallowest field of struct t whose JSON name
// matches.
func findJSONField(t reflect.Type, match func(string) bool) (reflect.StructField, bool) {
	level := []reflect.Type{t}
	seen := map[reflect.Type]bool{}
	for len(level) > 0 {
		var next []reflect.Type
		var found []reflect.StructField
		for _, st := range level {
			if seen[st] {
				continue
			}
			seen[st] = true
			for i := range st.NumField() {
				f := st.Field(i)
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				tagName, _, _ := strings.Cut(tag, ",")
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if f.Anonymous && tagName == "" && ft.Kind() == reflect.Struct {
					next = append(next, ft)
					continue
				}
				if !f.IsExported() {
					continue
				}
				n := tagName
				if n == "" {
					n = f.Name
				}
				if match(n) {
					found = append(found, f)
				}
			}
		}
		if len(found) == 1 {
			return found[0], true
		}
		if len(found) > 1 {
			return reflect.StructField{}, false
		}
		level = next
	}
	return reflect.StructField{}, false
}

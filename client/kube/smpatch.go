package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Tether applies a strategic merge pod patch itself, with the semantics of
// the API server's (kubectl patch --type strategic): the merge keys and
// strategies come from the corev1 struct tags, maps merge recursively,
// null deletes, lists with a merge key merge element by element (their
// order as the API server orders them), lists of scalars with the merge
// strategy are merged sets, other lists are replaced; the directives
// $patch (replace, delete), $retainKeys, $setElementOrder/ and
// $deleteFromPrimitiveList/ are applied ($patch: merge in a list is
// refused, as the API server refuses it). A differential test holds it
// to apimachinery's implementation, which tether does not link (it brings
// the OpenAPI and protobuf libraries into every start).

// The directives of a strategic merge patch.
const (
	smDirective      = "$patch"
	smRetainKeys     = "$retainKeys"
	smDeleteFromList = "$deleteFromPrimitiveList"
	smSetOrder       = "$setElementOrder"
)

// errUnsupportedDirective is returned for a directive Tether does not apply.
var errUnsupportedDirective = errors.New("is not supported in a strategic merge pod patch: write the change as a JSON patch (a list of RFC 6902 operations) instead")

// uncomparable is what eq panics with when the API server's
// implementation would compare two values Go cannot compare (it panics);
// strategicMerge turns it into an error.
type uncomparable struct{ a any }

// strategicMerge applies patch, a strategic merge patch as JSON, to orig,
// a JSON object of Go type t, and returns the result as JSON.
func strategicMerge(orig, patch []byte, t reflect.Type) (out []byte, err error) {
	o, err := decodeJSONObject(orig)
	if err != nil {
		return nil, fmt.Errorf("decode the object: %w", err)
	}
	p, err := decodeJSONObject(patch)
	if err != nil {
		return nil, fmt.Errorf("the patch is not a JSON object: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			u, ok := r.(uncomparable)
			if !ok {
				panic(r)
			}
			out, err = nil, fmt.Errorf("a merge key's or a list's value %v is an object or a list: want a string or a number", u.a)
		}
	}()
	merged, err := mergeObject(o, p, mergeSchema{t: t})
	if err != nil {
		return nil, err
	}
	return json.Marshal(merged)
}

// decodeJSONObject decodes a JSON object with its integers as int64 and
// its other numbers as float64; JSON's null is a nil map.
func decodeJSONObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON object")
	}
	if err := convertNumbers(m); err != nil {
		return nil, err
	}
	return m, nil
}

// convertNumbers replaces the json.Numbers in v, a map or a list, by an
// int64 where the number is one and a float64 otherwise.
func convertNumbers(v any) error {
	conv := func(x any) (any, error) {
		n, ok := x.(json.Number)
		if !ok {
			return x, convertNumbers(x)
		}
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		return n.Float64()
	}
	var err error
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if v[k], err = conv(x); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if v[i], err = conv(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeObject merges patch into orig (changing both) and returns the
// result.
func mergeObject(orig, patch map[string]any, s mergeSchema) (map[string]any, error) {
	if d, ok := patch[smDirective]; ok {
		switch d {
		case "replace":
			delete(patch, smDirective)
			return patch, nil
		case "delete":
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("%s: %v in an object: want replace or delete", smDirective, d)
	}
	if orig == nil {
		orig = map[string]any{}
	}
	if err := retainKeys(orig, patch); err != nil {
		return nil, err
	}
	if err := setElementOrders(orig, patch, s); err != nil {
		return nil, err
	}
	// The directive $deleteFromPrimitiveList/k sorts before k: a patch
	// that deletes and adds in one list deletes first.
	keys := make([]string, 0, len(patch))
	for k := range patch {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := mergeField(orig, k, patch[k], s); err != nil {
			return nil, err
		}
	}
	return orig, nil
}

// mergeField merges the patch's value pv of key k into orig.
func mergeField(orig map[string]any, k string, pv any, s mergeSchema) error {
	deleteList := false
	if strings.HasPrefix(k, smDeleteFromList) {
		prefix, rest, found := strings.Cut(k, "/")
		if !found || prefix != smDeleteFromList {
			return fmt.Errorf("the directive %q: want %s/FIELD", k, smDeleteFromList)
		}
		deleteList = true
		if rest != "" {
			k = rest
		}
	}
	if pv == nil {
		delete(orig, k)
		return nil
	}
	ov, ok := orig[k]
	if !ok || reflect.TypeOf(ov) != reflect.TypeOf(pv) {
		if !deleteList {
			dropNulls(pv)
			setWithoutDirectives(orig, k, pv)
		}
		return nil
	}
	switch ov := ov.(type) {
	case map[string]any:
		sub, fp, err := s.field(k)
		if err != nil {
			return err
		}
		if fp.strategy == "replace" {
			orig[k] = pv
			return nil
		}
		if orig[k], err = mergeObject(ov, pv.(map[string]any), sub); err != nil {
			return err
		}
	case []any:
		sub, fp, err := s.elem(k)
		if err != nil {
			return err
		}
		if fp.strategy != "merge" && !deleteList {
			orig[k] = pv
			return nil
		}
		if orig[k], err = mergeList(ov, pv.([]any), sub, fp.mergeKey, deleteList); err != nil {
			return fmt.Errorf("list %q: %w", k, err)
		}
	default:
		setWithoutDirectives(orig, k, pv)
	}
	return nil
}

// setWithoutDirectives sets m[k] to v without its objects that carry a
// $patch directive (deleting k when v is one).
func setWithoutDirectives(m map[string]any, k string, v any) {
	if v, keep := withoutDirectives(v); keep {
		m[k] = v
		return
	}
	delete(m, k)
}

// withoutDirectives returns v without the objects in it that carry a
// $patch directive, and false when v itself is one.
func withoutDirectives(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[smDirective]; ok {
			return nil, false
		}
		for k, x := range v {
			if x, keep := withoutDirectives(x); keep {
				v[k] = x
			} else {
				delete(v, k)
			}
		}
		return v, true
	case []any:
		out := []any{}
		for _, x := range v {
			if x, keep := withoutDirectives(x); keep {
				out = append(out, x)
			}
		}
		return out, true
	}
	return v, true
}

// dropNulls deletes the null values of the objects in v.
func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil {
				delete(v, k)
			} else {
				dropNulls(x)
			}
		}
	case []any:
		for _, x := range v {
			dropNulls(x)
		}
	}
}

// retainKeys applies the patch's $retainKeys directive: orig keeps only
// the keys it lists, and the patch may set no other.
func retainKeys(orig, patch map[string]any) error {
	rk, ok := patch[smRetainKeys]
	if !ok {
		return nil
	}
	delete(patch, smRetainKeys)
	list, ok := rk.([]any)
	if !ok {
		return fmt.Errorf("%s: want a list of keys", smRetainKeys)
	}
	keep := map[any]bool{}
	for _, x := range list {
		hashable(x)
		keep[x] = true
	}
	for k, v := range patch {
		if v == nil || strings.HasPrefix(k, smDeleteFromList) || strings.HasPrefix(k, smSetOrder) {
			continue
		}
		if !keep[k] {
			return fmt.Errorf("%s does not list the patch's key %q", smRetainKeys, k)
		}
	}
	for k := range orig {
		if !keep[k] {
			delete(orig, k)
		}
	}
	return nil
}

// hashable panics with uncomparable when x cannot be a map key.
func hashable(x any) {
	switch x.(type) {
	case map[string]any, []any:
		panic(uncomparable{x})
	}
}

// eq is a == b, panicking with uncomparable where == would panic.
func eq(a, b any) bool {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) {
		return false
	}
	if ta != nil && !ta.Comparable() {
		panic(uncomparable{a})
	}
	return a == b
}

// mergeList merges the patch's list into orig: lists of scalars as sets
// (or, for a $deleteFromPrimitiveList directive, without the patch's
// values), lists of objects element by element by mergeKey; the result
// is ordered as the API server orders it.
func mergeList(orig, patch []any, s mergeSchema, mergeKey string, deleteList bool) ([]any, error) {
	if len(orig) == 0 && len(patch) == 0 {
		return orig, nil
	}
	kind, err := listKind(orig, patch)
	if err != nil {
		return nil, err
	}
	var merged []any
	if kind != reflect.Map {
		if deleteList {
			return deleteValues(orig, patch), nil
		}
		merged = dedupe(append(orig, patch...))
	} else {
		if mergeKey == "" {
			return nil, fmt.Errorf("a list of objects without a merge key cannot merge")
		}
		if orig, patch, err = listDirectives(orig, patch, mergeKey); err != nil {
			return nil, err
		}
		if merged, err = mergeElements(orig, patch, mergeKey, s); err != nil {
			return nil, err
		}
	}
	var fromPatch, serverOnly []any
	if mergeKey == "" {
		fromPatch, serverOnly = splitScalars(merged, patch)
	} else if fromPatch, serverOnly, err = splitObjects(merged, patch, mergeKey); err != nil {
		return nil, err
	}
	return orderMerged(fromPatch, serverOnly, patch, orig, mergeKey, kind)
}

// listKind returns the kind of the elements of both lists, which must be
// one, and not a list.
func listKind(lists ...[]any) (reflect.Kind, error) {
	var first reflect.Type
	seen := false
	for _, l := range lists {
		for _, v := range l {
			t := reflect.TypeOf(v)
			if !seen {
				seen, first = true, t
				if t == nil {
					return 0, fmt.Errorf("a list's first element is null")
				}
				if t.Kind() == reflect.Slice {
					return 0, fmt.Errorf("lists of lists cannot merge")
				}
			} else if t != first {
				return 0, fmt.Errorf("the list's elements are not all of one type")
			}
		}
	}
	if !seen {
		return 0, fmt.Errorf("no elements in the lists")
	}
	return first.Kind(), nil
}

// deleteValues returns cur without the values in del.
func deleteValues(cur, del []any) []any {
	gone := map[any]bool{}
	for _, v := range del {
		hashable(v)
		gone[v] = true
	}
	out := make([]any, 0, len(cur))
	for _, v := range cur {
		if !gone[v] {
			out = append(out, v)
		}
	}
	return out
}

// dedupe removes repeated values from s in place, each later repeat
// replaced by the list's last element, as the API server does.
func dedupe(s []any) []any {
	last := len(s) - 1
	for i := 0; i < last; i++ {
		for j := i + 1; j <= last; j++ {
			if eq(s[i], s[j]) {
				s[j] = s[last]
				s = s[:last]
				last--
				j--
			}
		}
	}
	return s
}

// listDirectives applies the $patch elements of a list of objects:
// delete removes orig's elements of that merge key, replace makes the
// patch's other elements the list. It returns orig and the patch without
// them.
func listDirectives(orig, patch []any, mergeKey string) ([]any, []any, error) {
	rest := []any{}
	replace := false
	for _, v := range patch {
		m := v.(map[string]any)
		d, ok := m[smDirective]
		if !ok {
			rest = append(rest, v)
			continue
		}
		switch d {
		case "delete":
			key, ok := m[mergeKey]
			if !ok {
				return nil, nil, fmt.Errorf("an element with %s: delete has no merge key %q", smDirective, mergeKey)
			}
			for {
				_, i, found, err := findByKey(orig, mergeKey, key)
				if err != nil {
					return nil, nil, err
				}
				if !found {
					break
				}
				orig = append(orig[:i], orig[i+1:]...)
			}
		case "replace":
			replace = true
		case "merge":
			return nil, nil, fmt.Errorf("%s: merge in a list %w", smDirective, errUnsupportedDirective)
		default:
			return nil, nil, fmt.Errorf("%s: %v in a list: want replace or delete", smDirective, d)
		}
	}
	if replace {
		return rest, nil, nil
	}
	return orig, rest, nil
}

// mergeElements merges each element of patch into orig's element of the
// same merge key, or appends it.
func mergeElements(orig, patch []any, mergeKey string, s mergeSchema) ([]any, error) {
	for _, v := range patch {
		m := v.(map[string]any)
		key, ok := m[mergeKey]
		if !ok {
			return nil, fmt.Errorf("an element has no merge key %q", mergeKey)
		}
		om, i, found, err := findByKey(orig, mergeKey, key)
		if err != nil {
			return nil, err
		}
		if !found {
			orig = append(orig, v)
			continue
		}
		if orig[i], err = mergeObject(om, m, s); err != nil {
			return nil, err
		}
	}
	return orig, nil
}

// findByKey returns the first object of l whose mergeKey is value, and
// its index.
func findByKey(l []any, mergeKey string, value any) (map[string]any, int, bool, error) {
	for i, v := range l {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, 0, false, fmt.Errorf("element %d is not an object", i)
		}
		if x, ok := m[mergeKey]; ok && eq(x, value) {
			return m, i, true, nil
		}
	}
	return nil, 0, false, nil
}

// splitScalars splits merged into the values in patch and the others.
func splitScalars(merged, patch []any) (fromPatch, serverOnly []any) {
	in := map[any]bool{}
	for _, v := range patch {
		hashable(v)
		in[v] = true
	}
	fromPatch = make([]any, 0, len(merged))
	serverOnly = make([]any, 0, len(merged))
	for _, v := range merged {
		if in[v] {
			fromPatch = append(fromPatch, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	return fromPatch, serverOnly
}

// splitObjects splits merged into the objects whose merge key is in patch
// and the others.
func splitObjects(merged, patch []any, mergeKey string) (fromPatch, serverOnly []any, err error) {
	fromPatch = make([]any, 0, len(merged))
	serverOnly = make([]any, 0, len(merged))
	for _, v := range merged {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("an element of a list of objects is not an object")
		}
		key, ok := m[mergeKey]
		if !ok {
			return nil, nil, fmt.Errorf("an element has no merge key %q", mergeKey)
		}
		_, _, found, err := findByKey(patch, mergeKey, key)
		if err != nil {
			return nil, nil, err
		}
		if found {
			fromPatch = append(fromPatch, v)
		} else {
			serverOnly = append(serverOnly, v)
		}
	}
	return fromPatch, serverOnly, nil
}

// orderMerged orders the patch's elements as the patch does and the
// others as orig does, then interleaves them: an element of orig goes
// before a patch element that orig has after it.
func orderMerged(fromPatch, serverOnly, patch, orig []any, mergeKey string, kind reflect.Kind) ([]any, error) {
	fromPatch, err := orderBy(fromPatch, patch, mergeKey, kind)
	if err != nil {
		return nil, err
	}
	if serverOnly, err = orderBy(serverOnly, orig, mergeKey, kind); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(serverOnly)+len(fromPatch))
	i, j := 0, 0
	for i < len(serverOnly) || j < len(fromPatch) {
		switch {
		case j >= len(fromPatch):
			out = append(out, serverOnly[i])
			i++
		case i >= len(serverOnly):
			out = append(out, fromPatch[j])
			j++
		default:
			li := indexIn(orig, serverOnly[i], mergeKey, kind)
			ri := indexIn(orig, fromPatch[j], mergeKey, kind)
			if li >= 0 && ri >= 0 && li < ri {
				out = append(out, serverOnly[i])
				i++
			} else {
				out = append(out, fromPatch[j])
				j++
			}
		}
	}
	return out, nil
}

// orderBy sorts l (stably) by the positions of its elements in order,
// elements with $patch: delete last.
func orderBy(l, order []any, mergeKey string, kind reflect.Kind) ([]any, error) {
	var deletes []any
	if kind == reflect.Map {
		for _, list := range [][]any{l, order} {
			for _, v := range list {
				m, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("an element of a list of objects is not an object")
				}
				if _, ok := m[mergeKey]; !ok {
					return nil, fmt.Errorf("an element has no merge key %q", mergeKey)
				}
			}
		}
		var rest []any
		for _, v := range l {
			if v.(map[string]any)[smDirective] == "delete" {
				deletes = append(deletes, v)
			} else {
				rest = append(rest, v)
			}
		}
		l = rest
	}
	sort.SliceStable(l, func(a, b int) bool {
		if ia := indexIn(order, l[a], mergeKey, kind); ia >= 0 {
			if ib := indexIn(order, l[b], mergeKey, kind); ib >= 0 {
				return ia < ib
			}
		}
		return true
	})
	return append(l, deletes...), nil
}

// indexIn returns the position in l of the element with v's merge key
// (or of v, for scalars), or -1.
func indexIn(l []any, v any, mergeKey string, kind reflect.Kind) int {
	key := func(x any) any {
		if kind != reflect.Map {
			return x
		}
		m, ok := x.(map[string]any)
		if !ok {
			return nil
		}
		return m[mergeKey]
	}
	want := key(v)
	for i, x := range l {
		if eq(want, key(x)) {
			return i
		}
	}
	return -1
}

// setElementOrders applies the patch's $setElementOrder/ directives: each
// merges its list (if the patch has it) and orders the result: the
// directive's elements in its order, orig's others where orig had them.
// The directive and its list leave the patch.
func setElementOrders(orig, patch map[string]any, s mergeSchema) error {
	var keys []string
	for k := range patch {
		if strings.HasPrefix(k, smSetOrder) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		order, ok := patch[k].([]any)
		delete(patch, k)
		if !ok {
			return fmt.Errorf("the directive %q: want a list", k)
		}
		prefix, key, found := strings.Cut(k, "/")
		if !found || prefix != smSetOrder {
			return fmt.Errorf("the directive %q: want %s/FIELD", k, smSetOrder)
		}
		ov, inOrig := orig[key]
		pv, inPatch := patch[key]
		var origList, patchList []any
		if inOrig {
			if origList, ok = ov.([]any); !ok {
				return fmt.Errorf("%s: the object's %q is not a list", k, key)
			}
		}
		if inPatch {
			if patchList, ok = pv.([]any); !ok {
				return fmt.Errorf("%s: the patch's %q is not a list", k, key)
			}
		}
		sub, fp, err := s.elem(key)
		if err != nil {
			return err
		}
		if err := checkOrder(patchList, order, fp.mergeKey); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		var merged []any
		switch {
		case inOrig && !inPatch:
			merged = origList
		case !inOrig && inPatch:
			v, _ := withoutDirectives(patchList)
			merged = v.([]any)
		case inOrig && inPatch:
			if fp.strategy != "merge" {
				merged = patchList
			} else if merged, err = mergeList(origList, patchList, sub, fp.mergeKey, false); err != nil {
				return fmt.Errorf("list %q: %w", key, err)
			}
		default:
			continue
		}
		var fromOrder, serverOnly []any
		if fp.mergeKey == "" {
			fromOrder, serverOnly = splitScalars(merged, order)
		} else if fromOrder, serverOnly, err = splitObjects(merged, order, fp.mergeKey); err != nil {
			return err
		}
		kind, err := listKind(origList, patchList)
		if err != nil {
			return err
		}
		if orig[key], err = orderMerged(fromOrder, serverOnly, order, origList, fp.mergeKey, kind); err != nil {
			return err
		}
		delete(patch, key)
	}
	return nil
}

// checkOrder checks that the patch's list (without its $patch: delete
// elements) has its elements in the $setElementOrder list's order.
func checkOrder(patchList, order []any, mergeKey string) error {
	if len(order) == 0 || len(patchList) == 0 {
		return nil
	}
	items := patchList
	if mergeKey != "" {
		items = nil
		for _, v := range patchList {
			m, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("an element of a list of objects is not an object")
			}
			if m[smDirective] != "delete" {
				items = append(items, v)
			}
		}
	}
	p, o := 0, 0
	for p < len(items) && o < len(order) {
		if m, ok := items[p].(map[string]any); ok {
			if _, ok := m[smDirective]; ok {
				p++
				continue
			}
		}
		same, err := sameElement(items[p], order[o], mergeKey)
		if err != nil {
			return err
		}
		if same {
			p++
		}
		o++
	}
	if p < len(items) {
		return fmt.Errorf("the patch's list is not in the order of the directive's, or has elements it lacks")
	}
	return nil
}

// sameElement reports whether a and b are one element of a list: equal
// scalars, or objects of equal merge keys.
func sameElement(a, b any, mergeKey string) (bool, error) {
	if mergeKey == "" {
		return eq(a, b), nil
	}
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		return false, fmt.Errorf("an element of a list of objects is not an object")
	}
	ka, okA := ma[mergeKey]
	kb, okB := mb[mergeKey]
	if !okA || !okB {
		return false, fmt.Errorf("an element has no merge key %q", mergeKey)
	}
	return eq(ka, kb), nil
}

package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// ConfigFlag is the flag (Pod.Config) that names a config file of flag
// values; the file itself may not set it.
const ConfigFlag = "config"

// ApplyFile sets the flags of fs from the YAML file at path (nothing when
// path is empty). Its top-level keys are long flag names; a value is a
// string, number or bool, or for a repeatable flag (one whose usage says
// "repeatable") a list of them, each set in turn, or a map, set as one
// K=V value per key. Flags given on the command line win: a key whose
// flag fs.Parse already set is left alone. An unknown key, a list for a
// flag that takes one value, a nested map, a null, or a value the flag
// rejects is an error naming the key and the file. Call it after
// fs.Parse, with any FlagSet: every flag registered on it is configurable.
func ApplyFile(fs *pflag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--%s: read the config file: %w", ConfigFlag, err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return fmt.Errorf("--%s %s: not valid YAML: %w", ConfigFlag, path, err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("--%s %s: want a map of flag names to values: %w", ConfigFlag, path, err)
	}
	return ApplyValues(fs, path, doc)
}

// ApplyValues sets the flags of fs from doc, a map of long flag names to
// values as a YAML config file holds them (decoded by encoding/json with
// UseNumber, or by sigs.k8s.io/yaml: numbers as json.Number, int64 or
// float64), with ApplyFile's rules and messages; where names the values
// in every error ("pools.yaml: pool \"ci\"").
func ApplyValues(fs *pflag.FlagSet, where string, doc map[string]any) error {
	for _, key := range slices.Sorted(maps.Keys(doc)) {
		fl := fs.Lookup(key)
		if fl == nil || key == ConfigFlag {
			return fmt.Errorf("%s: unknown key %q%s: keys are the long names of %s's flags (%s --help)", where, key, didYouMean(fs, key), fs.Name(), fs.Name())
		}
		if fl.Changed {
			continue // the command line wins
		}
		values, err := configValues(doc[key], strings.Contains(fl.Usage, "repeatable"))
		if err != nil {
			return fmt.Errorf("%s: key %q (--%s): %w", where, key, key, err)
		}
		for _, v := range values {
			if err := fs.Set(key, v); err != nil {
				return fmt.Errorf("%s: key %q: invalid value %q for --%s: %w", where, key, v, key, err)
			}
		}
	}
	return nil
}

// configValues turns one config value into the flag values to set.
func configValues(v any, repeatable bool) ([]string, error) {
	if m, ok := v.(map[string]any); ok {
		// A map for a repeatable K=V flag ("node-selector: {disk: ssd}"):
		// one K=V value per key, in key order.
		if !repeatable {
			return nil, fmt.Errorf("a map, but the flag takes one value")
		}
		out := make([]string, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s, err := configScalar(m[k])
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			out = append(out, k+"="+s)
		}
		return out, nil
	}
	if list, ok := v.([]any); ok {
		if !repeatable {
			return nil, fmt.Errorf("a list, but the flag takes one value")
		}
		out := make([]string, 0, len(list))
		for i, item := range list {
			s, err := configScalar(item)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := configScalar(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

// configScalar is one config value as a flag value.
func configScalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return fmt.Sprint(v), nil
	case json.Number:
		return v.String(), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case nil:
		return "", fmt.Errorf("no value (null)")
	default:
		return "", fmt.Errorf("want a string, number or bool, got %T", v)
	}
}

package protocol

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// EncodeEnvFile returns the content of a job's variables file (a job
// command's env_file): each variable as NAME=VALUE ended by a NUL byte,
// sorted by name. A name must be non-empty and hold no '=' or NUL; a value
// no NUL.
func EncodeEnvFile(env map[string]string) ([]byte, error) {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("variable name %q: a name must be non-empty and hold no '=' or NUL", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("variable %s: its value holds a NUL byte, which no environment can carry", k)
		}
		b = append(append(append(append(b, k...), '='), v...), 0)
	}
	return b, nil
}

// ParseEnvFile splits a job's variables file into NAME=VALUE entries, in
// file order. Its errors never quote the content (it holds the job's
// secrets).
func ParseEnvFile(data []byte) ([]string, error) {
	if len(data) == 0 {
		return []string{}, nil
	}
	if data[len(data)-1] != 0 {
		return nil, fmt.Errorf("the variables file does not end with a NUL byte (it is truncated)")
	}
	entries := bytes.Split(data[:len(data)-1], []byte{0})
	env := make([]string, 0, len(entries))
	for i, entry := range entries {
		name, _, ok := bytes.Cut(entry, []byte{'='})
		if !ok || len(name) == 0 {
			return nil, fmt.Errorf("the variables file: entry %d has no NAME= (entries are NAME=VALUE, each ended by NUL)", i)
		}
		env = append(env, string(entry))
	}
	return env, nil
}

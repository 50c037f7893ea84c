package protocol_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

func TestEnvFile(t *testing.T) {
	data, err := protocol.EncodeEnvFile(map[string]string{"B": "two\nlines=x", "A": "", "ÜBER": "\xff"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "A=\x00B=two\nlines=x\x00ÜBER=\xff\x00"; string(data) != want {
		t.Fatalf("encoded %q, want %q", data, want)
	}
	env, err := protocol.ParseEnvFile(data)
	if want := []string{"A=", "B=two\nlines=x", "ÜBER=\xff"}; err != nil || !slices.Equal(env, want) {
		t.Fatalf("parsed %q, %v; want %q", env, err, want)
	}
	for _, bad := range []map[string]string{{"": "x"}, {"A=B": "x"}, {"A": "x\x00y"}} {
		if _, err := protocol.EncodeEnvFile(bad); err == nil {
			t.Errorf("EncodeEnvFile(%q): no error", bad)
		}
	}
	for _, bad := range []string{"A=1", "=1\x00", "A\x00"} {
		_, err := protocol.ParseEnvFile([]byte(bad))
		if err == nil {
			t.Errorf("ParseEnvFile(%q): no error", bad)
		} else if strings.Contains(err.Error(), "1") && strings.Contains(bad, "=1") {
			t.Errorf("ParseEnvFile(%q) quotes the content: %v", bad, err)
		}
	}
}

func TestCommandJobLimits(t *testing.T) {
	ok := `{"cmd":"job","id":"w","scripts":["/f/a"],"env_file":"/f/.env-1","deadline_ms":60000,"ttl_ms":900000}`
	c, err := protocol.ParseCommand([]byte(ok))
	if err != nil || c.EnvFile != "/f/.env-1" || c.DeadlineMS != 60000 || c.TTLMS != 900000 {
		t.Fatalf("ParseCommand: %+v, %v", c, err)
	}
	for _, bad := range []string{
		`{"cmd":"job","scripts":["/a"],"env_file":"rel"}`,
		`{"cmd":"run","script":"/a","env_file":"/f/e"}`,
		`{"cmd":"job","scripts":["/a"],"deadline_ms":-1}`,
		`{"cmd":"job","scripts":["/a"],"ttl_ms":-5}`,
	} {
		if _, err := protocol.ParseCommand([]byte(bad)); err == nil {
			t.Errorf("ParseCommand(%s): no error", bad)
		}
	}
}

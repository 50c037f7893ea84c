package gitlab

import (
	"os"
	"strings"
	"time"
)

// stageSettings are the settings of the agent's previous stage, kept for
// the next one: the runner calls every stage of a job with the same
// run_args and environment, followed by the stage's script and name, so
// parsing them again (the flags and the config file) gives the same
// settings.
type stageSettings struct {
	// key is the arguments before the script and stage, and
	// $TETHER_CONFIG.
	key string
	// config is the config file as it was when it was read.
	config fileStamp
	cfg    Settings
}

// fileStamp identifies a file's content by its name, size and
// modification time (the zero stamp: no file).
type fileStamp struct {
	name    string
	size    int64
	modTime time.Time
	ok      bool
}

// freshConfig is how recently a config file must not have changed for
// its settings to be kept.
const freshConfig = 2 * time.Second

func stampOf(name string) fileStamp {
	if name == "" {
		return fileStamp{ok: true}
	}
	fi, err := os.Stat(name)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{name: name, size: fi.Size(), modTime: fi.ModTime(), ok: true}
}

// parse is Parse for one of the job's stages, args being its process's
// arguments (run_args, SCRIPT, STAGE). When every argument but the last
// two, $TETHER_CONFIG and the config file (size and modification time)
// are the previous stage's, the previous stage's settings are reused; the
// positional arguments are then the last two. Called by one stage at a
// time.
func (a *agent) parse(cfg *Settings, args []string, env Env) ([]string, error) {
	n := len(args)
	// A script or stage that looks like a flag is parsed as one.
	reusable := n >= 2 && !strings.HasPrefix(args[n-2], "-") && !strings.HasPrefix(args[n-1], "-")
	var key string
	if reusable {
		key = strings.Join(args[:n-2], "\x00") + "\x00\x00" + env("TETHER_CONFIG")
		if p := a.parsed; p != nil && p.key == key && p.config == stampOf(p.cfg.Config) {
			*cfg = p.cfg
			return []string{args[n-2], args[n-1]}, nil
		}
	}
	pos, err := Parse(cfg, args, env)
	stamp := stampOf(cfg.Config)
	if time.Since(stamp.modTime) < freshConfig {
		// It may have changed while it was read: read it again next time.
		stamp.ok = false
	}
	// Kept only when the last two arguments were the positional ones (no
	// flag before them took one as its value).
	if err == nil && reusable && stamp.ok && len(pos) == 2 && pos[0] == args[n-2] && pos[1] == args[n-1] {
		a.parsed = &stageSettings{key: key, config: stamp, cfg: *cfg}
	} else {
		a.parsed = nil
	}
	return pos, err
}

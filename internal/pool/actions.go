package pool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/internal/actionspod"
	"github.com/tether-ci/tether/settings"
)

// ExternalsNone as actions-externals-image leaves the runner's externals
// out of the pool's pods (as the hook's TETHER_ACTIONS_EXTERNALS_IMAGE=none).
const ExternalsNone = "none"

// Actions are the keys of a pool for GitHub Actions jobs, meaning what
// the hook's settings and a workflow's job say for a job that claims the
// pool's pods: the job container's image is the pool's image.
type Actions struct {
	// Services are the images of the job's services, in the workflow's
	// order (key actions-service, repeatable): a job claims the pool's
	// pods only with exactly these services, none with an entrypoint,
	// command, variables or options.
	Services settings.StringList
	// ExternalsImage is the image the runner's externals are copied out of
	// (key actions-externals-image), as the hook names it
	// (TETHER_ACTIONS_EXTERNALS_IMAGE or ACTIONS_RUNNER_IMAGE), or
	// ExternalsNone.
	ExternalsImage string
	// ExternalsDir is the externals directory in it (key
	// actions-externals-dir).
	ExternalsDir string
}

// actionsKeys are the keys of a pool for Actions jobs only.
var actionsKeys = []string{"actions-service", "actions-externals-image", "actions-externals-dir"}

// addFlags registers the Actions keys on fs.
func (a *Actions) addFlags(fs *pflag.FlagSet) {
	fs.Var(&a.Services, "actions-service", "for: actions: the `IMAGE` of a service of the jobs, in the workflow's order (repeatable)")
	fs.StringVar(&a.ExternalsImage, "actions-externals-image", ExternalsNone, "for: actions: the image the runner's externals are copied out of, as the hook names it (TETHER_ACTIONS_EXTERNALS_IMAGE, else ACTIONS_RUNNER_IMAGE), or none")
	fs.StringVar(&a.ExternalsDir, "actions-externals-dir", actionspod.DefaultExternalsDir, "for: actions: the externals directory in that image (the hook's TETHER_ACTIONS_EXTERNALS_DIR)")
}

// validate checks the Actions keys as the hook checks its settings.
func (a *Actions) validate() error {
	for i, s := range a.Services {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("actions-service %d is empty: want a service's image", i+1)
		}
	}
	if a.ExternalsImage == "" {
		return errors.New("actions-externals-image is empty: name the image the hook copies the runner's externals out of, or none")
	}
	if !strings.HasPrefix(a.ExternalsDir, "/") {
		return fmt.Errorf("actions-externals-dir %q must be an absolute path", a.ExternalsDir)
	}
	return nil
}

// shape returns the hook's shape of the pool's pods (p's image and pod
// settings, the Actions keys).
func (a *Actions) shape(p *Pool, namespace string) actionspod.Shape {
	sh := actionspod.Shape{Namespace: namespace, Image: p.Image, HelperImage: p.HelperImage,
		PullPolicy: corev1.PullPolicy(p.PullPolicy), Pod: p.Pod}
	for _, img := range a.Services {
		sh.Services = append(sh.Services, actionspod.Service{Image: img})
	}
	if a.ExternalsImage != ExternalsNone {
		sh.Externals = &actionspod.Externals{Image: a.ExternalsImage, Dir: a.ExternalsDir}
	}
	return sh
}

// Package settings holds the settings every Tether job pod takes, whatever
// starts the job: resources, placement (node selector, tolerations,
// schedule timeout), image pull secrets, service account, service
// sidecars, volumes, labels and annotations, a pod patch, the termination
// grace, how the shim reaches the build container, and pod security.
// `tether run`, `tether gitlab` and a CI runner that imports
// github.com/tether-ci/tether/client share them, with the same names and
// the same messages.
//
// Each setting can be given three ways, mixed freely:
//
//   - in Go: fill in a Pod (and a Security) directly;
//   - as flags: AddFlags registers them on a spf13/pflag FlagSet, named as
//     `tether run`'s flags (--cpu, --toleration, --volume, …);
//   - in a YAML file: ApplyFile (or Pod.Complete, for the file named by
//     --config) sets every flag of a FlagSet from a file whose keys are the
//     long flag names; flags given on the command line win.
//
// The steps follow kubectl's options pattern:
//
//	var pod settings.Pod
//	pod.AddFlags(fs)              // register the flags
//	err := fs.Parse(args)         // the command line
//	err = pod.Complete(fs)        // the config file fills in what the command line left unset
//	err = pod.Validate()          // every error names its flag: "--cpu \"lots\" is not a quantity …"
//	err = pod.ApplyTo(&spec)      // into a kube.Spec for client/kube
//
// An integration adds its own settings on top by embedding Pod in its own
// settings struct and registering its own flags on the same FlagSet: the
// config file then covers both.
//
// # What is public
//
// Pod, Security, Resources, Grace and StringList are public so that a
// runner can fill them in Go or parse them from its own flags and still
// give its users Tether's names and messages; ApplyFile and ConfigFlag
// because a config file of flag values is how every Tether command is
// configured. The parsers of the single values (volumes, tolerations,
// K=V lists) stay unexported: their syntax is the flags', reachable
// through Pod, and may grow.
//
// None of these settings applies to the docker backend (client/docker):
// a container has no pod to shape, and a command that offers other
// backends refuses them there (Pod.IsSet, Security.IsSet).
//
// # Imports
//
// This package owns the settings and their translation into kube.Spec. It
// imports client/kube (and of the project's packages only what that
// imports), the Kubernetes API types, pflag and a YAML parser; never a
// command (cmd/...), an integration (the GitLab driver
// or any later one) or the shim: integrations import settings, never the
// reverse (deps_test.go checks it).
package settings

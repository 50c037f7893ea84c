package actions

import (
	"fmt"
	"strings"
)

// Setting is one environment variable the hook reads, for its help.
type Setting struct {
	// Name is the variable.
	Name string
	// Help says what it sets and its default.
	Help string
}

// SettingsTable lists every variable the hook reads, its own and the runner's,
// in the order `tether actions --help` shows them (SettingsHelp).
var SettingsTable = []Setting{
	{EnvNamespace, "namespace of the job pods (default " + EnvRunnerNamespace + ", else the kubeconfig's or the service account's)"},
	{EnvKubeconfig, "kubeconfig file (default the usual chain)"},
	{EnvHelperImage, "image that carries tether-shim"},
	{EnvPullPolicy, "Always, IfNotPresent or Never"},
	{EnvJobTimeout, "job pod's deadline (default 6h)"},
	{EnvIdleTimeout, "job pod ends after this long without a step (default 30m; 0 never)"},
	{EnvReconnectTimeout, "how long a step may stay unreachable before it fails as unknown (default 2m)"},
	{EnvServiceAccount, "job pod's service account"},
	{EnvNodeSelector, "key=value,... for the job pod's nodes"},
	{EnvConfig, "YAML file of tether run's pod settings (memory, toleration, volume, pod-patch, ...)"},
	{EnvExternalsImage, "image the runner's externals (node for JavaScript actions) are copied out of (default " + EnvRunnerImage + ", else the runner pod's image; " + ExternalsOff + ": none)"},
	{EnvExternalsDir, "the externals directory in that image (default " + DefaultExternalsDir + ")"},
	{EnvCopyLimit, "most bytes prepare_job copies from the runner's workspace, _tool and _github_home into the job pod (default 1Gi)"},
	{EnvPool, "a pool of warm pods (tether pool serve, for: actions): prepare_job claims one when its image, services and settings are the job's, else creates the pod"},
	{EnvDebug, "1: diagnostics on stderr"},
	{EnvRunnerPodName, "the runner's pod: owner of the job pods"},
	{EnvRunnerNamespace, "the job pods' namespace when " + EnvNamespace + " is not set"},
	{EnvRunnerImage, "the runner's image: the externals' default image"},
	{EnvPrepareTimeout, "bound on the pod's start (600)"},
	{EnvHookTemplate, "PodTemplateSpec YAML file merged into the job pod (wins over the settings and the workflow's options:)"},
}

// SettingsHelp is SettingsTable as the help's text: each variable and,
// wrapped beside it, its help.
func SettingsHelp() string {
	const col, width = 34, 78
	var b strings.Builder
	for _, s := range SettingsTable {
		line := "  " + s.Name
		if len(line) >= col {
			b.WriteString(line + "\n")
			line = ""
		}
		for _, word := range strings.Fields(s.Help) {
			if len(line) < col {
				line += strings.Repeat(" ", col-len(line))
			} else if len(line)+1+len(word) > width {
				b.WriteString(line + "\n")
				line = strings.Repeat(" ", col)
			} else {
				line += " "
			}
			line += word
		}
		fmt.Fprintln(&b, line)
	}
	return b.String()
}

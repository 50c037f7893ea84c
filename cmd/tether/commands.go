package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/integration/gitlab"
	"github.com/tether-ci/tether/internal/gccmd"
	"github.com/tether-ci/tether/internal/runcmd"
	"github.com/tether-ci/tether/internal/version"
	"github.com/tether-ci/tether/protocol"
)

// command is one row of tether's command table: the usage, `tether help`,
// the dispatch and the shell completion all come from it. A new command
// is one row in commands.
type command struct {
	// name is the word that selects it; aliases select it too.
	name    string
	aliases []string
	// synopsis follows "tether " in the usage; summary says what it does.
	synopsis, summary string
	// run runs it with the arguments after its name.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// help prints its help (`tether help NAME`); nil runs it with --help.
	help func(ctx context.Context, stdout, stderr io.Writer) int
	// flags is its FlagSet, for completion (nil: none).
	flags func() *pflag.FlagSet
	// words are what completion offers as its first argument.
	words []string
}

// gitlabCommands are the subcommands of `tether gitlab`.
var gitlabCommands = []string{"config", "prepare", "run", "cleanup"}

// poolCommands are the subcommands of `tether pool`.
var poolCommands = []string{"check", "serve", "status"}

// commands is tether's command table, in the usage's order.
func commands() []command {
	return []command{
		{name: "run", synopsis: "run [flags] SCRIPT...", summary: "run a job (local child process, Kubernetes pod or container)",
			run: runCmd, flags: func() *pflag.FlagSet { return runcmd.NewFlagSet(&runcmd.Flags{}) }},
		{name: "attach", synopsis: "attach [flags] POD", summary: "follow a job from a new process (runner restarted)",
			run: attachCmd, flags: func() *pflag.FlagSet { return newAttachFlagSet(&attachFlags{}) }},
		{name: "gc", synopsis: "gc [flags]", summary: "delete expired pods and orphaned resources",
			run: gcCmd, flags: func() *pflag.FlagSet { return gccmd.NewFlagSet(&gccmd.Options{}) }},
		{name: "pool", synopsis: "pool check|serve|status", summary: "warm pods: validate a pools file, keep the pools, show them",
			run: poolCmd, words: poolCommands},
		{name: "gitlab", synopsis: "gitlab config|prepare|run SCRIPT STAGE|cleanup", summary: "the GitLab Runner Custom executor driver",
			run: gitlabCmd, flags: func() *pflag.FlagSet { return gitlab.NewFlagSet(&gitlab.Settings{}) }, words: gitlabCommands},
		{name: "actions", synopsis: "actions", summary: "the GitHub Actions runner container hook", run: actionsCmd},
		{name: "completion", synopsis: "completion bash|zsh|fish", summary: "print a shell completion script",
			run: completionCmd, words: []string{"bash", "zsh", "fish"}},
		{name: "version", aliases: []string{"--version", "-version"}, synopsis: "version", summary: "print the version",
			run: func(_ context.Context, _ []string, stdout, _ io.Writer) int {
				fmt.Fprintf(stdout, "tether %s (protocol %d)\n", version.Get(), protocol.Version)
				return 0
			}, help: generalHelp},
		{name: "help", aliases: []string{"--help", "-help", "-h"}, synopsis: "help [COMMAND]", summary: "show help",
			run: helpCmd, help: generalHelp},
	}
}

// findCommand is the command name selects, nil for none.
func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return &c
		}
		for _, a := range c.aliases {
			if a == name {
				return &c
			}
		}
	}
	return nil
}

// commandNames are the commands' names, in the table's order.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// usageText is tether's usage: its commands from the table.
func usageText() string {
	var b strings.Builder
	b.WriteString("tether runs CI job scripts in a tether-shim and streams their output byte-exact.\n\nUsage:\n")
	for _, c := range commands() {
		if len(c.synopsis) > 24 {
			fmt.Fprintf(&b, "  tether %s\n  %33s%s\n", c.synopsis, "", c.summary)
			continue
		}
		fmt.Fprintf(&b, "  tether %-24s  %s\n", c.synopsis, c.summary)
	}
	b.WriteString(`
Examples:
  tether run --local build.sh test.sh --after cleanup.sh
  tether run --image alpine:3 -n ci build.sh

Run 'tether help COMMAND' (or 'tether COMMAND --help') for a command's flags.
Installed as kubectl-tether on PATH, tether is the kubectl plugin 'kubectl tether'.
`)
	return b.String()
}

// generalHelp prints the usage and the exit codes.
func generalHelp(ctx context.Context, stdout, _ io.Writer) int {
	fmt.Fprint(stdout, progText(ctx, usageText()+exitCodesHelp))
	return 0
}

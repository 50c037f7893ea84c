// Command harness is `make bench`: it measures Tether against its baselines
// side by side in one run on one machine (relay throughput, partial-output
// latency, per-script overhead, shim memory, and the real node when one is
// up), prints a table and writes bench/results.md.
//
// It is run by scripts/bench.sh after `make build`; it finds bin/tether-shim
// and bin/tether below the repository root (-repo). Settings come from the
// environment so `make bench` needs no arguments:
//
//	BENCH_BYTES        relay size per run                  (default 1 GiB)
//	BENCH_BIG_BYTES    relay size of the memory run        (default 10 GiB)
//	BENCH_REPEAT       runs per measurement (median used)  (default 3)
//	BENCH_LAT_SAMPLES  latency samples per path            (default 200; GitLab emulation: 1/5 of it, at least 10)
//	BENCH_SCRIPTS      scripts per overhead run            (default 1000)
//	BENCH_OVERHEAD_ROUNDS rounds of the overhead section, variants interleaved (default 7)
//	BENCH_NODE_JOBS    concurrent jobs on the real node    (default 100)
//	BENCH_SHELL        shell for scripts and baselines     (default /bin/sh)
//	BENCH_ONLY         comma list of sections to run: cli,relay,latency,overhead,memory,node,gitlab,pool,jobpath,actions,actions-prepare (default all)
//	BENCH_RELAY_PATHS  comma list of relay paths besides the cat baseline: tether,tether-memory,gitlab (default all)
//	BENCH_OUT          results file                        (default bench/results.md; "-" for none)
//	BENCH_GOBENCH      file with `go test -bench` output to include in the results
//	TETHER_E2E_DIR     the e2e node's state directory      (default /var/tmp/tether-e2e)
//	TETHER_IMAGE_TAG   tag of the node's images (build-images.sh's; default dev)
//	BENCH_HEAPPROFILE  kube-jobs/kube-bare: write the heap profile at the peak of RssAnon here
//	BENCH_SHIM         shim binary instead of bin/tether-shim (e.g. bench/shimprof, to profile it)
//	BENCH_CPUPROFILE   write the harness's own CPU profile (client side) to this file
//	BENCH_GITLAB_AGENT_BEFORE  gitlab: another tether binary (an earlier build) whose stage agent is timed beside this build's, stage for stage
//
// The harness is also its own GitLab read-logs emulation: invoked as
// `harness read-logs PATH` it follows PATH the way GitLab Runner's helper
// does (see gitlab.go); `harness kube-jobs KUBECONFIG N` runs N jobs at
// once on a cluster through client/kube (kube.go), in a process of its own
// so its memory can be measured alone (`harness kube-jobs-held` the same
// with every job attached at once); `harness kube-bare KUBECONFIG N`
// is their floor: the same scripts in N bare pods (kube_floor.go).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == readLogsCommand {
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: harness read-logs PATH")
			os.Exit(2)
		}
		if err := readLogs(os.Args[2], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "read-logs:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && (os.Args[1] == kubeJobsCommand || os.Args[1] == kubeHeldCommand || os.Args[1] == kubeBareCommand) {
		n, err := strconv.Atoi(os.Args[len(os.Args)-1])
		if len(os.Args) != 4 || err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "usage: harness %s KUBECONFIG N\n", os.Args[1])
			os.Exit(2)
		}
		jobs := kubeJobs
		if os.Args[1] == kubeBareCommand {
			jobs = kubeBare
		}
		opts := fleetOptions{images: imagesTagged(os.Getenv), heapProfile: os.Getenv("BENCH_HEAPPROFILE")}
		if os.Args[1] == kubeHeldCommand {
			opts.hold = heldFor
		}
		if opts.heapProfile != "" {
			runtime.MemProfileRate = 4096 // every allocation's site, near enough
		}
		if err := jobs(ctx, os.Args[2], opts, n, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
			os.Exit(1)
		}
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := loadConfig(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(2)
	}
	if err := run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

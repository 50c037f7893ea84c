// Command gitlab-runner-helper is a test double of GitLab Runner's helper
// binary (the `gitlab-runner-helper` of GitLab's helper image), for the
// GitLab driver's end-to-end tests. It implements the subcommands the
// runner's generated stage scripts call, following the runner's source
// (gitlab-org/gitlab-runner v18.1):
//
//   - --version: the guard the shell writer puts around every call
//     (shells/abstract.go, guardRunnerCommand) only needs exit code 0.
//   - cache-extractor: commands/helpers/cache_extractor.go — extracts the
//     local --file zip into the working directory; a missing file is
//     "WARNING: Cache file does not exist" and exit 1.
//   - cache-archiver: commands/helpers/cache_archiver.go and
//     file_archiver.go — zips the --path globs (and --untracked) of the
//     working directory into --file, stored locally.
//   - artifacts-uploader: commands/helpers/artifacts_uploader.go and
//     network/gitlab.go (UploadRawArtifacts, determineUploadState) — POSTs a
//     zip as the multipart field "file" to <url>/api/v4/jobs/<id>/artifacts
//     with the JOB-TOKEN header; 201 is success, 403 and 413 fail at once,
//     503 is retried up to 6 tries, other statuses up to 3.
//   - artifacts-downloader: commands/helpers/artifacts_downloader.go and
//     network/gitlab.go (DownloadArtifacts) — GETs the same URL and extracts
//     the zip; 404, 401 and 403 fail at once, other failures are retried.
//
// Messages use the runner's log formatter's prefixes (WARNING:, ERROR:,
// FATAL:) and a fatal error exits 1, as logrus.Fatalln does. Remote caches
// (--url, --gocloud-url of the cache commands) and archive formats other
// than zip are not implemented: asking for them is a fatal error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// version is what --version prints (the runner prints its version block).
const version = "Version:      18.1.3-tether-test-double\nGit revision: none\n"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout))
}

// run runs one invocation and returns the process's exit code.
func run(ctx context.Context, args []string, out io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(out, "usage: gitlab-runner-helper --version | cache-extractor | cache-archiver | artifacts-uploader | artifacts-downloader [flags]")
		return 1
	}
	l := &logger{w: out}
	var err error
	switch args[0] {
	case "--version", "-v", "version":
		fmt.Fprint(out, version)
		return 0
	case "cache-extractor":
		err = cacheExtractor(ctx, l, args[1:])
	case "cache-archiver":
		err = cacheArchiver(ctx, l, args[1:])
	case "artifacts-uploader":
		err = artifactsUploader(ctx, l, args[1:])
	case "artifacts-downloader":
		err = artifactsDownloader(ctx, l, args[1:])
	default:
		l.fatal(fmt.Errorf("unknown command %q", args[0]))
		return 1
	}
	if err != nil {
		if !errors.Is(err, errExitQuietly) {
			l.fatal(err)
		}
		return 1
	}
	return 0
}

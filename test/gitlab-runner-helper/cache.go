package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// errRemoteCache is asking for a remote cache, which the double lacks.
var errRemoteCache = errors.New("remote caches (--url, --gocloud-url) are not implemented by this test double")

// cacheExtractor is `cache-extractor --file F --timeout M`: extract the
// local cache archive F into the working directory.
func cacheExtractor(ctx context.Context, l *logger, args []string) error {
	fs := newFlagSet("cache-extractor")
	file := fs.String("file", "", "the cache archive")
	url := fs.String("url", "", "remote cache URL")
	goCloud := fs.String("gocloud-url", "", "Go Cloud URL")
	fs.Int("timeout", 0, "minutes")
	fs.String("env-file", "", "environment file")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("cache-extractor: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return runnerMessage("Unable to get working directory")
	}
	if *file == "" {
		l.warning("Missing cache file")
		return errExitQuietly
	}
	if *url != "" || *goCloud != "" {
		return errRemoteCache
	}
	l.info("No URL provided, cache will not be downloaded from shared cache server. Instead a local version of cache will be extracted.")
	if _, err := os.Stat(*file); errors.Is(err, os.ErrNotExist) {
		l.warning("Cache file does not exist")
		return errExitQuietly
	}
	return extractZip(ctx, l, *file, wd)
}

// cacheArchiver is `cache-archiver --file F --timeout M --path P...
// [--untracked]`: zip what the paths name into F (written to a temporary
// file beside it, then renamed).
func cacheArchiver(ctx context.Context, l *logger, args []string) error {
	fs := newFlagSet("cache-archiver")
	file := fs.String("file", "", "the cache archive")
	url := fs.String("url", "", "remote cache URL")
	goCloud := fs.String("gocloud-url", "", "Go Cloud URL")
	format := fs.String("compression-format", os.Getenv("CACHE_COMPRESSION_FORMAT"), "zip or tarzstd")
	fs.Int("timeout", 0, "minutes")
	fs.Int64("max-uploaded-archive-size", 0, "bytes")
	fs.String("env-file", "", "environment file")
	fs.String("compression-level", "", "level")
	var paths, exclude, headers stringList
	fs.Var(&paths, "path", "paths to archive")
	fs.Var(&exclude, "exclude", "paths to exclude")
	fs.Var(&headers, "header", "upload headers")
	untracked := fs.Bool("untracked", false, "add git's untracked files")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("cache-archiver: %w", err)
	}
	if *file == "" {
		return runnerMessage("Missing --file")
	}
	if *format != "" && *format != "zip" {
		return fmt.Errorf("compression format %q is not implemented by this test double (zip only)", *format)
	}
	wd, err := os.Getwd()
	if err != nil {
		return runnerMessage("Unable to get working directory")
	}
	set, err := enumerate(l, wd, paths, *untracked, exclude)
	if err != nil {
		return err
	}
	if !set.changedSince(l, *file) {
		l.info("Archive is up to date!")
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(*file), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(*file), "archive_")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := writeZip(ctx, tmp, set); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *file); err != nil {
		return err
	}
	if *url != "" || *goCloud != "" {
		return errRemoteCache
	}
	l.info("No URL provided, cache will not be uploaded to shared cache server. Cache will be stored only locally.")
	return nil
}

// errExitQuietly ends the process with exit code 1 after a line already
// written (the runner's warningln: logrus.Warningln, then logrus.Exit(1)).
var errExitQuietly = errors.New("exit 1")

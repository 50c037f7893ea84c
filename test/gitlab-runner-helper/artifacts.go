package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The uploader's errors (commands/helpers/artifacts_uploader.go).
var (
	errTooLarge           = errors.New("too large")
	errServiceUnavailable = errors.New("service unavailable")
)

// retryable marks an error the runner retries (its retryableErr).
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// The uploader's tries: defaultTries, serviceUnavailableTries.
const (
	uploadTries            = 3
	uploadUnavailableTries = 6
	// downloadRetries is the downloader's retryHelper.Retry.
	downloadRetries = 2
)

// retryWait is the pause between tries (the downloader's RetryTime; the
// uploader's backoff starts there too).
const retryWait = time.Second

// jobCredentials are the runner's common.JobCredentials flags.
type jobCredentials struct {
	url   string
	token string
	id    int64
}

func (c *jobCredentials) register(fs interface {
	StringVar(*string, string, string, string)
	Int64Var(*int64, string, int64, string)
}) {
	fs.StringVar(&c.url, "url", "", "GitLab instance URL")
	fs.StringVar(&c.token, "token", "", "job token")
	fs.Int64Var(&c.id, "id", 0, "job ID")
}

// artifactsURL is the API endpoint of network/gitlab.go: jobs/ID/artifacts.
func (c *jobCredentials) artifactsURL(q url.Values) string {
	u := strings.TrimRight(c.url, "/") + "/api/v4/" + fmt.Sprintf("jobs/%d/artifacts", c.id)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// artifactsUploader is `artifacts-uploader --url U --token T --id N --path
// P... [--untracked] [--exclude E] [--name N] [--expire-in D]
// [--artifact-format zip] [--artifact-type archive]`.
func artifactsUploader(ctx context.Context, l *logger, args []string) error {
	fs := newFlagSet("artifacts-uploader")
	var creds jobCredentials
	creds.register(fs)
	var paths, exclude stringList
	fs.Var(&paths, "path", "paths to archive")
	fs.Var(&exclude, "exclude", "paths to exclude")
	untracked := fs.Bool("untracked", false, "add git's untracked files")
	name := fs.String("name", "artifacts", "the archive's name")
	expireIn := fs.String("expire-in", "", "expiry")
	format := fs.String("artifact-format", "", "format")
	typ := fs.String("artifact-type", "", "type")
	fs.String("compression-level", "", "level")
	fs.Bool("ci-debug-trace", false, "debug trace")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("artifacts-uploader: %w", err)
	}
	if creds.url == "" || creds.token == "" {
		return runnerMessage("Missing runner credentials")
	}
	if creds.id <= 0 {
		return runnerMessage("Missing build ID")
	}
	if *format != "" && *format != "zip" {
		return fmt.Errorf("artifact format %q is not implemented by this test double (zip only)", *format)
	}
	wd, err := os.Getwd()
	if err != nil {
		return runnerMessage("Unable to get working directory")
	}
	set, err := enumerate(l, wd, paths, *untracked, exclude)
	if err != nil {
		return err
	}
	if len(set.files) == 0 {
		l.error("No files to upload")
		return nil
	}
	base := filepath.Base(*name)
	if base == "" || base == "." {
		base = "default"
	}
	q := url.Values{}
	if *expireIn != "" {
		q.Set("expire_in", *expireIn)
	}
	if *format != "" {
		q.Set("artifact_format", *format)
	}
	if *typ != "" {
		q.Set("artifact_type", *typ)
	}
	prefix := "Uploading artifacts to coordinator..."
	if *typ != "" {
		prefix = fmt.Sprintf("Uploading artifacts as %q to coordinator...", *typ)
	}
	for try := 1; ; try++ {
		err = uploadOnce(ctx, l, &creds, q, base+".zip", set, prefix)
		var r retryable
		if !errors.As(err, &r) {
			return err
		}
		max := uploadTries
		if errors.Is(err, errServiceUnavailable) {
			max = uploadUnavailableTries
		}
		if try >= max {
			return err
		}
		l.warning("Retrying...                                         context=artifacts-uploader error=%v", err)
		time.Sleep(retryWait)
	}
}

// uploadOnce is one POST of the archive as a multipart form (field "file").
func uploadOnce(ctx context.Context, l *logger, creds *jobCredentials, q url.Values, filename string, set *fileSet, prefix string) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", filename)
		if err == nil {
			err = writeZip(ctx, part, set)
		}
		if err == nil {
			err = mw.Close()
		}
		_ = pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, creds.artifactsURL(q), pr)
	if err != nil {
		_ = pr.Close()
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("JOB-TOKEN", creds.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		l.error("%s error                                  error=%v id=%d", prefix, err, creds.id)
		return retryable{os.ErrInvalid}
	}
	defer func() { _ = res.Body.Close() }()
	status := responseMessage(res)
	fields := fmt.Sprintf("id=%d responseStatus=%s", creds.id, res.Status)
	switch res.StatusCode {
	case http.StatusCreated:
		l.info("%s %s  %s", prefix, status, fields)
		return nil
	case http.StatusTemporaryRedirect:
		loc, err := url.Parse(res.Header.Get("Location"))
		if err != nil || res.Header.Get("Location") == "" {
			l.error("%s %s empty location  %s status=%d", prefix, status, fields, res.StatusCode)
			return retryable{os.ErrInvalid}
		}
		loc.RawQuery, loc.Path = "", ""
		creds.url = loc.String()
		l.info("Upload request redirected                          location=%s new-url=%s", res.Header.Get("Location"), creds.url)
		return retryable{errors.New("request redirected")}
	case http.StatusForbidden:
		l.error("%s %s  %s status=%d", prefix, status, fields, res.StatusCode)
		return os.ErrPermission
	case http.StatusRequestEntityTooLarge:
		l.error("%s %s  %s status=%d", prefix, status, fields, res.StatusCode)
		return errTooLarge
	case http.StatusServiceUnavailable:
		l.error("%s %s  %s status=%d", prefix, status, fields, res.StatusCode)
		return retryable{errServiceUnavailable}
	default:
		l.warning("%s %s  %s status=%d", prefix, status, fields, res.StatusCode)
		return retryable{os.ErrInvalid}
	}
}

// responseMessage is the API's {"message": ...} when it sent one, else the
// HTTP status line.
func responseMessage(res *http.Response) string {
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		return res.Status
	}
	var body struct {
		Message any `json:"message"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(&body); err != nil || body.Message == nil {
		return res.Status
	}
	if msg := fmt.Sprint(body.Message); msg != res.Status {
		return fmt.Sprintf("%s (%s)", res.Status, msg)
	}
	return res.Status
}

// artifactsDownloader is `artifacts-downloader --url U --token T --id N`:
// fetch the job's artifacts archive and extract it into the working
// directory.
func artifactsDownloader(ctx context.Context, l *logger, args []string) error {
	fs := newFlagSet("artifacts-downloader")
	var creds jobCredentials
	creds.register(fs)
	staging := fs.String("archiver-staging-dir", os.Getenv("ARCHIVER_STAGING_DIR"), "staging directory")
	fs.Bool("direct-download", false, "direct download")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("artifacts-downloader: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return runnerMessage("Unable to get working directory")
	}
	if creds.url == "" {
		l.warning("Missing URL (--url)")
	}
	if creds.token == "" {
		l.warning("Missing runner credentials (--token)")
	}
	if creds.id <= 0 {
		l.warning("Missing build ID (--id)")
	}
	if creds.id <= 0 || creds.token == "" || creds.url == "" {
		return runnerMessage("Incomplete arguments")
	}
	tmp, err := os.CreateTemp(*staging, "artifacts")
	if err != nil {
		return err
	}
	_ = tmp.Close()
	defer func() { _ = os.Remove(tmp.Name()) }()
	err = downloadOnce(ctx, l, &creds, tmp.Name())
	for retry := 1; retry <= downloadRetries; retry++ {
		var r retryable
		if !errors.As(err, &r) {
			break
		}
		time.Sleep(retryWait)
		l.warning("Retrying...                                         error=%v", err)
		err = downloadOnce(ctx, l, &creds, tmp.Name())
	}
	if err != nil {
		return err
	}
	return extractZip(ctx, l, tmp.Name(), wd)
}

// downloadOnce is one GET of the job's artifacts into file.
func downloadOnce(ctx context.Context, l *logger, creds *jobCredentials, file string) error {
	const prefix = "Downloading artifacts from coordinator..."
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, creds.artifactsURL(nil), nil)
	if err != nil {
		return err
	}
	req.Header.Set("JOB-TOKEN", creds.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		l.error("%s error %v", prefix, err)
		return retryable{os.ErrInvalid}
	}
	defer func() { _ = res.Body.Close() }()
	fields := fmt.Sprintf("id=%d responseStatus=%s", creds.id, res.Status)
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusForbidden:
		l.error("%s forbidden  %s", prefix, fields)
		return os.ErrPermission
	case http.StatusUnauthorized:
		l.error("%s unauthorized  %s", prefix, fields)
		return os.ErrPermission
	case http.StatusNotFound:
		l.error("%s not found  %s", prefix, fields)
		return os.ErrNotExist
	default:
		l.warning("%s failed  %s", prefix, fields)
		return retryable{os.ErrInvalid}
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("creating target file: %w", err)
	}
	_, err = io.Copy(f, res.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.error("%s error  %s error=%v", prefix, fields, err)
		return retryable{os.ErrInvalid}
	}
	l.info("%s ok  %s", prefix, fields)
	return nil
}

package gitlabcoord_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/tether-ci/tether/internal/testing/gitlabcoord"
)

func upload(t *testing.T, c *gitlabcoord.Coordinator, id, token string, data []byte) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "artifacts.zip")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.URL()+"/api/v4/jobs/"+id+"/artifacts?artifact_format=zip", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("JOB-TOKEN", token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func download(t *testing.T, c *gitlabcoord.Coordinator, id, token string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, c.URL()+"/api/v4/jobs/"+id+"/artifacts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("JOB-TOKEN", token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// The coordinator answers as GitLab's job artifacts API: 201 for an
// upload with the job's token, the same bytes back on download, 403 for a
// wrong token, 404 for a job without artifacts, and the status it was told
// to refuse with ({"message": …} bodies).
func TestCoordinator(t *testing.T) {
	c, err := gitlabcoord.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	c.AddJob(1, "one")
	c.AddJob(2, "two")
	data := []byte("PK\x03\x04 not really a zip \x00\xff")

	if res := upload(t, c, "1", "wrong", data); res.StatusCode != http.StatusForbidden {
		t.Fatalf("upload with a wrong token: %s", res.Status)
	}
	if res := upload(t, c, "1", "one", data); res.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %s", res.Status)
	}
	u, ok := c.Uploaded(1)
	if !ok || u.Filename != "artifacts.zip" || u.Query["artifact_format"] != "zip" || !bytes.Equal(u.Data, data) {
		t.Fatalf("stored %+v, %v", u, ok)
	}
	if res, b := download(t, c, "1", "one"); res.StatusCode != http.StatusOK || !bytes.Equal(b, data) {
		t.Fatalf("download: %s, %q", res.Status, b)
	}
	if res, _ := download(t, c, "1", "two"); res.StatusCode != http.StatusForbidden {
		t.Fatalf("download with another job's token: %s", res.Status)
	}
	res, b := download(t, c, "2", "two")
	var msg struct{ Message string }
	if res.StatusCode != http.StatusNotFound || json.Unmarshal(b, &msg) != nil || msg.Message == "" {
		t.Fatalf("download of a job without artifacts: %s, %q", res.Status, b)
	}

	c.Refuse(2, http.StatusRequestEntityTooLarge)
	if res := upload(t, c, "2", "two", data); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("refused upload: %s", res.Status)
	}
	if _, ok := c.Uploaded(2); ok || c.UploadTries(2) != 1 || c.UploadTries(1) != 1 {
		t.Fatalf("after a refused upload: stored %v, tries %d and %d", ok, c.UploadTries(2), c.UploadTries(1))
	}
}

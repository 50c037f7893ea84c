// Package gitlabcoord is a test stand-in for the part of GitLab's API that
// gitlab-runner-helper's artifact commands call: POST and GET
// /api/v4/jobs/:id/artifacts, authenticated by the JOB-TOKEN header
// (GitLab's lib/api/ci/runner.rb "jobs/:id/artifacts" endpoints as the
// runner's network/gitlab.go uses them: an upload is a multipart form whose
// "file" field is the archive, answered 201; a download answers 200 with the
// archive, 404 when the job has none, 403 for a wrong token). It listens on
// 127.0.0.1 at a random port; a test registers each job's token, reads what
// was uploaded and can make it refuse a job's upload with a status.
package gitlabcoord

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// Upload is one stored artifacts archive.
type Upload struct {
	// Filename is the form file's name (artifacts.zip).
	Filename string
	// Query is the request's query (artifact_format, artifact_type, expire_in).
	Query map[string]string
	// Data is the archive's bytes.
	Data []byte
}

// Coordinator is the HTTP server; its zero value is not usable: call Start.
type Coordinator struct {
	srv *http.Server
	url string

	mu      sync.Mutex
	tokens  map[int64]string
	uploads map[int64]Upload
	refuse  map[int64]int
	tries   map[int64]int
}

// Start listens on 127.0.0.1 at a random port and serves until Close.
func Start() (*Coordinator, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gitlabcoord: listen on 127.0.0.1: %w", err)
	}
	c := &Coordinator{
		url:     "http://" + ln.Addr().String(),
		tokens:  map[int64]string{},
		uploads: map[int64]Upload{},
		refuse:  map[int64]int{},
		tries:   map[int64]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v4/jobs/{id}/artifacts", c.upload)
	mux.HandleFunc("GET /api/v4/jobs/{id}/artifacts", c.download)
	c.srv = &http.Server{Handler: mux}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// URL is the instance URL the runner passes as --url (no trailing slash).
func (c *Coordinator) URL() string { return c.url }

// Close stops the server.
func (c *Coordinator) Close() error { return c.srv.Close() }

// AddJob registers a job and the token its requests must carry.
func (c *Coordinator) AddJob(id int64, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens[id] = token
}

// Refuse makes every upload of job id answer status (403 or 413 as GitLab
// does for a bad token or an archive over the size limit).
func (c *Coordinator) Refuse(id int64, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse[id] = status
}

// Uploaded returns job id's stored archive, if any.
func (c *Coordinator) Uploaded(id int64) (Upload, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.uploads[id]
	return u, ok
}

// UploadTries is how many upload requests job id made.
func (c *Coordinator) UploadTries(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tries[id]
}

// Put stores an archive for job id, as if it had uploaded it.
func (c *Coordinator) Put(id int64, u Upload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uploads[id] = u
}

// authorize returns the job ID when the request's JOB-TOKEN is the job's,
// else writes GitLab's answer and returns false.
func (c *Coordinator) authorize(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeMessage(w, http.StatusNotFound, "404 Not found")
		return 0, false
	}
	c.mu.Lock()
	token, ok := c.tokens[id]
	c.mu.Unlock()
	if !ok || r.Header.Get("JOB-TOKEN") != token {
		writeMessage(w, http.StatusForbidden, "403 Forbidden")
		return 0, false
	}
	return id, true
}

func (c *Coordinator) upload(w http.ResponseWriter, r *http.Request) {
	id, ok := c.authorize(w, r)
	if !ok {
		return
	}
	c.mu.Lock()
	c.tries[id]++
	refuse := c.refuse[id]
	c.mu.Unlock()
	if refuse != 0 {
		_, _ = io.Copy(io.Discard, r.Body)
		writeMessage(w, refuse, http.StatusText(refuse))
		return
	}
	f, fh, err := r.FormFile("file")
	if err != nil {
		writeMessage(w, http.StatusBadRequest, "400 (Bad request) \"file\" not given")
		return
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(f)
	if err != nil {
		writeMessage(w, http.StatusBadRequest, err.Error())
		return
	}
	q := map[string]string{}
	for k := range r.URL.Query() {
		q[k] = r.URL.Query().Get(k)
	}
	c.Put(id, Upload{Filename: fh.Filename, Query: q, Data: data})
	writeMessage(w, http.StatusCreated, "201 Created")
}

func (c *Coordinator) download(w http.ResponseWriter, r *http.Request) {
	id, ok := c.authorize(w, r)
	if !ok {
		return
	}
	u, ok := c.Uploaded(id)
	if !ok {
		writeMessage(w, http.StatusNotFound, "404 Not found")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", u.Filename))
	w.Header().Set("Content-Length", strconv.Itoa(len(u.Data)))
	_, _ = w.Write(u.Data)
}

// writeMessage answers as GitLab's API does: {"message": ...}.
func writeMessage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

package main

// An emulation of GitLab Runner's Kubernetes attach path, the peer
// Tether's performance targets compare against. It is not GitLab's code: it reproduces the
// parts that decide its speed, from GitLab Runner's sources:
//   - the step script carries a trap that prints
//     {"command_exit_code": N, "script": "..."} when it ends;
//   - the build container's shell runs it as `sh SCRIPT 2>&1 | tee -a LOG`;
//   - the helper's `gitlab-runner-helper read-logs` follows LOG through a
//     16 KiB bufio.Reader, writes every line (or 16 KiB piece, or partial
//     line at EOF, with a newline added) as "OFFSET LINE\n" in one write
//     each, and sleeps 500 ms whenever it reaches the end of the file;
//   - the runner parses those lines and stops at the exit-code line.
// Here tee's stdout goes to /dev/null (in a pod it is the container log),
// and the follower formats its lines without fmt (cheaper than GitLab's
// fmt.Sprintf + fmt.Fprint): both favour the emulation.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// readLogsCommand is the harness's argument that makes it the follower.
const readLogsCommand = "read-logs"

// readLogsPoll is how long GitLab's read-logs sleeps at the end of the file.
const readLogsPoll = 500 * time.Millisecond

// readLogsBuf is GitLab's read-logs reader buffer size.
const readLogsBuf = 16 << 10

// gitlabMarker starts the exit-code line the trap prints.
const gitlabMarker = `{"command_exit_code": `

// gitlabTrap is the head of every emulated GitLab step script.
const gitlabTrap = `gitlab_trap() {
  command_exit_code=$?
  printf '{"command_exit_code": %s, "script": "%s"}\n' "$command_exit_code" "$0"
  exit 0
}
trap gitlab_trap EXIT
`

// readLogs follows path like GitLab's read-logs helper until it is killed.
func readLogs(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open the log to follow: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, readLogsBuf)
	var offset int64
	line := make([]byte, 0, readLogsBuf+32)
	for {
		buf, err := r.ReadSlice('\n')
		if len(buf) > 0 {
			offset += int64(len(buf))
			line = appendLogLine(line[:0], offset, buf)
			if _, werr := w.Write(line); werr != nil {
				return fmt.Errorf("write the log stream: %w", werr)
			}
		}
		switch {
		case err == io.EOF:
			time.Sleep(readLogsPoll)
		case err != nil && !errors.Is(err, bufio.ErrBufferFull):
			return fmt.Errorf("read the log: %w", err)
		}
	}
}

// appendLogLine formats one read-logs line: the offset after piece, a
// space, the piece, and a newline unless the piece ends in one.
func appendLogLine(dst []byte, offset int64, piece []byte) []byte {
	dst = strconv.AppendInt(dst, offset, 10)
	dst = append(dst, ' ')
	dst = append(dst, piece...)
	if piece[len(piece)-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst
}

// logParser is the runner's side: it turns read-logs lines back into the
// script's bytes and finds the exit-code line.
type logParser struct {
	out     io.Writer
	prev    int64  // offset after the previous piece
	pend    []byte // held-back tail that may start the marker
	status  []byte // the exit-code line once the marker was seen
	done    bool
	code    int
	scratch []byte
}

// feed consumes one "OFFSET PIECE\n" line. It reports done once the
// exit-code line is complete.
func (p *logParser) feed(line []byte) (bool, error) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || line[len(line)-1] != '\n' {
		return false, fmt.Errorf("read-logs line %q: want \"OFFSET DATA\\n\"", clip(line))
	}
	var off int64
	for _, c := range line[:sp] {
		if c < '0' || c > '9' {
			return false, fmt.Errorf("read-logs line %q: bad offset", clip(line))
		}
		off = off*10 + int64(c-'0')
	}
	content := line[sp+1:]
	n := off - p.prev
	// The piece is content, or content minus the newline read-logs added.
	if n != int64(len(content)) && n != int64(len(content))-1 {
		return false, fmt.Errorf("read-logs line at offset %d: %d bytes for a %d-byte step", off, len(content), n)
	}
	p.prev = off
	data := content[:n]
	if p.status != nil {
		p.status = append(p.status, data...)
		return p.finishStatus()
	}
	p.scratch = append(append(p.scratch[:0], p.pend...), data...)
	joined := p.scratch
	if i := bytes.Index(joined, []byte(gitlabMarker)); i >= 0 {
		if _, err := p.out.Write(joined[:i]); err != nil {
			return false, err
		}
		p.status = append([]byte(nil), joined[i:]...)
		return p.finishStatus()
	}
	keep := markerPrefixLen(joined)
	if _, err := p.out.Write(joined[:len(joined)-keep]); err != nil {
		return false, err
	}
	p.pend = append(p.pend[:0], joined[len(joined)-keep:]...)
	return false, nil
}

// markerPrefixLen returns the length of the longest tail of b that could
// be the start of the exit-code line: those bytes wait for the next piece;
// everything before them is output now.
func markerPrefixLen(b []byte) int {
	for j := max(len(b)-len(gitlabMarker)+1, 0); j < len(b); j++ {
		if b[j] == gitlabMarker[0] && bytes.HasPrefix([]byte(gitlabMarker), b[j:]) {
			return len(b) - j
		}
	}
	return 0
}

func (p *logParser) finishStatus() (bool, error) {
	nl := bytes.IndexByte(p.status, '\n')
	if nl < 0 {
		return false, nil
	}
	rest := p.status[len(gitlabMarker):nl]
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return false, fmt.Errorf("exit-code line %q has no comma", p.status[:nl])
	}
	code, err := strconv.Atoi(string(rest[:end]))
	if err != nil {
		return false, fmt.Errorf("exit-code line %q: %w", p.status[:nl], err)
	}
	p.code, p.done = code, true
	return true, nil
}

// parseReadLogs reads a read-logs stream, writes the script's bytes to out
// and returns the script's exit code from its exit-code line.
func parseReadLogs(r io.Reader, out io.Writer) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	p := &logParser{out: out}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				err = errors.New("the log stream ended before the exit-code line")
			}
			return 0, fmt.Errorf("read the log stream: %w", err)
		}
		done, err := p.feed(line)
		if err != nil {
			return 0, err
		}
		if done {
			return p.code, nil
		}
	}
}

func clip(b []byte) []byte {
	if len(b) > 60 {
		return b[:60]
	}
	return b
}

// gitlabPath is the emulated GitLab attach path: trap-wrapped script |
// tee -a LOG; read-logs follows LOG; the runner side parses its lines.
type gitlabPath struct {
	self, shell string
	ws          *workspace
}

func (gitlabPath) label() string { return "GitLab attach path (emulation)" }

// wrap writes the GitLab step script for script: the trap, then its body.
func (p gitlabPath) wrap(script string) (string, error) {
	body, err := os.ReadFile(script)
	if err != nil {
		return "", fmt.Errorf("read %s to wrap it GitLab-style: %w", script, err)
	}
	wrapped := script + ".gitlab"
	if err := os.WriteFile(wrapped, append([]byte(gitlabTrap), body...), 0o755); err != nil {
		return "", fmt.Errorf("write the GitLab-style script: %w", err)
	}
	return wrapped, nil
}

func (p gitlabPath) run(ctx context.Context, script string, out io.Writer) (outcome, error) {
	wrapped, err := p.wrap(script)
	if err != nil {
		return outcome{}, err
	}
	logPath := p.ws.path("gitlab-output.log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return outcome{}, fmt.Errorf("create the GitLab-style log: %w", err)
	}
	defer os.Remove(logPath)
	start := time.Now()
	cpu0 := selfCPU()

	follower := exec.CommandContext(ctx, p.self, readLogsCommand, logPath)
	follower.Stderr = os.Stderr
	stream, err := follower.StdoutPipe()
	if err != nil {
		return outcome{}, fmt.Errorf("GitLab emulation: %w", err)
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		return outcome{}, fmt.Errorf("GitLab emulation: pipe: %w", err)
	}
	gen := exec.CommandContext(ctx, p.shell, wrapped)
	gen.Stdout, gen.Stderr = sw, sw
	tee := exec.CommandContext(ctx, "tee", "-a", logPath)
	tee.Stdin = sr // stdout nil: /dev/null
	err = startAll(follower, gen, tee)
	sr.Close()
	sw.Close()
	if err != nil {
		return outcome{}, fmt.Errorf("GitLab emulation: %w", err)
	}
	code, parseErr := parseReadLogs(stream, out)
	wall := time.Since(start)
	_ = follower.Process.Kill() // it follows forever, like GitLab's helper
	genErr, teeErr := gen.Wait(), tee.Wait()
	_ = follower.Wait()
	if err := errors.Join(parseErr, genErr, teeErr); err != nil {
		return outcome{}, fmt.Errorf("GitLab emulation of %s: %w", script, err)
	}
	if code != 0 {
		return outcome{}, fmt.Errorf("GitLab emulation of %s: exit code %d", script, code)
	}
	cpu := processCPU(tee.ProcessState) + processCPU(follower.ProcessState) + selfCPU() - cpu0
	return outcome{wall: wall, relayCPU: cpu}, nil
}

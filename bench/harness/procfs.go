package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat times;
// 100 on every Linux architecture Go supports.
const clockTick = 100

// selfCPU returns this process's CPU time so far (user+system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU returns the CPU time of this process's waited-for children.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU returns an exited child's CPU time (user+system).
func processCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// pidCPU returns a running process's own CPU time (user+system, without
// its children's) from /proc/PID/stat.
func pidCPU(pid int) (time.Duration, error) {
	own, _, err := pidCPUs(pid)
	return own, err
}

// pidCPUs returns a running process's own CPU time and that of its
// waited-for children (user+system each) from /proc/PID/stat.
func pidCPUs(pid int) (own, children time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read the CPU time of pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime, stime, cutime and cstime are fields
	// 14 to 17.
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks [4]int64
	for k := range ticks {
		if ticks[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("parse /proc/%d/stat: field %d: %w", pid, 14+k, err)
		}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTick }
	return tick(ticks[0] + ticks[1]), tick(ticks[2] + ticks[3]), nil
}

// memStatus returns VmRSS and VmHWM of pid in bytes.
func memStatus(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read the memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			name string
			dst  *int64
		}{{"VmRSS:", &rss}, {"VmHWM:", &hwm}} {
			if v, ok := strings.CutPrefix(line, k.name); ok {
				n, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if perr != nil {
					return 0, 0, fmt.Errorf("parse %s of pid %d: %w", k.name, pid, perr)
				}
				*k.dst = n << 10
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("read the memory of pid %d: %w", pid, err)
	}
	if rss == 0 && hwm == 0 {
		return 0, 0, fmt.Errorf("pid %d: no VmRSS in /proc/%d/status (a zombie?)", pid, pid)
	}
	return rss, hwm, nil
}

// machine describes where the numbers were measured.
type machine struct {
	cpu      string
	cores    int
	memory   string
	kernel   string
	goVer    string
	loadFrom string // load average at the start
}

func describeMachine(goVersion string) machine {
	m := machine{cpu: "unknown", goVer: goVersion}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				m.cpu = strings.TrimSpace(v)
			case "processor":
				m.cores++
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			m.memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.kernel = strings.TrimSpace(string(out))
	}
	m.loadFrom = loadAverage()
	return m
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// anonRSS returns the process's anonymous resident memory (RssAnon: heap,
// stacks; not the executable's mapped pages) in bytes.
func anonRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read the memory of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse RssAnon of pid %d: %w", pid, err)
			}
			return n << 10, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no RssAnon in /proc/%d/status", pid, pid)
}

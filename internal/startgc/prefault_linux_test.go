package startgc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/tether-ci/tether/internal/contract"
)

// heapProbe is a heap allocation whose mapping the child reports.
var heapProbe *[64]byte

// residentKiB returns the resident size of the mapping that holds addr
// (/proc/self/smaps).
func residentKiB(addr uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			lo, hi, _ := strings.Cut(fields[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= l && uint64(addr) < h
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			return strconv.Atoi(strings.Fields(line)[1])
		}
	}
	return 0, fmt.Errorf("no mapping holds %#x", addr)
}

// The heap's first chunk is resident right after init (one system call
// populated it), and only partly with TETHER_HEAP_PREFAULT=0. On a kernel
// without MADV_POPULATE_WRITE the call fails with EINVAL and the chunk
// stays as the allocations touched it.
func TestPrefaultHeap(t *testing.T) {
	if os.Getenv("STARTGC_PREFAULT_CHILD") == "1" {
		heapProbe = new([64]byte)
		kib, err := residentKiB(uintptr(unsafe.Pointer(heapProbe)))
		if err != nil {
			fmt.Println("error", err)
			return
		}
		supported := !errors.Is(prefaultHeap(), syscall.EINVAL)
		fmt.Println(kib, supported)
		return
	}
	chunkKiB := heapChunk >> 10
	for _, c := range []struct {
		env       string
		populated bool
	}{{"", true}, {contract.HeapPrefaultVar + "=0", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPrefaultHeap$")
		cmd.Env = append(os.Environ(), "STARTGC_PREFAULT_CHILD=1", c.env)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", c.env, err)
		}
		var kib int
		var supported bool
		if _, err := fmt.Sscan(string(out), &kib, &supported); err != nil {
			t.Fatalf("%q: child said %q", c.env, out)
		}
		switch {
		case !supported && kib >= chunkKiB:
			t.Errorf("%q: kernel without MADV_POPULATE_WRITE, yet %d KiB resident", c.env, kib)
		case !supported:
			t.Logf("%q: this kernel has no MADV_POPULATE_WRITE: the heap is faulted in as it is touched (%d KiB resident)", c.env, kib)
		case c.populated && kib < chunkKiB:
			t.Errorf("%q: %d KiB of the heap's first chunk resident after init, want all %d", c.env, kib, chunkKiB)
		case !c.populated && kib >= chunkKiB:
			t.Errorf("%q: %d KiB resident after init: the chunk was populated though prefaulting was off", c.env, kib)
		}
	}
}

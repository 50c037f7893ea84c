//go:build linux

package startgc

import (
	"syscall"
	"unsafe"
)

// populateWrite is Linux's MADV_POPULATE_WRITE (5.14 and later): it
// faults a range's pages in, writable, in one system call.
const populateWrite = 23

// heapChunk is the unit in which Go's runtime maps its heap read-write
// (the page allocator's chunk, 4 MiB, aligned): the chunk that holds the
// first allocations is mapped as a whole before they are made.
const heapChunk = 4 << 20

// firstObject is a heap allocation whose address names the heap's first
// chunk; it is dropped at once.
var firstObject *[64]byte

// prefaultHeap populates the heap's first chunk: the pages a start's
// allocations will touch one by one (each a page fault, and on a virtual
// machine each fault an exit to the hypervisor: 20–60 µs where one system
// call populates the whole 4 MiB in about a millisecond). The tether
// CLI's start fills most of that chunk anyway (its package
// initialisation allocates about 3 MiB), so the resident memory hardly
// grows. It returns the system call's error (EINVAL: a kernel before
// 5.14, which then faults the pages in as they are touched, as always).
func prefaultHeap() error {
	firstObject = new([64]byte)
	base := uintptr(unsafe.Pointer(firstObject)) &^ (heapChunk - 1)
	firstObject = nil
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, base, heapChunk, populateWrite); errno != 0 {
		return errno
	}
	return nil
}

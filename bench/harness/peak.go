package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// memPeak is this process's memory when its anonymous RSS peaked.
type memPeak struct {
	// Anon is the largest RssAnon sampled (heap and stacks, without the
	// executable's mapped pages), in bytes.
	Anon int64 `json:"anon"`
	// Goroutines, HeapInuse, StackInuse and Sys are the Go runtime's
	// figures at that sample (HeapInuse includes objects the next GC
	// frees; Sys is all the runtime took from the OS).
	Goroutines int    `json:"goroutines"`
	HeapInuse  uint64 `json:"heap_inuse"`
	StackInuse uint64 `json:"stack_inuse"`
	Sys        uint64 `json:"sys"`
}

// peakInterval is how often RssAnon is sampled.
const peakInterval = 50 * time.Millisecond

// anonPeak samples this process's RssAnon every peakInterval until stop
// is closed and returns the peak with the runtime's figures at it. With
// heapProfile set, the heap profile is (re)written there at every new peak
// (at least 256 KiB above the last one written), for `go tool pprof`.
func anonPeak(stop <-chan struct{}, heapProfile string) <-chan memPeak {
	out := make(chan memPeak, 1)
	go func() {
		var peak memPeak
		var profiled int64
		t := time.NewTicker(peakInterval)
		defer t.Stop()
		for {
			if v, err := anonRSS(os.Getpid()); err == nil && v > peak.Anon {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = memPeak{Anon: v, Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse, Sys: ms.Sys}
				if heapProfile != "" && v >= profiled+256<<10 {
					profiled = v
					if err := writeHeapProfile(heapProfile); err != nil {
						fmt.Fprintln(os.Stderr, "harness:", err)
						heapProfile = ""
					}
				}
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("BENCH_HEAPPROFILE: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("BENCH_HEAPPROFILE: write %s: %w", path, err)
	}
	return f.Close()
}

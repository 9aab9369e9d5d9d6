package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapFloor is the heap the garbage collector lets agent-lsp grow to before
// it collects, while what is live is small.
//
// A server's live heap is a few megabytes, and each tool turn allocates
// tens of kilobytes (a request body, the window, events): with Go's default
// policy (collect when the heap doubles, at 4 MB at least) the collector
// ran every few dozen turns and took a sixth of the server's instructions
// per turn (golang/go#22743 describes the pattern). Past the floor, the
// default policy applies: a heap of 100 MB live still collects at 200 MB.
// The price is memory: the server's resident size in a long run of tool
// turns was 55 MB against 27 MB (16 MB gave 40 MB, and 5% more
// instructions per turn).
const heapFloor = 32 << 20

// heapGoal sets the collector's percent after each collection so that the
// next one comes at floor, or at twice what is live, whichever is more.
type heapGoal struct {
	floor   uint64
	mu      sync.Mutex // serializes tune and stop: a cleanup under way never undoes a stop
	stopped bool       // guarded by mu
}

// keepHeapFloor keeps the heap goal at floor or more, unless GOGC is set
// in the environment (then the runtime does as it says). It returns a
// function that stops it and restores the default percent.
func keepHeapFloor(getenv func(string) string, floor uint64) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	g := &heapGoal{floor: floor}
	g.tune()
	g.arm()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.stopped = true
		debug.SetGCPercent(100)
	}
}

// arm calls tune after the next collection: a cleanup runs once the
// sentinel, reachable from nothing, was collected, and arms the next one.
// A sentinel allocated while a collection marks survives it, so the
// percent may follow a jump of the live heap one collection late; the goal
// is bounded meanwhile (at most 1 + the percent/100 times what is live).
func (g *heapGoal) arm() {
	sentinel := new([16]byte) // not a tiny allocation, which may share its block
	runtime.AddCleanup(sentinel, func(g *heapGoal) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.stopped {
			g.tune()
			g.arm()
		}
	}, g)
}

// tune sets the percent from what the last collection found.
func (g *heapGoal) tune() {
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(m)
	debug.SetGCPercent(gcPercent(m[0].Value.Uint64(), m[1].Value.Uint64()+m[2].Value.Uint64(), g.floor))
}

// heapMinimum is the runtime's least heap goal at GOGC=100; it scales with
// GOGC.
const heapMinimum = 4 << 20

// gcPercent is the GOGC that puts the next collection at floor, or at
// twice live when that is more. The runtime's goal for a percent p is live
// + (live + scan) * p/100 (scan: the stacks and globals it scans), and at
// least heapMinimum * p/100: p is the most that keeps both at floor.
func gcPercent(live, scan, floor uint64) int {
	if live*2 >= floor {
		return 100
	}
	p := floor * 100 / heapMinimum
	if live+scan > 0 {
		p = min(p, (floor-live)*100/(live+scan))
	}
	return int(max(p, 100))
}

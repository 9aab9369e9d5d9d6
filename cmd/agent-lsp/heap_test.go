//go:build unix

package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		live, scan, floor uint64
		want              int
	}{
		{1 * mb, 0, 32 * mb, 800},        // the minimum heap (4 MB at 100) reaches the floor at 800
		{4 * mb, 0, 32 * mb, 700},        // 4 + 4*7 = 32
		{4 * mb, 4 * mb, 32 * mb, 350},   // the stacks and globals count: 4 + 8*3.5 = 32
		{12 * mb, 1 * mb, 32 * mb, 153},  // 12 + 13*1.53 ≈ 32
		{16 * mb, 0, 32 * mb, 100},       // twice live is the floor
		{100 * mb, 0, 32 * mb, 100},      // past the floor: Go's default
		{15 * mb, 10 * mb, 32 * mb, 100}, // never below the default
		{0, 0, 32 * mb, 800},             //
		{100 << 10, 300 << 10, 64 * mb, 1600},
	}
	for _, tt := range tests {
		if got := gcPercent(tt.live, tt.scan, tt.floor); got != tt.want {
			t.Errorf("gcPercent(%d, %d, %d) = %d, want %d", tt.live, tt.scan, tt.floor, got, tt.want)
		}
	}
}

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// cyclesFor is how many collections allocating n bytes of garbage, in
// blocks of 4 KB, took.
func cyclesFor(n int) uint64 {
	before := readMetric("/gc/cycles/total:gc-cycles")
	var keep []byte
	for range n / 4096 {
		keep = make([]byte, 4096)
	}
	runtime.KeepAlive(keep)
	return readMetric("/gc/cycles/total:gc-cycles") - before
}

// waitPercent waits (bounded, to catch a hang) until the collector's
// percent is as want says, collecting meanwhile: a cleanup armed during a
// collection's mark runs only after the next one.
func waitPercent(t *testing.T, what string, want func(uint64) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !want(readMetric("/gc/gogc:percent")); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d, want %s", readMetric("/gc/gogc:percent"), what)
		}
		runtime.GC()
	}
}

func is100(p uint64) bool { return p == 100 }

// With little live, the heap grows to the floor before a collection; with
// more live than half the floor, Go's default policy is back; GOGC in the
// environment turns it off. The floor is set well above what the test
// binary holds live, whatever ran before.
func TestKeepHeapFloor(t *testing.T) {
	runtime.GC()
	floor := max(64<<20, 8*readMetric("/gc/heap/live:bytes"))
	garbage := int(2 * floor)
	baseline := cyclesFor(garbage) // the default: a collection every few MB
	stop := keepHeapFloor(func(string) string { return "" }, floor)
	defer stop()
	// Each collection but the first comes after at least floor less live
	// (an eighth of it at most) of new garbage.
	got := cyclesFor(garbage)
	t.Logf("collections for %d MB of garbage: %d with a floor of %d MB, %d without", garbage>>20, got, floor>>20, baseline)
	if got > 4 {
		t.Errorf("%d MB of garbage over a small live heap took %d collections with a floor of %d MB (%d without)", garbage>>20, got, floor>>20, baseline)
	}
	// The heap is let grow to the floor, and no further, once the cleanup
	// after the last collection has set the percent (it runs after it).
	for deadline := time.Now().Add(30 * time.Second); ; runtime.GC() {
		goal := readMetric("/gc/heap/goal:bytes")
		if goal <= floor+floor/8 && goal >= floor/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the heap goal is %d MB with a floor of %d MB", goal>>20, floor>>20)
		}
		time.Sleep(time.Millisecond)
	}
	live := make([][]byte, 0, int(floor*3/4)/4096) // twice that is over the floor
	for range cap(live) {
		live = append(live, make([]byte, 4096))
	}
	waitPercent(t, "100 with 3/4 of the floor live", is100)
	runtime.KeepAlive(live)
	live = nil
	waitPercent(t, "over 100 with the live heap small again", func(p uint64) bool { return p > 100 })
	stop()
	if p := readMetric("/gc/gogc:percent"); p != 100 {
		t.Fatalf("GOGC is %d after stop", p)
	}
	if s := keepHeapFloor(func(k string) string { return map[string]string{"GOGC": "100"}[k] }, floor); readMetric("/gc/gogc:percent") != 100 {
		s()
		t.Fatal("GOGC set in the environment was not left alone")
	}
}

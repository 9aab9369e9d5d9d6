package store

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// Batched writers blocked on a full queue while the store closes get
// ErrClosed (or were committed); none panics, and nothing is accepted
// after Close.
func TestCommitterCloseWithWritersWaiting(t *testing.T) {
	for range 20 {
		var mu sync.Mutex
		committed := 0
		c := NewCommitter(Batched, func(ws []func()) ([]error, int) {
			time.Sleep(2 * time.Millisecond) // a slow commit: the queue fills behind it
			mu.Lock()
			committed += len(ws)
			mu.Unlock()
			return make([]error, len(ws)), 1
		}, func(ws []func()) func() { return func() {} }, func() {})
		var wg sync.WaitGroup
		errs := make(chan error, 4*BatchSteps)
		for range 4 * BatchSteps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- c.Write(Batched, "t", "", func() {}, false)
			}()
		}
		time.Sleep(time.Millisecond)
		c.Close()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("a writer got %v", err)
			}
		}
		if err := c.Write(Batched, "t", "", func() {}, true); !errors.Is(err, ErrClosed) {
			t.Fatalf("a write after Close: %v", err)
		}
	}
}

// A batched step after a quiet spell is committed at once; the steps that
// follow within the window wait for it (or for a waiter, or a full group)
// and share one commit.
func TestBatchedCommitsAtOnceAfterQuiet(t *testing.T) {
	commits := make(chan int, 16)
	c := newCommitter(Batched, time.Hour, func(ws []int) ([]error, int) {
		commits <- len(ws)
		return make([]error, len(ws)), 1
	}, func([]int) int { return 0 }, 0)
	defer c.Close()
	next := func(what string) int {
		t.Helper()
		select {
		case n := <-commits:
			return n
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no commit", what)
			return 0
		}
	}
	c.Submit(1, false)
	if n := next("the first step, an hour's window"); n != 1 {
		t.Fatalf("the first commit took %d jobs, want 1", n)
	}
	c.Submit(2, false)
	c.Submit(3, false)
	select {
	case n := <-commits:
		t.Fatalf("steps within the window were committed before it ended (%d jobs)", n)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c.Flush(); err != nil { // a waiter ends the gathering
		t.Fatal(err)
	}
	if n := next("after Flush"); n != 3 {
		t.Fatalf("the second commit took %d jobs, want the two steps and Flush's", n)
	}
	for i := range BatchSteps { // a full group is committed without waiting for the window
		c.Submit(i, false)
	}
	if n := next("a full group"); n < BatchSteps {
		t.Fatalf("a full group's commit took %d jobs", n)
	}
}

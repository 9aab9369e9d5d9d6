package store

import (
	"context"
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
				errs <- c.Write(context.Background(), "t", "", func() {}, false)
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
		if err := c.Write(context.Background(), "t", "", func() {}, true); !errors.Is(err, ErrClosed) {
			t.Fatalf("a write after Close: %v", err)
		}
	}
}

package model

import (
	"io"
	"sync"
	"testing"
)

// A request body goes back to its pool only once the call and every reader
// net/http took have let go of it: a body reused while net/http still writes
// it would send another request's bytes.
func TestRequestBodyHeldUntilReadersClose(t *testing.T) {
	var pool sync.Pool
	b := newRequestBody(&pool)
	b.buf = append(b.buf, "first request"...)
	r1 := b.reader() // the request's
	r2 := b.reader() // one GetBody made for a retry
	b.release()      // the call is done
	if got, _ := pool.Get().(*requestBody); got != nil {
		t.Fatal("the body was pooled while net/http held two readers")
	}
	r1.Close()
	r1.Close() // net/http may close twice: one hold let go, not two
	if got, _ := pool.Get().(*requestBody); got != nil {
		t.Fatal("the body was pooled while net/http held a reader")
	}
	if data, _ := io.ReadAll(r2); string(data) != "first request" {
		t.Fatalf("the held reader read %q", data)
	}
	r2.Close()
	if data, _ := io.ReadAll(r1); len(data) != 0 {
		t.Fatalf("a closed reader read %q", data)
	}
	if n := b.refs.Load(); n != 0 {
		t.Fatalf("%d holds left after the call and both readers let go", n)
	}
}

// net/http may close a body while a Read of it runs (HTTP/2, when the answer
// comes first): the Read finishes before the body can be reused. Run with
// -race.
func TestRequestBodyCloseDuringRead(t *testing.T) {
	var pool sync.Pool
	for range 20 {
		b := newRequestBody(&pool)
		b.buf = append(b.buf, make([]byte, 1<<20)...)
		r := b.reader()
		b.release()
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 64<<10)
			for {
				if _, err := r.Read(buf); err != nil {
					return
				}
			}
		}()
		r.Close()
		next := newRequestBody(&pool) // may be b, reused
		next.buf = append(next.buf, make([]byte, 1<<20)...)
		<-done
		next.release()
	}
}

// A body taken from the pool is empty and held once by its taker.
func TestRequestBodyEmptyAfterRelease(t *testing.T) {
	var pool sync.Pool
	b := newRequestBody(&pool)
	b.buf = append(b.buf, "earlier request"...)
	b.release()
	// sync.Pool may drop what it is given (it does at random under the race
	// detector), so the body may or may not come back: either way it is empty.
	if next := newRequestBody(&pool); len(next.buf) != 0 || next.refs.Load() != 1 {
		t.Fatalf("a new body holds %q, %d holds", next.buf, next.refs.Load())
	}
}

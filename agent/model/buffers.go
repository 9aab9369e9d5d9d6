package model

import (
	"bufio"
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// The buffers of a chat call, kept for the next call: a request's body grows
// with the session (tens of kilobytes once it has some history), and with a
// new one per turn the garbage collector's work was a fifth of the server's
// time per turn (BenchmarkTurnOverhead).

// maxPooled is the largest buffer kept for another call.
const maxPooled = 4 << 20

// requestBody is a chat request's body. It goes back to its pool once no one
// holds it: the chat call holds it until it has read the response, and each
// reader net/http takes of it (the request's, and those GetBody makes for
// net/http's own retries) until net/http closes it, which may be after the
// call has returned.
type requestBody struct {
	buf  []byte
	refs atomic.Int32
	pool *sync.Pool
}

// newRequestBody returns an empty body from pool, held once by the caller.
func newRequestBody(pool *sync.Pool) *requestBody {
	b, _ := pool.Get().(*requestBody)
	if b == nil {
		b = &requestBody{pool: pool}
	}
	b.buf = b.buf[:0]
	b.refs.Store(1)
	return b
}

// reader returns a reader of the body that holds it until closed.
func (b *requestBody) reader() io.ReadCloser {
	b.refs.Add(1)
	return &bodyReader{r: bytes.NewReader(b.buf), body: b}
}

// release lets go of one hold; the last one returns the body to its pool.
func (b *requestBody) release() {
	if b.refs.Add(-1) == 0 && cap(b.buf) <= maxPooled {
		b.pool.Put(b)
	}
}

// bodyReader reads a requestBody; Close lets go of it, once. net/http may
// call Close while a Read runs (HTTP/2 does, in its own goroutine, when the
// answer comes before the body is sent): mu makes Close wait for the Read,
// so the buffer is never reused under it.
type bodyReader struct {
	mu   sync.Mutex // guards r and body
	r    *bytes.Reader
	body *requestBody // nil once closed
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.body == nil {
		return 0, io.EOF // closed: nothing of a buffer that may be reused
	}
	return r.r.Read(p)
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	b := r.body
	r.body, r.r = nil, nil
	r.mu.Unlock()
	if b != nil {
		b.release()
	}
	return nil
}

// streamReaders holds the buffered readers of response streams.
type streamReaders struct{ pool sync.Pool }

// get returns a buffered reader of r.
func (s *streamReaders) get(r io.Reader) *bufio.Reader {
	br, _ := s.pool.Get().(*bufio.Reader)
	if br == nil {
		return bufio.NewReader(r)
	}
	br.Reset(r)
	return br
}

// put keeps br for another stream; br must not be used after.
func (s *streamReaders) put(br *bufio.Reader) {
	br.Reset(nil)
	s.pool.Put(br)
}

package model

import (
	"bufio"
	"io"
	"sync"
)

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

package agent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agent-lsp/agent-lsp/store"
)

// history is the Runtime's access to the sessions' rewind history: the
// store's, with every write this runtime makes (its runs' recorders,
// rewinds, undos, forks) counted in sizes, so that a run's start need not
// count the whole history (store.History.Usage reads every content) to
// know it is below the cap (historycap.go).
type history struct {
	*store.History
	sizes historySizes
}

// historySizes is what this runtime knows of its sessions' history sizes:
// the bytes counted at a session's last count, and an upper bound of the
// bytes this runtime wrote to that history since. The Runtime owns it
// (Runtime.hist); mu guards bySession. Another process writing the same
// session (another daemon client has its own Runtime, the CLI's rewind) is
// only seen at this runtime's next count of it, so the cap is a bound
// checked as runs start, not a hard limit. A session this runtime never
// counted is counted: the first run of a session in a process counts once,
// so the figure is right after a crash or another process's writes.
type historySizes struct {
	mu        sync.Mutex
	bySession map[string]*sessionSize
}

// sessionSize is one session's figures, in stored bytes.
type sessionSize struct {
	counted int64 // at the last count (after its pruning)
	written int64 // an upper bound of what was written since
}

// wrote adds an upper bound n of the bytes written to session's history,
// after the write (even a failed one: it may have written part): a write
// counted before a count began (counting) was in the store before the
// count read it; one counted after stays in the bound.
func (s *historySizes) wrote(session string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if z := s.bySession[session]; z != nil {
		z.written += n
	}
}

// below reports whether session's history is known to be within limit
// bytes (counted before, and counted plus written since fits).
func (s *historySizes) below(session string, limit int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.bySession[session]
	return z != nil && z.counted+z.written <= limit
}

// counting starts a count of session's history: it returns the written
// figure so far, which counted subtracts (writes made while the count
// reads the store stay in the bound: the count may have missed them).
func (s *historySizes) counting(session string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if z := s.bySession[session]; z != nil {
		return z.written
	}
	if s.bySession == nil {
		s.bySession = map[string]*sessionSize{}
	}
	s.bySession[session] = &sessionSize{}
	return 0
}

// counted records session's count total (after pruning), started when
// the written figure was start.
func (s *historySizes) counted(session string, total, start int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if z := s.bySession[session]; z != nil {
		z.counted, z.written = total, z.written-start
	}
}

// forget drops session's figures: its next run counts (a count that
// failed, a pruning that failed halfway).
func (s *historySizes) forget(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bySession, session)
}

// blobBound is an upper bound of the stored size of an n-byte content:
// store.History.PutBlob keeps the JSON string of the base64 of its zstd
// frame, and incompressible content grows (zstd's worst case is n + n/256
// + 64 bytes of blocks plus an 18-byte header and a 4-byte checksum, and
// base64 takes 4 bytes for 3, with 2 quotes), so n alone is no bound.
func blobBound(n int) int64 {
	frame := int64(n) + int64(n)/128 + 128
	return (frame+2)/3*4 + 2
}

// PutEntry stores session's entry n (store.History.PutEntry), counted.
func (h *history) PutEntry(ctx context.Context, session string, n int, body json.RawMessage, d store.Durability) error {
	err := h.History.PutEntry(ctx, session, n, body, d)
	h.sizes.wrote(session, int64(len(body))) // after the write: see wrote
	return err
}

// PutBlob stores a content (store.History.PutBlob), counted.
func (h *history) PutBlob(ctx context.Context, session, hash string, content []byte, d store.Durability) error {
	err := h.History.PutBlob(ctx, session, hash, content, d)
	h.sizes.wrote(session, blobBound(len(content))) // after the write: see wrote
	return err
}

// PutBranch stores a branch (store.History.PutBranch), counted.
func (h *history) PutBranch(ctx context.Context, session, id string, body []byte, d store.Durability) error {
	err := h.History.PutBranch(ctx, session, id, body, d)
	h.sizes.wrote(session, int64(len(body))) // after the write: see wrote
	return err
}

// DropEntries moves entries into a branch (store.History.DropEntries):
// the branch is counted, the entries it removes are not taken off (the
// figure stays an upper bound).
func (h *history) DropEntries(ctx context.Context, session string, from int, branch string, body json.RawMessage, d store.Durability) error {
	err := h.History.DropEntries(ctx, session, from, branch, body, d)
	h.sizes.wrote(session, int64(len(body))) // after the write: see wrote
	return err
}

package server

import (
	"context"
	"encoding/json"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// inflight tracks the requests that can be cancelled (agent runs), by request
// ID for $/cancelRequest and by progress token for window/workDoneProgress/cancel.
type inflight struct {
	mu      sync.Mutex // guards both maps and every entry's byRequest
	byID    map[jsonrpc2.ID]*cancellable
	byToken map[protocol.ProgressToken]*cancellable
}

// cancellable is one running request.
type cancellable struct {
	cancel    context.CancelFunc
	byRequest bool // cancelled by $/cancelRequest: the answer is RequestCancelled
}

// add registers a request; remove forgets it.
func (f *inflight) add(id jsonrpc2.ID, cancel context.CancelFunc) *cancellable {
	c := &cancellable{cancel: cancel}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID == nil {
		f.byID, f.byToken = map[jsonrpc2.ID]*cancellable{}, map[protocol.ProgressToken]*cancellable{}
	}
	f.byID[id] = c
	return c
}

// setToken lets token cancel c.
func (f *inflight) setToken(token protocol.ProgressToken, c *cancellable) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byToken[token] = c
}

func (f *inflight) remove(id jsonrpc2.ID, token protocol.ProgressToken) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.byID, id)
	if token != nil {
		delete(f.byToken, token)
	}
}

// cancelID cancels the request id (by $/cancelRequest).
func (f *inflight) cancelID(id jsonrpc2.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.byID[id]; ok {
		c.byRequest = true
		c.cancel()
	}
}

// cancelToken cancels the request reporting on token.
func (f *inflight) cancelToken(token protocol.ProgressToken) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.byToken[token]; ok {
		c.cancel()
	}
}

// cancelledByRequest reports whether c was cancelled by $/cancelRequest.
func (f *inflight) cancelledByRequest(c *cancellable) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return c.byRequest
}

func (f *inflight) cancelAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.byID {
		c.cancel()
	}
}

func (s *Server) cancelRequest(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.CancelParams]("$/cancelRequest", params)
	if err != nil {
		return err
	}
	switch id := p.ID.(type) {
	case protocol.Integer:
		s.requests.cancelID(jsonrpc2.NewNumberID(int64(id)))
	case protocol.String:
		s.requests.cancelID(jsonrpc2.NewStringID(string(id)))
	}
	return nil
}

func (s *Server) cancelProgress(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.WorkDoneProgressCancelParams]("window/workDoneProgress/cancel", params)
	if err != nil {
		return err
	}
	s.requests.cancelToken(p.Token)
	return nil
}

package server

import (
	"context"
	"encoding/json"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// inflight tracks the requests that can be cancelled (agent runs), by request
// ID for $/cancelRequest and by progress token for window/workDoneProgress/cancel.
type inflight struct {
	mu      sync.Mutex // guards both maps and every entry's byRequest
	byID    map[jsonrpc2.ID]*cancellable
	byToken map[string]*cancellable
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
		f.byID, f.byToken = map[jsonrpc2.ID]*cancellable{}, map[string]*cancellable{}
	}
	f.byID[id] = c
	return c
}

// setToken lets token cancel c.
func (f *inflight) setToken(token json.RawMessage, c *cancellable) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byToken[string(token)] = c
}

func (f *inflight) remove(id jsonrpc2.ID, token json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.byID, id)
	if token != nil {
		delete(f.byToken, string(token))
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
func (f *inflight) cancelToken(token json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.byToken[string(token)]; ok {
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
	p, err := decode[struct {
		ID json.RawMessage `json:"id"`
	}]("$/cancelRequest", params)
	if err != nil {
		return err
	}
	var num int64
	var str string
	switch {
	case json.Unmarshal(p.ID, &num) == nil:
		s.requests.cancelID(jsonrpc2.NewNumberID(num))
	case json.Unmarshal(p.ID, &str) == nil:
		s.requests.cancelID(jsonrpc2.NewStringID(str))
	}
	return nil
}

func (s *Server) cancelProgress(b *Backend, params json.RawMessage) error {
	p, err := decode[struct {
		Token json.RawMessage `json:"token"`
	}]("window/workDoneProgress/cancel", params)
	if err != nil {
		return err
	}
	s.requests.cancelToken(p.Token)
	return nil
}

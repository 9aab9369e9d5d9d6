package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// MaxMessageSize bounds one incoming JSON-RPC message.
const MaxMessageSize = 32 << 20

// guardedStream wraps jsonrpc2's header framing so that bad input never closes
// the connection: an oversized message, invalid JSON or an invalid request
// object is answered with a JSON-RPC error (ParseError, InvalidRequest) and the
// stream reads on. go.lsp.dev/jsonrpc2 v1 would otherwise fail the connection.
type guardedStream struct {
	wmu   sync.Mutex // reject writes from the read loop, the conn from others
	inner jsonrpc2.Stream
	limit int
	logf  func(format string, args ...any)
}

type frameReader interface {
	ReadFrame(ctx context.Context) ([]byte, int64, error)
}

func newGuardedStream(rw io.ReadWriteCloser, logf func(string, ...any)) *guardedStream {
	return &guardedStream{inner: jsonrpc2.NewHeaderStream(rw), limit: MaxMessageSize, logf: logf}
}

// Read implements jsonrpc2.Stream.
func (s *guardedStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	fr := s.inner.(frameReader)
	for {
		frame, n, err := fr.ReadFrame(ctx)
		if err != nil {
			return nil, n, err
		}
		if len(frame) > s.limit {
			s.reject(ctx, frame, jsonrpc2.InvalidRequest, fmt.Sprintf("message of %d bytes is over the %d-byte limit", len(frame), s.limit))
			continue
		}
		if !json.Valid(frame) {
			s.reject(ctx, nil, jsonrpc2.ParseError, "invalid JSON")
			continue
		}
		view, err := jsonrpc2.NewFrameView(frame)
		if err != nil {
			s.reject(ctx, frame, jsonrpc2.InvalidRequest, "not a JSON-RPC 2.0 message: "+err.Error())
			continue
		}
		mv := view.MessageView()
		msg, err := mv.Owned()
		if err != nil {
			s.reject(ctx, frame, jsonrpc2.InvalidRequest, "not a JSON-RPC 2.0 message: "+err.Error())
			continue
		}
		return msg, n, nil
	}
}

// reject answers a bad frame, echoing its id when one can be read.
func (s *guardedStream) reject(ctx context.Context, frame []byte, code jsonrpc2.Code, msg string) {
	s.logf("rejected incoming message: %s", msg)
	var id jsonrpc2.ID
	if len(frame) > 0 && len(frame) < 1<<20 {
		var probe struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal(frame, &probe) == nil {
			var num int64
			var str string
			switch {
			case json.Unmarshal(probe.ID, &num) == nil:
				id = jsonrpc2.NewNumberID(num)
			case json.Unmarshal(probe.ID, &str) == nil:
				id = jsonrpc2.NewStringID(str)
			}
			if probe.Method != nil && len(probe.ID) == 0 {
				return // a bad notification gets no answer
			}
		}
	}
	s.Write(ctx, jsonrpc2.NewResponse(id, nil, jsonrpc2.NewError(code, msg)))
}

// Write implements jsonrpc2.Stream.
func (s *guardedStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.inner.Write(ctx, msg)
}

// Close implements jsonrpc2.Stream.
func (s *guardedStream) Close() error { return s.inner.Close() }

// Package server is the LSP adapter: it turns JSON-RPC messages from an editor
// (or the headless client) into agent runs, and run events into progress,
// agent/event notifications and workspace/applyEdit requests. It is a thin
// layer over the core's Backend (server/session: workspace, store, runtime),
// one file per area: lifecycle, text sync, folders, commands, runs, progress
// and events, permissions, edits, and the typed client that calls the editor.
package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/server/session"
)

// Version is agent-lsp's version: the repository's VERSION file, which the
// packaging scripts stamp in with -ldflags "-X
// github.com/agent-lsp/agent-lsp/server.Version=$(cat VERSION)". A build
// without the stamp (go install, go build) has this default, which a test
// (cmd/agent-lsp TestVersion) keeps equal to VERSION. Only the linker sets it.
var Version = "0.2.0"

// RequestCancelled is LSP's error code for a request cancelled by $/cancelRequest.
const RequestCancelled jsonrpc2.Code = -32800

// Options are the server's settings from its command line and what it
// shares with the process's other connections (session.Host).
type Options = session.Host

// Server serves one editor connection. Each piece of its shared state has one
// owner with its own lock; no method holds a lock while it calls the client.
type Server struct {
	opts   Options
	conn   jsonrpc2.Conn
	client *client
	ctx    context.Context // the connection's lifetime

	life     lifecycle          // the LSP state and the backend
	requests inflight           // cancellable requests, by ID and progress token
	always   session.Allowances // commands allowed "always" for a session
	keys     keyGate            // endpoints that need an API key
	reviews  fifo               // edits waiting for the user's confirmation, of every run
	runs     sync.WaitGroup     // agent.run and agent.resume handlers in progress
	tokens   atomic.Int64       // progress tokens the server created
	exited   chan struct{}      // closed by the first exit notification
	exitOnce sync.Once          // guards closing exited: a client may send exit twice
}

// Serve runs the server on in and out until the client exits or the
// connection ends. It returns nil after shutdown and exit.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	opts = opts.WithDefaults()
	opts.Version = cmp.Or(opts.Version, Version)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &Server{opts: opts, ctx: ctx, exited: make(chan struct{})}
	rwc := struct {
		io.Reader
		io.Writer
		io.Closer
	}{in, out, closerFunc(func() error {
		if c, ok := in.(io.Closer); ok {
			c.Close()
		}
		return nil
	})}
	stream := newGuardedStream(rwc, opts.Logf)
	s.conn = jsonrpc2.NewConn(stream, jsonrpc2.WithCodec(lspCodec{}))
	s.client = &client{conn: s.conn, ctx: ctx, out: stream}
	s.client.box = newOutbox(s.client, opts.Logf)
	s.conn.Go(ctx, s.handle)
	select {
	case <-s.conn.Done():
	case <-stream.Ended(): // the client is gone: its runs are cancelled below
	case <-s.exited:
	case <-ctx.Done():
		// Here and after exit, do not wait for the read loop: a blocking read
		// of stdin ends only at EOF (the caller closes a socket).
	}
	s.stopRuns()
	opts.Hub.Live().Forget(s.client)
	shutdown := s.life.close()
	select {
	case <-s.exited:
		if !shutdown {
			return errors.New("exit without shutdown")
		}
		return nil
	case <-ctx.Done():
		return nil // stopped (SIGTERM, or the daemon): the runs were cancelled and checkpointed
	default:
	}
	s.conn.Close()
	err := s.conn.Err()
	if shutdown || errors.Is(err, io.EOF) || err == nil || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func (s *Server) logf(format string, args ...any) { s.opts.Logf(format, args...) }

// notice logs a line to stderr and to the client's log (window/logMessage).
func (s *Server) notice(typ protocol.MessageType, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.logf("%s", msg)
	s.client.logMessage(typ, "agent-lsp: "+msg)
}

// act tells the user of a problem they must act on: window/showMessage
// (and the log).
func (s *Server) act(msg string) {
	s.notice(msgWarning, "%s", msg)
	s.client.showMessage(msgWarning, "agent-lsp: "+msg)
}

// stopRuns cancels every run and waits for them to checkpoint.
func (s *Server) stopRuns() {
	s.requests.cancelAll()
	s.runs.Wait()
}

func invalidParams(format string, args ...any) error {
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, format, args...)
}

// decode decodes params into a T, a go.lsp.dev/protocol type, with the
// library's codec, leniently: unknown fields are ignored, and a field of the
// wrong type is InvalidParams naming the method, never a dropped connection.
func decode[T any](method string, params json.RawMessage) (T, error) {
	var v T
	if len(params) == 0 || string(params) == "null" {
		return v, nil
	}
	if err := protocol.Unmarshal(params, &v); err != nil {
		return v, invalidParams("%s: %v", method, err)
	}
	return v, nil
}

// A requestHandler answers one LSP request.
type requestHandler func(s *Server, ctx context.Context, id jsonrpc2.ID, params json.RawMessage) (any, error)

// requestHandlers are the requests the server answers. Every one but
// initialize needs an initialized, not shut down server.
var requestHandlers = map[string]requestHandler{
	"initialize":               (*Server).initialize,
	"shutdown":                 (*Server).shutdown,
	"workspace/executeCommand": (*Server).executeCommand,
}

// A notificationHandler handles one notification; ready says it needs an
// initialized server (before that it is ignored, as LSP says) and gets its
// backend.
type notificationHandler struct {
	handle func(s *Server, b *Backend, params json.RawMessage) error
	ready  bool
}

// notificationHandlers are the notifications the server reads; others are ignored.
var notificationHandlers = map[string]notificationHandler{
	"exit":                                {(*Server).exit, false},
	"$/cancelRequest":                     {(*Server).cancelRequest, false},
	"window/workDoneProgress/cancel":      {(*Server).cancelProgress, false},
	"textDocument/didOpen":                {(*Server).didOpen, true},
	"textDocument/didChange":              {(*Server).didChange, true},
	"textDocument/didSave":                {(*Server).didSave, true},
	"textDocument/didClose":               {(*Server).didClose, true},
	"workspace/didChangeWorkspaceFolders": {(*Server).didChangeWorkspaceFolders, true},
	"workspace/didChangeConfiguration":    {(*Server).didChangeConfiguration, true},
}

// handle is the handler chain: requests and notifications run in arrival order
// on the read loop until a long request (a run) explicitly goes asynchronous;
// panics become InternalError; notification errors are logged, never fatal.
func (s *Server) handle(ctx context.Context, req *jsonrpc2.Request) (result any, err error) {
	method := strings.Clone(req.Method()) // borrowed from the read buffer until the handler returns
	params := json.RawMessage(append([]byte(nil), req.Params()...))
	isCall := req.IsCall()
	defer func() {
		if v := recover(); v != nil {
			s.logf("panic in %s: %v\n%s", method, v, debug.Stack())
			result, err = nil, nil
			if isCall {
				err = jsonrpc2.Errorf(jsonrpc2.InternalError, "internal error in %s: %v", method, v)
			}
		}
	}()
	if !isCall {
		h, ok := notificationHandlers[method]
		b := s.life.backendIfReady()
		if !ok || (h.ready && b == nil) {
			return nil, nil
		}
		if err := h.handle(s, b, params); err != nil {
			s.logf("notification %s: %v", method, err)
		}
		return nil, nil
	}
	if method != "initialize" {
		if err := s.life.checkReady(method); err != nil {
			return nil, err
		}
	}
	h, ok := requestHandlers[method]
	if !ok {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method not found: %s", method)
	}
	return h(s, ctx, req.ID(), params)
}

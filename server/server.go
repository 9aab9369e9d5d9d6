// Package server is the LSP adapter: it turns JSON-RPC messages from an editor
// (or the headless client) into agent runs, and run events into progress,
// agent/event notifications and workspace/applyEdit requests.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Version is the server's version.
const Version = "0.1.0"

// RequestCancelled is LSP's error code for a request cancelled by $/cancelRequest.
const RequestCancelled jsonrpc2.Code = -32800

// Commands are the workspace/executeCommand commands the server provides.
var Commands = []string{"agent.run", "agent.resume", "agent.cancel", "agent.sessions", "agent.session",
	"agent.deleteSession", "agent.projects", "agent.switchProject"}

// Server serves one editor connection.
type Server struct {
	opts Options
	conn jsonrpc2.Conn
	ctx  context.Context // the connection's lifetime

	mu          sync.Mutex
	state       int // 0 new, 1 initialized, 2 shut down
	st          settings
	ws          *workspace.Workspace
	rt          *agent.Runtime
	store       store.Store
	progressCap bool
	inflight    map[jsonrpc2.ID]*inflight
	tokens      map[string]*inflight
	seqs        map[string]int64
	always      map[string]map[string]bool // session -> commands allowed for the session
	runs        sync.WaitGroup
	gotShutdown bool
	tokenN      int
	exited      chan struct{} // closed by the exit notification
}

type inflight struct {
	cancel      context.CancelFunc
	byCancelReq bool
}

const (
	stateNew = iota
	stateReady
	stateShutdown
)

// Serve runs the server on in and out until the client exits or the
// connection ends. It returns nil after shutdown and exit.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Exit == nil {
		opts.Exit = os.Exit
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &Server{opts: opts, ctx: ctx, inflight: map[jsonrpc2.ID]*inflight{}, tokens: map[string]*inflight{},
		seqs: map[string]int64{}, always: map[string]map[string]bool{}, exited: make(chan struct{})}
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
	s.conn = jsonrpc2.NewConn(newGuardedStream(rwc, opts.Logf))
	s.conn.Go(ctx, s.handle)
	select {
	case <-s.conn.Done():
	case <-s.exited:
		// Do not wait for the read loop: a blocking read of stdin ends only at EOF.
	case <-ctx.Done():
		s.conn.Close()
	}
	s.stopRuns()
	s.mu.Lock()
	st, shut := s.store, s.gotShutdown
	s.mu.Unlock()
	if st != nil {
		st.Close()
	}
	select {
	case <-s.exited:
		if !shut {
			return errors.New("exit without shutdown")
		}
		return nil
	default:
	}
	s.conn.Close()
	err := s.conn.Err()
	if shut || errors.Is(err, io.EOF) || err == nil || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func (s *Server) logf(format string, args ...any) { s.opts.Logf(format, args...) }

// notice logs a line to stderr and to the client's log (window/logMessage).
func (s *Server) notice(typ int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.logf("%s", msg)
	s.conn.Notify(s.ctx, "window/logMessage", protocol.LogMessageParams{Type: protocol.MessageType(typ), Message: "agent-lsp: " + msg})
}

// stopRuns cancels every run and waits for them to checkpoint.
func (s *Server) stopRuns() {
	s.mu.Lock()
	for _, f := range s.inflight {
		f.cancel()
	}
	s.mu.Unlock()
	s.runs.Wait()
}

func invalidParams(format string, args ...any) error {
	return jsonrpc2.Errorf(jsonrpc2.InvalidParams, format, args...)
}

// handle is the handler chain: requests and notifications run in arrival order
// on the read loop until a long request (a run) explicitly goes asynchronous;
// panics become InternalError; notification errors are logged, never fatal.
func (s *Server) handle(ctx context.Context, req *jsonrpc2.Request) (result any, err error) {
	method := strings.Clone(req.Method()) // borrowed from the read buffer until the handler returns
	params := json.RawMessage(append([]byte(nil), req.Params()...))
	isCall := req.IsCall()
	var id jsonrpc2.ID
	if isCall {
		id = req.ID()
	}
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
		if err := s.notification(ctx, method, params); err != nil {
			s.logf("notification %s: %v", method, err)
		}
		return nil, nil
	}
	return s.request(ctx, id, method, params)
}

func (s *Server) request(ctx context.Context, id jsonrpc2.ID, method string, params json.RawMessage) (any, error) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if method == "initialize" {
		if state != stateNew {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize was already received")
		}
		return s.initialize(ctx, params)
	}
	switch state {
	case stateNew:
		return nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "%s before initialize", method)
	case stateShutdown:
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s after shutdown", method)
	}
	switch method {
	case "shutdown":
		s.mu.Lock()
		s.state, s.gotShutdown = stateShutdown, true
		s.mu.Unlock()
		jsonrpc2.Async(ctx)
		s.stopRuns()
		return nil, nil
	case "workspace/executeCommand":
		return s.executeCommand(ctx, id, params)
	}
	return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method not found: %s", method)
}

func (s *Server) notification(ctx context.Context, method string, params json.RawMessage) error {
	switch method {
	case "exit":
		go func() {
			s.stopRuns()
			close(s.exited)
		}()
		return nil
	case "$/cancelRequest":
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
		var num int64
		var str string
		var id jsonrpc2.ID
		if json.Unmarshal(p.ID, &num) == nil {
			id = jsonrpc2.NewNumberID(num)
		} else if json.Unmarshal(p.ID, &str) == nil {
			id = jsonrpc2.NewStringID(str)
		}
		s.mu.Lock()
		if f, ok := s.inflight[id]; ok {
			f.byCancelReq = true
			f.cancel()
		}
		s.mu.Unlock()
		return nil
	case "window/workDoneProgress/cancel":
		var p struct {
			Token json.RawMessage `json:"token"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
		s.mu.Lock()
		if f, ok := s.tokens[string(p.Token)]; ok {
			f.cancel()
		}
		s.mu.Unlock()
		return nil
	}
	s.mu.Lock()
	ready := s.state == stateReady
	ws := s.ws
	s.mu.Unlock()
	if !ready {
		return nil
	}
	switch method {
	case "textDocument/didOpen":
		var p struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int32  `json:"version"`
				Text    string `json:"text"`
			} `json:"textDocument"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
		ws.Open(filename(p.TextDocument.URI), p.TextDocument.Version, p.TextDocument.Text)
	case "textDocument/didChange":
		var p struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int32  `json:"version"`
			} `json:"textDocument"`
			ContentChanges []struct {
				Range *workspace.Range `json:"range"`
				Text  string           `json:"text"`
			} `json:"contentChanges"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
		changes := make([]workspace.Change, len(p.ContentChanges))
		for i, c := range p.ContentChanges {
			changes[i] = workspace.Change{Range: c.Range, Text: c.Text}
		}
		return ws.Change(filename(p.TextDocument.URI), p.TextDocument.Version, changes)
	case "textDocument/didClose":
		var p struct {
			TextDocument struct {
				URI string `json:"uri"`
			} `json:"textDocument"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
		ws.Close(filename(p.TextDocument.URI))
	case "workspace/didChangeWorkspaceFolders":
		var p struct {
			Event struct {
				Added   []folder `json:"added"`
				Removed []folder `json:"removed"`
			} `json:"event"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
		for _, f := range p.Event.Removed {
			if f.URI != "" { // Neovim 0.7 sends "removed":[{}]
				ws.RemoveRoot(filename(f.URI))
			}
		}
		for _, f := range p.Event.Added {
			if f.URI != "" {
				if _, err := ws.Add(f.Name, filename(f.URI)); err != nil {
					s.notice(2, "cannot add workspace folder: %v", err)
				}
			}
		}
	}
	return nil
}

type folder struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

// filename turns a file URI into a path.
func filename(u string) string {
	if !strings.HasPrefix(u, "file:") {
		return u
	}
	if parsed, err := uri.Parse(u); err == nil {
		return parsed.FsPath()
	}
	return strings.TrimPrefix(u, "file://")
}

func (s *Server) initialize(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ProcessID        *int            `json:"processId"`
		RootURI          *string         `json:"rootUri"`
		RootPath         *string         `json:"rootPath"`
		WorkspaceFolders []folder        `json:"workspaceFolders"`
		InitOptions      json.RawMessage `json:"initializationOptions"`
		Capabilities     struct {
			General struct {
				PositionEncodings []string `json:"positionEncodings"`
			} `json:"general"`
			Window struct {
				WorkDoneProgress bool `json:"workDoneProgress"`
			} `json:"window"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("initialize: %v", err)
	}
	st, err := s.resolve(p.InitOptions)
	if err != nil {
		return nil, invalidParams("initializationOptions: %v", err)
	}
	enc := workspace.UTF16
	for _, e := range p.Capabilities.General.PositionEncodings {
		if e == "utf-8" {
			enc = workspace.UTF8
		}
	}
	ws := workspace.New(enc)
	folders := p.WorkspaceFolders
	if len(folders) == 0 {
		switch {
		case p.RootURI != nil && *p.RootURI != "":
			folders = []folder{{URI: *p.RootURI}}
		case p.RootPath != nil && *p.RootPath != "":
			folders = []folder{{URI: string(uri.File(*p.RootPath))}}
		}
	}
	var roots []string
	var problems []string
	for _, f := range folders {
		pr, err := ws.Add(f.Name, filename(f.URI))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		roots = append(roots, pr.Root())
	}
	db, storeNote := openStore(st.storePath, roots, st.durability)
	m := model.NewOpenAI(model.Config{BaseURL: st.baseURL, Model: st.model, APIKey: st.apiKey})
	rt, err := agent.New(agent.Config{Model: m, Workspace: ws, Store: db, MaxSteps: st.maxSteps, Window: st.window})
	if err != nil {
		db.Close()
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "initialize: %v", err)
	}
	s.mu.Lock()
	s.st, s.ws, s.rt, s.store, s.state = st, ws, rt, db, stateReady
	s.progressCap = p.Capabilities.Window.WorkDoneProgress
	s.mu.Unlock()
	for _, pr := range problems {
		s.notice(2, "workspace folder skipped: %s", pr)
	}
	if storeNote != "" {
		s.notice(2, "%s", storeNote)
	}
	if st.apiKey == "" && strings.Contains(st.baseURL, "api.openai.com") {
		s.notice(2, "no API key: set OPENAI_API_KEY (or point OPENAI_BASE_URL at a local server)")
	}
	s.logf("agent-lsp %s: %d project(s), model %s at %s, store %s", Version, len(roots), st.model, st.baseURL, storeName(db))
	if p.ProcessID != nil && *p.ProcessID > 0 {
		go s.watchParent(*p.ProcessID)
	}
	return map[string]any{
		"capabilities": map[string]any{
			"positionEncoding": string(enc),
			"textDocumentSync": map[string]any{"openClose": true, "change": 2},
			"executeCommandProvider": map[string]any{
				"commands": Commands, "workDoneProgress": true,
			},
			"workspace": map[string]any{"workspaceFolders": map[string]any{"supported": true, "changeNotifications": true}},
		},
		"serverInfo": map[string]any{"name": "agent-lsp", "version": Version},
	}, nil
}

func storeName(st store.Store) string {
	if b, ok := st.(*store.Bolt); ok {
		return b.Path()
	}
	return "in memory"
}

// openStore opens the store file; when another process holds it, a per-window
// sibling file; failing that, memory. The note says what happened, if anything.
func openStore(path string, roots []string, d store.Durability) (store.Store, string) {
	db, err := store.Open(path, store.WithDefaultDurability(d))
	if err == nil {
		return db, ""
	}
	if errors.Is(err, store.ErrLocked) {
		alt := fallbackStorePath(path, roots)
		if db, err2 := store.Open(alt, store.WithDefaultDurability(d)); err2 == nil {
			return db, fmt.Sprintf("%v; this window keeps its sessions in %s", err, alt)
		}
	}
	return store.NewMemory(), fmt.Sprintf("%v; sessions of this window are kept in memory only", err)
}

// watchParent ends the server when the editor process that started it dies.
func (s *Server) watchParent(pid int) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			s.logf("parent process %d is gone; stopping", pid)
			s.stopRuns()
			s.mu.Lock()
			if s.store != nil {
				s.store.Close()
			}
			s.mu.Unlock()
			s.opts.Exit(1)
			return
		}
	}
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// lifecycle is the connection's LSP state (new, ready, shut down) and the
// backend initialize composed.
type lifecycle struct {
	mu       sync.Mutex // guards the fields below
	state    int
	backend  *Backend
	progress bool // the client supports window.workDoneProgress
	saves    bool // the client answers agent/saveDocuments (experimental.saveDocuments)
	language bool // the client answers agent/diagnostics and agent/languageRequest (experimental.language)
	shutdown bool // shutdown was received
}

const (
	stateNew = iota
	stateReady
	stateShutdown
)

// checkReady says why a request other than initialize cannot be served now.
func (l *lifecycle) checkReady(method string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case stateNew:
		return jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "%s before initialize", method)
	case stateShutdown:
		return jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s after shutdown", method)
	}
	return nil
}

// isNew reports whether initialize has not been received yet.
func (l *lifecycle) isNew() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == stateNew
}

// beginShutdown records the shutdown request: later requests are refused.
func (l *lifecycle) beginShutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state, l.shutdown = stateShutdown, true
}

// backendIfReady returns the backend of an initialized server, else nil.
func (l *lifecycle) backendIfReady() *Backend {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateReady {
		return nil
	}
	return l.backend
}

// get returns the backend and whether the client takes progress.
func (l *lifecycle) get() (*Backend, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.backend, l.progress
}

// start moves a new server to ready with b and what the client can do;
// false if it was not new.
func (l *lifecycle) start(b *Backend, progress, saves, language bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateNew {
		return false
	}
	l.state, l.backend, l.progress, l.saves, l.language = stateReady, b, progress, saves, language
	return true
}

// answersLanguage reports whether the client gives the agent its language
// features (experimental.language).
func (l *lifecycle) answersLanguage() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.language
}

// replace makes nb the backend of a ready server; false when the server is
// not ready (then nb is not used).
func (l *lifecycle) replace(nb *Backend) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateReady {
		return false
	}
	l.backend = nb
	return true
}

// canSave reports whether the client saves documents for the agent.
func (l *lifecycle) canSave() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.saves
}

// close closes the backend once and reports whether shutdown was received.
func (l *lifecycle) close() (shutdown bool) {
	l.mu.Lock()
	b := l.backend
	l.backend, shutdown = nil, l.shutdown
	if l.state == stateReady {
		l.state = stateShutdown
	}
	l.mu.Unlock()
	if b != nil {
		b.Close()
	}
	return shutdown
}

// initializeParams are initialize's params: LSP's, and the experimental
// client capabilities of agent-lsp's own extensions.
type initializeParams struct {
	protocol.InitializeParams
	experimental clientExperimental
}

// clientExperimental are the client's experimental capabilities that
// agent-lsp reads (capabilities.experimental, an LSPAny to the library).
type clientExperimental struct {
	SaveDocuments bool `json:"saveDocuments"` // the client answers agent/saveDocuments
	Language      bool `json:"language"`      // the client answers agent/diagnostics and agent/languageRequest
}

// decodeInitialize decodes initialize's params; a field of the wrong type,
// in LSP's part or agent-lsp's, is InvalidParams.
func decodeInitialize(params json.RawMessage) (initializeParams, error) {
	p, err := decode[protocol.InitializeParams]("initialize", params)
	if err != nil {
		return initializeParams{}, err
	}
	ip := initializeParams{InitializeParams: p}
	if x := p.Capabilities.Experimental; len(x) > 0 {
		if err := json.Unmarshal(x, &ip.experimental); err != nil {
			return ip, invalidParams("initialize: capabilities.experimental: %v", err)
		}
	}
	return ip, nil
}

// folders are the workspace folders, else the root, as paths.
func (p initializeParams) folders() []Folder {
	fs, _ := p.WorkspaceFolders.Get()
	if len(fs) == 0 {
		//lint:ignore SA1019 clients before LSP 3.6 (and some after) send only the root
		rootURI, rootPathOpt := p.RootURI, p.RootPath
		rootPath, _ := rootPathOpt.Get()
		switch {
		case rootURI != nil && *rootURI != "":
			fs = []protocol.WorkspaceFolder{{URI: *rootURI}}
		case rootPath != "":
			fs = []protocol.WorkspaceFolder{{URI: uri.File(rootPath)}}
		}
	}
	out := make([]Folder, 0, len(fs))
	for _, f := range fs {
		out = append(out, Folder{Path: filename(string(f.URI)), Name: f.Name})
	}
	return out
}

func (p initializeParams) encoding() workspace.Encoding {
	if g := p.Capabilities.General; g != nil && slices.Contains(g.PositionEncodings, protocol.PositionEncodingKindUTF8) {
		return workspace.UTF8
	}
	return workspace.UTF16
}

// progress reports whether the client takes work-done progress the server creates.
func (p initializeParams) progress() bool {
	w := p.Capabilities.Window
	return w != nil && w.WorkDoneProgress != nil && *w.WorkDoneProgress
}

func (s *Server) initialize(ctx context.Context, _ jsonrpc2.ID, params json.RawMessage) (any, error) {
	if !s.life.isNew() {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize was already received")
	}
	p, err := decodeInitialize(params)
	if err != nil {
		return nil, err
	}
	st, warnings, err := config.Resolve(s.opts.Getenv, json.RawMessage(p.InitializationOptions), s.opts.Flags)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	enc := p.encoding()
	o := session.Options{Settings: st, Environ: s.opts.Environ(), Getenv: s.opts.Getenv, Version: s.opts.Version,
		Warn: func(msg string) { s.notice(msgWarning, "%s", msg) },
		Ask: func(ctx context.Context, message string, actions ...string) (string, error) {
			return s.client.showMessageRequest(ctx, msgWarning, message, actions...)
		}}
	b, notices, err := session.NewBackend(s.opts.Hub, o, enc, p.folders())
	if err != nil {
		return nil, invalidParams("initialize: %v", err)
	}
	if !s.life.start(b, p.progress(), p.experimental.SaveDocuments, p.experimental.Language) {
		b.Close()
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize was already received")
	}
	for _, n := range warnings {
		s.notice(msgWarning, "%s", n)
	}
	for _, n := range append(slices.Clone(s.opts.Notices), notices...) { // problems the user must act on
		s.act(n)
	}
	if why := b.Sandbox.Unconfined(); b.Confine.Mode != sandbox.Off && why != "" {
		s.notice(msgWarning, "commands are not sandboxed: %s; every command asks first", why)
	}
	if s.keys.needsKey(st.BaseURL, st.APIKey) {
		// Logged only: a run is refused with data.reason no-api-key, which
		// each client shows once, with its own action (Set API Key, ...).
		s.notice(msgWarning, "%s", fmt.Sprintf("no API key: %s needs one and %s is not set; runs are refused until it is (or until the endpoint is a server that needs none)", strings.TrimRight(st.BaseURL, "/"), st.APIKeyEnv))
	}
	s.logf("agent-lsp %s: %d project(s), model %s at %s, store %s", Version, len(b.Workspace.Projects()), st.Model, st.BaseURL, b.StoreName())
	if p.ProcessID != nil && *p.ProcessID > 0 {
		go s.watchParent(int(*p.ProcessID))
	}
	return initializeResult(enc), nil
}

// initializeResult is what the server can do: incremental text sync (open,
// change, save), the agent.* commands (with progress), workspace folders.
func initializeResult(enc workspace.Encoding) *protocol.InitializeResult {
	return &protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			PositionEncoding: protocol.PositionEncodingKind(enc),
			TextDocumentSync: &protocol.TextDocumentSyncOptions{OpenClose: new(true), Change: new(protocol.TextDocumentSyncKindIncremental),
				Save: &protocol.SaveOptions{IncludeText: new(false)}},
			ExecuteCommandProvider: protocol.ExecuteCommandOptions{Commands: commandNames(),
				WorkDoneProgressOptions: protocol.WorkDoneProgressOptions{WorkDoneProgress: new(true)}},
			Workspace: &protocol.WorkspaceOptions{WorkspaceFolders: &protocol.WorkspaceFoldersServerCapabilities{Supported: new(true),
				ChangeNotifications: protocol.Boolean(true)}},
		},
		ServerInfo: protocol.ServerInfo{Name: "agent-lsp", Version: protocol.NewOptional(Version)},
	}
}

func (s *Server) shutdown(ctx context.Context, _ jsonrpc2.ID, _ json.RawMessage) (any, error) {
	s.life.beginShutdown()
	jsonrpc2.Async(ctx)
	s.stopRuns()
	return nil, nil
}

func (s *Server) exit(b *Backend, _ json.RawMessage) error {
	go func() {
		s.stopRuns()
		// A client may send exit without waiting for the answers to its
		// requests (shutdown's, a run's that shutdown cancelled): they are
		// written first, for at most exitGrace.
		if s.client.out != nil {
			ctx, cancel := context.WithTimeout(s.ctx, exitGrace)
			s.client.out.answered(ctx)
			cancel()
		}
		s.exitOnce.Do(func() { close(s.exited) })
	}()
	return nil
}

// exitGrace bounds how long exit waits for the answers of requests in
// flight: a handler that does not answer does not keep the server.
const exitGrace = 2 * time.Second

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
		if processGone(pid) {
			s.logf("parent process %d is gone; stopping", pid)
			s.stopRuns()
			s.life.close()
			s.opts.Exit(1)
			return
		}
	}
}

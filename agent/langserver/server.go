package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Bounds of what a server's state holds.
const (
	maxPerFile = 500  // diagnostics kept per file
	maxFiles   = 5000 // files with diagnostics kept per server
	maxOpen    = 200  // documents kept open in a server
	maxStderr  = 4 << 10
)

// state is where a server is in its life.
type state int

const (
	stopped  state = iota // never started, or stopped when idle
	starting              // spawned, initialize not answered yet
	ready                 // initialized
	failed                // died or could not start; restarts after retryAt
)

// server is one project's language server process and what agent-lsp
// knows of it. mu guards every field below it; no method holds mu while it
// writes to the server or waits.
type server struct {
	m    *Manager
	root string // the project's root
	name string // the project's name when the server was made, for the sandbox policy
	typ  string // the project's type
	spec Spec
	path string // the program

	sync sync.Mutex // serializes didOpen/didChange, so versions reach the server in order; taken before mu

	mu        sync.Mutex
	state     state
	gen       int // increments with every start and stop: events of an older process are ignored
	conn      jsonrpc2.Conn
	proc      *process
	ready     chan struct{} // closed when the current start ends (ready or failed)
	err       error         // why the server is not running
	failures  int           // deaths in a row
	retryAt   time.Time
	startedAt time.Time
	readyAt   time.Time
	used      time.Time
	busy      int   // questions in flight: an idle stop waits for them
	trusted   bool  // started while the agent had not changed the project's command files
	denied    error // the last refusal of the permission to start, asked again after deniedAt+askAgain
	deniedAt  time.Time
	enc       workspace.Encoding
	caps      map[string]bool // the server's *Provider capabilities that are set
	pull      bool            // it answers textDocument/diagnostic
	docs      map[string]*doc // open documents by path
	diags     map[string]*fileDiags
	dropped   int           // diagnostics or files left out by the bounds
	changed   chan struct{} // closed, and replaced, at every publish
}

// process is a running server's process; exited is closed once it ended.
type process struct {
	p      *os.Process
	exited chan struct{}
}

// doc is a document open in the server.
type doc struct {
	version int32
	text    string
	used    time.Time
}

// fileDiags are the diagnostics a server last published for one file.
type fileDiags struct {
	items   []tools.Diagnostic
	version *int32 // the document version they are for, when the server said
	at      time.Time
	pulled  bool // asked for (pull): a later push that names no version may be older
}

// tailBuffer keeps the last bytes a server wrote to stderr, for the
// message of its failure.
type tailBuffer struct {
	mu  sync.Mutex // guards buf
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > maxStderr {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-maxStderr:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// backoff is the wait before the n-th restart in a row: 1 s, 2 s, 4 s, …,
// at most a minute.
func backoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// askAgain is how long a refused start is not asked for again.
const askAgain = 5 * time.Minute

// stableAfter is how long a server must run for its next death to count as
// the first in a row.
const stableAfter = time.Minute

// command is the server's command line as the user reads it.
func (s *server) command() string {
	return strings.Join(append([]string{s.spec.Command}, s.spec.Args...), " ")
}

// ensure makes the server ready: it starts it (asking q.Allow) when it is
// stopped, or failed and its retry time has come, and waits for a start
// under way until deadline. first reports that the server started or
// finished starting within the last StartWait: its first diagnostics may
// take that long.
func (s *server) ensure(ctx context.Context, q tools.LangQuery, deadline time.Time) (first bool, err error) {
	for {
		s.mu.Lock()
		if s.state == ready && s.trusted && q.CommandsChanged {
			// Its project's command definitions changed since it started
			// without asking: it starts again only with that permission.
			s.stopLocked("the project's command files changed")
		}
		st, ch := s.state, s.ready
		switch st {
		case ready:
			s.used = time.Now()
			first = time.Since(s.readyAt) < s.m.opts.StartWait
			s.mu.Unlock()
			return first, nil
		case starting:
			s.mu.Unlock()
			if err := waitFor(ctx, ch, deadline); err != nil {
				return true, fmt.Errorf("%s is still starting (%v)", s.spec.Name, err)
			}
			continue
		case failed:
			if wait := time.Until(s.retryAt); wait > 0 {
				why := s.err
				s.mu.Unlock()
				return false, fmt.Errorf("%s stopped (%v); it restarts in %s", s.spec.Name, why, wait.Round(time.Second))
			}
		}
		if s.denied != nil && time.Since(s.deniedAt) < askAgain {
			why := s.denied
			s.mu.Unlock()
			return false, &tools.NoServerError{Reason: why.Error()}
		}
		s.mu.Unlock()
		if q.Allow != nil {
			if err := q.Allow(ctx, s.command()); err != nil {
				s.mu.Lock()
				s.denied, s.deniedAt = err, time.Now() // not asked again at every edit
				s.mu.Unlock()
				return false, &tools.NoServerError{Reason: err.Error()}
			}
		}
		s.mu.Lock()
		if s.state == stopped || s.state == failed {
			s.launchLocked(!q.CommandsChanged)
		}
		s.mu.Unlock()
	}
}

// hold marks a question in flight until release is called: the server is
// not stopped as idle meanwhile.
func (s *server) hold() (release func()) {
	s.mu.Lock()
	s.busy++
	s.used = time.Now()
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.busy--
		s.used = time.Now()
		s.mu.Unlock()
	}
}

// waitFor waits until ch is closed, ctx ends or deadline passes.
func waitFor(ctx context.Context, ch <-chan struct{}, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errors.New("no answer in time")
	}
}

// launchLocked starts the process and its initialization in the
// background; s.mu is held.
func (s *server) launchLocked(trusted bool) {
	s.gen++
	gen := s.gen
	s.state, s.ready, s.err, s.trusted = starting, make(chan struct{}), nil, trusted
	s.startedAt, s.used = time.Now(), time.Now()
	s.docs, s.diags, s.dropped = map[string]*doc{}, map[string]*fileDiags{}, 0
	s.publishedLocked() // a fresh channel for this process's publishes
	go s.start(gen, &tailBuffer{})
}

// start spawns the server (in the sandbox, network off) and initializes
// it; stderr keeps the end of what it writes there.
func (s *server) start(gen int, stderr *tailBuffer) {
	argv := s.m.argv(s, append([]string{s.path}, s.spec.Args...))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stderr = s.root, s.m.opts.Env, stderr
	ownGroup(cmd) // its process group is its pid, killed whole
	inR, inW, err := os.Pipe()
	if err != nil {
		s.fail(gen, err)
		return
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		s.fail(gen, err)
		return
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		s.fail(gen, fmt.Errorf("start %s: %w", s.spec.Name, err))
		return
	}
	inR.Close()
	outW.Close()
	conn := jsonrpc2.NewConn(newStream(outR, inW, func() error {
		inW.Close()
		return outR.Close()
	}))
	conn.Go(context.Background(), s.handler(gen))
	proc := &process{p: cmd.Process, exited: make(chan struct{})}
	go s.watch(gen, cmd, proc, conn, stderr)
	go func() {
		<-conn.Done() // it sent what cannot be read (a huge or broken message) or closed its output
		kill(cmd.Process)
	}()
	s.mu.Lock()
	if s.gen != gen { // stopped meanwhile
		s.mu.Unlock()
		kill(cmd.Process)
		return
	}
	s.conn, s.proc = conn, proc
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.m.opts.StartWait)
	defer cancel()
	if err := s.initialize(ctx, gen, conn); err != nil {
		s.fail(gen, fmt.Errorf("initialize: %w", err))
		kill(cmd.Process)
	}
}

// initialize sends initialize and initialized, and records what the server
// can do.
func (s *server) initialize(ctx context.Context, gen int, conn jsonrpc2.Conn) error {
	root := string(uri.File(s.root))
	// No processId: a server that watches its client's pid with kill(pid,
	// 0) would find it gone from inside the sandbox (Landlock scopes
	// signals) and exit. A server ends when its input closes, or is killed.
	params := map[string]any{
		"processId": nil, "rootUri": root, "rootPath": s.root,
		"clientInfo":       map[string]string{"name": "agent-lsp"},
		"workspaceFolders": []map[string]string{{"uri": root, "name": filepath.Base(s.root)}},
		"capabilities":     clientCapabilities,
	}
	if len(s.spec.InitOptions) > 0 {
		params["initializationOptions"] = s.spec.InitOptions
	}
	var res struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if _, err := conn.Call(ctx, "initialize", params, &res); err != nil {
		return err
	}
	caps := map[string]bool{}
	for k, v := range res.Capabilities {
		caps[k] = len(v) > 0 && string(v) != "false" && string(v) != "null"
	}
	enc := workspace.UTF16
	var pe string
	if json.Unmarshal(res.Capabilities["positionEncoding"], &pe) == nil && pe == string(workspace.UTF8) {
		enc = workspace.UTF8
	}
	if err := conn.Notify(ctx, "initialized", struct{}{}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return errors.New("stopped while starting")
	}
	s.state, s.readyAt, s.enc, s.caps, s.pull = ready, time.Now(), enc, caps, caps["diagnosticProvider"]
	close(s.ready)
	return nil
}

// clientCapabilities are what agent-lsp tells a server it can take.
var clientCapabilities = map[string]any{
	"general": map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}},
	"textDocument": map[string]any{
		"synchronization":    map[string]any{"didSave": false},
		"publishDiagnostics": map[string]any{"versionSupport": true, "relatedInformation": false},
		"diagnostic":         map[string]any{"dynamicRegistration": false},
		"definition":         map[string]any{"linkSupport": true},
		"implementation":     map[string]any{"linkSupport": true},
		"references":         map[string]any{},
		"hover":              map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
		"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
	},
	"workspace": map[string]any{"symbol": map[string]any{}, "workspaceFolders": true, "configuration": true},
	"window":    map[string]any{"workDoneProgress": false},
}

// watch waits for the process to end and records its death.
func (s *server) watch(gen int, cmd *exec.Cmd, proc *process, conn jsonrpc2.Conn, stderr *tailBuffer) {
	err := cmd.Wait()
	kill(cmd.Process) // what it left running in its group
	close(proc.exited)
	conn.Close()
	why := "it exited"
	switch {
	case conn.Err() != nil:
		why = "its connection failed: " + conn.Err().Error()
	case err != nil:
		why = err.Error()
	}
	if last := stderr.last(); last != "" {
		why += ": " + tools.Clip(last, 300)
	}
	s.fail(gen, errors.New(why))
}

// fail records that the start or the process of generation gen failed.
func (s *server) fail(gen int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || s.state == failed || s.state == stopped {
		return
	}
	if s.state == ready && time.Since(s.readyAt) > stableAfter {
		s.failures = 0
	}
	s.failures++
	s.state, s.err, s.retryAt = failed, err, time.Now().Add(backoff(s.failures))
	s.m.log("language server %s of %s stopped: %v (restart in %s)", s.spec.Name, s.root, err, backoff(s.failures))
	s.endLocked()
}

// stopLocked stops the server on purpose (idle, closed): no failure is
// counted. s.mu is held. The process ends in the background; done is
// closed once it did.
func (s *server) stopLocked(why string) (done <-chan struct{}) {
	ch := make(chan struct{})
	if s.state == stopped || s.state == failed {
		close(ch)
		return ch
	}
	s.gen++
	s.state, s.err = stopped, errors.New(why)
	conn, proc := s.conn, s.proc
	s.endLocked()
	go func() {
		defer close(ch)
		shutdown(conn, proc)
	}()
	return ch
}

// endLocked forgets the process: waiters wake, documents and diagnostics
// go. s.mu is held.
func (s *server) endLocked() {
	select {
	case <-s.ready:
	default:
		close(s.ready)
	}
	s.conn, s.proc = nil, nil
	s.docs, s.diags = nil, nil
	s.publishedLocked()
}

// shutdown asks a server to end, then kills what is left of it. The
// process's watch closes the connection once it ended.
func shutdown(conn jsonrpc2.Conn, proc *process) {
	if conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if _, err := conn.Call(ctx, "shutdown", nil, nil); err == nil {
			conn.Notify(ctx, "exit", nil)
		}
		cancel()
	}
	if proc != nil {
		select {
		case <-proc.exited:
		case <-time.After(2 * time.Second):
		}
		kill(proc.p)
	}
}

// kill ends a process and its group (it runs in a session of its own).
func kill(p *os.Process) {
	if p != nil {
		killGroup(p)
		p.Kill()
	}
}

// publishedLocked wakes the waiters for diagnostics. s.mu is held.
func (s *server) publishedLocked() {
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

// handler answers what a server sends: diagnostics are kept (bounded, only
// for files of the project), the requests a client must answer get the
// plainest answer, and the rest is ignored.
func (s *server) handler(gen int) jsonrpc2.Handler {
	return func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		params := req.Params()
		switch req.Method() {
		case "textDocument/publishDiagnostics":
			s.publish(gen, json.RawMessage(params))
			return nil, nil
		case "workspace/configuration":
			var p struct {
				Items []json.RawMessage `json:"items"`
			}
			json.Unmarshal(params, &p)
			return make([]any, min(len(p.Items), 100)), nil
		case "workspace/workspaceFolders":
			return []map[string]string{{"uri": string(uri.File(s.root)), "name": filepath.Base(s.root)}}, nil
		case "workspace/applyEdit":
			return map[string]any{"applied": false, "failureReason": "agent-lsp applies no edit of a language server"}, nil
		case "window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability", "window/showMessageRequest",
			"workspace/diagnostic/refresh", "workspace/semanticTokens/refresh", "workspace/inlayHint/refresh", "workspace/codeLens/refresh",
			"workspace/inlineValue/refresh", "workspace/foldingRange/refresh", "window/showDocument":
			return nil, nil
		}
		if req.IsCall() {
			return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "agent-lsp does not answer %s", req.Method())
		}
		return nil, nil
	}
}

// wireDiagnostic reads LSP's Diagnostic leniently: a message may be a
// string or MarkupContent, a code a number or a string.
type wireDiagnostic struct {
	Range    protocol.Range  `json:"range"`
	Severity int             `json:"severity"`
	Code     json.RawMessage `json:"code"`
	Source   string          `json:"source"`
	Message  json.RawMessage `json:"message"`
}

func (w wireDiagnostic) diagnostic() tools.Diagnostic {
	d := tools.Diagnostic{Severity: w.Severity, Source: tools.Clip(w.Source, 100),
		Range: workspace.Range{Start: workspace.Position(w.Range.Start), End: workspace.Position(w.Range.End)}}
	d.Message, d.Code = tools.DiagnosticText(w.Message, w.Code)
	return d
}

// publish keeps a publishDiagnostics of a file inside the project,
// bounded.
func (s *server) publish(gen int, params json.RawMessage) {
	var p struct {
		URI         string           `json:"uri"`
		Version     *int32           `json:"version"`
		Diagnostics []wireDiagnostic `json:"diagnostics"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	items := make([]tools.Diagnostic, 0, min(len(p.Diagnostics), maxPerFile))
	for i, w := range p.Diagnostics {
		if i == maxPerFile {
			break
		}
		items = append(items, w.diagnostic())
	}
	s.keep(gen, tools.FilePath(p.URI), items, len(p.Diagnostics), p.Version, false)
}

// keep records a file's diagnostics (total is how many the server sent):
// only of a file inside the project, within the bounds.
func (s *server) keep(gen int, path string, items []tools.Diagnostic, total int, version *int32, pulled bool) {
	if path == "" || !within(s.root, path) {
		return // never a file outside the project
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || s.diags == nil {
		return
	}
	s.dropped += total - len(items)
	old, ok := s.diags[path]
	if !ok && len(s.diags) >= maxFiles {
		s.dropped += len(items)
		return
	}
	if ok && old.pulled && !pulled && version == nil {
		return // a push that may predate what was asked for
	}
	s.diags[path] = &fileDiags{items: items, version: version, at: time.Now(), pulled: pulled}
	s.publishedLocked()
}

// within reports whether path is root or below it (lexically: both clean).
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

// mark is what a sync sent for one file, to know when its diagnostics
// reflect it.
type mark struct {
	path    string
	version int32
	changed bool // a didOpen or didChange was sent
	at      time.Time
}

// languageID is LSP's language identifier of a file.
func languageID(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".go":
		return "go"
	case ".mod":
		return "go.mod"
	case ".ts", ".mts", ".cts":
		return "typescript"
	case ".tsx":
		return "typescriptreact"
	case ".js", ".mjs", ".cjs":
		return "javascript"
	case ".jsx":
		return "javascriptreact"
	case ".py", ".pyi":
		return "python"
	case ".rs":
		return "rust"
	case ".c", ".h":
		return "c"
	case ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx":
		return "cpp"
	default:
		return strings.TrimPrefix(ext, ".")
	}
}

// syncFile gives the server a file's text: didOpen the first time,
// didChange (the whole text) when it changed since.
func (s *server) syncFile(ctx context.Context, path, text string) (mark, error) {
	s.sync.Lock()
	defer s.sync.Unlock()
	s.mu.Lock()
	if s.state != ready {
		s.mu.Unlock()
		return mark{}, fmt.Errorf("%s is not running", s.spec.Name)
	}
	conn := s.conn
	u := string(uri.File(path))
	d := s.docs[path]
	now := time.Now()
	var closing []string
	if d == nil && len(s.docs) >= maxOpen {
		closing = append(closing, s.oldestLocked())
	}
	switch {
	case d == nil:
		d = &doc{version: 1, text: text}
		s.docs[path] = d
	case d.text == text:
		d.used = now
		m := mark{path: path, version: d.version, at: now}
		s.mu.Unlock()
		return m, nil
	default:
		d.version++
		d.text = text
	}
	d.used = now
	version := d.version
	for _, c := range closing {
		delete(s.docs, c)
	}
	s.mu.Unlock()
	for _, c := range closing {
		conn.Notify(ctx, "textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": string(uri.File(c))}})
	}
	var err error
	if version == 1 {
		err = conn.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": u, "languageId": languageID(path), "version": version, "text": text}})
	} else {
		err = conn.Notify(ctx, "textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": u, "version": version},
			"contentChanges": []map[string]string{{"text": text}}})
	}
	if err != nil {
		return mark{}, fmt.Errorf("send %s to %s: %w", filepath.Base(path), s.spec.Name, err)
	}
	return mark{path: path, version: version, changed: true, at: now}, nil
}

// oldestLocked is the open document used least recently. s.mu is held.
func (s *server) oldestLocked() string {
	var oldest string
	var at time.Time
	for p, d := range s.docs {
		if oldest == "" || d.used.Before(at) {
			oldest, at = p, d.used
		}
	}
	return oldest
}

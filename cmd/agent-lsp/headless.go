package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/daemon"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/postgres"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// client is the headless LSP client: it applies edits to disk, denies what
// was not allowed, and prints the transcript.
type client struct {
	json    bool
	verbose bool // the server's log lines go to errw too
	out     *bufio.Writer
	errw    io.Writer
	mu      sync.Mutex // guards out, errw, tr, rep and ended
	tr      *transcript.Writer
	enc     workspace.Encoding
	rep     report // what the events told, for the result (result.go)
	// ended is set once the result is printed: nothing follows it (a
	// queued prompt's session goes on, and its events still arrive).
	ended bool
}

// printEvent prints one agent/event: the raw line with --json, else the
// transcript on stderr. An event of a kind this binary does not know is
// passed through as JSON and skipped in the transcript.
func (c *client) printEvent(raw json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	var e event.Event
	known := json.Unmarshal(raw, &e) == nil
	if known {
		c.rep.event(e)
	}
	if c.json {
		c.out.Write(raw)
		c.out.WriteByte('\n')
		c.out.Flush()
		return
	}
	if known {
		c.tr.Event(e)
	}
}

// handle runs notifications in arrival order on the read loop (so events
// print in order) and answers requests asynchronously.
func (c *client) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	params := json.RawMessage(append([]byte(nil), req.Params()...))
	method := strings.Clone(req.Method())
	if req.IsCall() {
		jsonrpc2.Async(ctx)
	}
	switch method {
	case "agent/event":
		c.printEvent(params)
		return nil, nil
	case "window/logMessage", "window/showMessage":
		var p struct {
			Type    int
			Message string
		}
		json.Unmarshal(params, &p)
		if method == "window/logMessage" && !c.verbose && (p.Type > 2 || runFailedLine.MatchString(p.Message)) {
			// The server's info and log lines, and its log of the run's
			// failure, which the result says in the CLI's words; its other
			// errors and warnings (an MCP server not started) are the user's.
			return nil, nil
		}
		c.mu.Lock()
		fmt.Fprintln(c.errw, p.Message)
		c.mu.Unlock()
		return nil, nil
	case "workspace/applyEdit":
		return c.applyEdit(params), nil
	case "window/showMessageRequest":
		return map[string]string{"title": server.Deny}, nil // not allowed by --allow
	case "window/workDoneProgress/create":
		return nil, nil
	}
	if req.IsCall() {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "headless client: %s", method)
	}
	return nil, nil
}

// applyEdit writes a WorkspaceEdit's documentChanges to disk. Every file is
// written whole (workspace.WriteAtomic): a new file with its content in one
// write, an edited one replaced by its new text, so a kill at any moment
// leaves each file with its old text or its new. The answer is applied:
// false only when no file was changed (the files written before a failed
// one are written back); a file rewritten in place says so in "note".
func (c *client) applyEdit(params json.RawMessage) map[string]any {
	var p struct {
		Edit struct {
			DocumentChanges   []headlessChange `json:"documentChanges"`
			ChangeAnnotations map[string]struct {
				NeedsConfirmation bool   `json:"needsConfirmation"`
				Description       string `json:"description"`
			} `json:"changeAnnotations"`
		} `json:"edit"`
	}
	fail := func(err error) map[string]any { return map[string]any{"applied": false, "failureReason": err.Error()} }
	if err := json.Unmarshal(params, &p); err != nil {
		return fail(err)
	}
	var paths []string // the files it changes: as they were before (--diff), or denied
	for _, ch := range p.Edit.DocumentChanges {
		paths = append(paths, uri.URI(cmp.Or(ch.URI, ch.TextDocument.URI)).FsPath())
	}
	for _, a := range p.Edit.ChangeAnnotations {
		if a.NeedsConfirmation { // nobody can confirm it here
			c.touching(paths, true)
			return fail(fmt.Errorf("it needs the user's confirmation (%s), which a headless run cannot give; --allow-edit PATTERN lets it edit the protected files PATTERN names (never a file with hard links)", a.Description))
		}
	}
	c.touching(paths, false)
	files, err := c.planEdit(p.Edit.DocumentChanges)
	if err != nil {
		return fail(err)
	}
	var notes []string
	for i, f := range files {
		w, err := f.apply()
		if err != nil {
			var damaged *workspace.DamagedError
			if errors.As(err, &damaged) { // changed, though not as the edit says: the result's check tells the model
				c.mu.Lock()
				fmt.Fprintf(c.errw, "agent-lsp: %v\n", err)
				c.mu.Unlock()
				return map[string]any{"applied": true, "failureReason": err.Error()}
			}
			if rerr := undo(files[:i]); rerr != nil {
				return map[string]any{"applied": true, "failureReason": fmt.Sprintf("%v; the files written before it could not be written back: %v", err, rerr)}
			}
			return fail(err)
		}
		if n := w.Note(); n != "" {
			notes = append(notes, f.path+": "+n)
			c.mu.Lock()
			fmt.Fprintf(c.errw, "agent-lsp: %s was %s\n", f.path, n)
			c.mu.Unlock()
		}
	}
	res := map[string]any{"applied": true}
	if len(notes) > 0 {
		res["note"] = strings.Join(notes, "; ")
	}
	return res
}

// headlessChange is one of a WorkspaceEdit's documentChanges: a create
// (Kind "create") or a TextDocumentEdit.
type headlessChange struct {
	Kind         string `json:"kind"`
	URI          string `json:"uri"`
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Edits []struct {
		Range   workspace.Range `json:"range"`
		NewText string          `json:"newText"`
	} `json:"edits"`
}

// headlessFile is a file an edit writes: its path, its text before
// (existed: it had one) and after.
type headlessFile struct {
	path      string
	existed   bool
	deleted   bool // the edit deletes it
	old, text string
}

// planEdit computes every file's new text before any is written: a create
// and the edits that follow it make one new file.
func (c *client) planEdit(changes []headlessChange) ([]*headlessFile, error) {
	var files []*headlessFile
	byPath := map[string]*headlessFile{}
	for _, ch := range changes {
		switch {
		case ch.Kind == "create":
			path := uri.URI(ch.URI).FsPath()
			if _, err := os.Lstat(path); err == nil || byPath[path] != nil {
				return nil, fmt.Errorf("%s exists", path)
			}
			f := &headlessFile{path: path}
			files, byPath[path] = append(files, f), f
		case ch.Kind == "delete": // a rewind deletes a file the agent created
			path := uri.URI(ch.URI).FsPath()
			b, err := os.ReadFile(path)
			if err != nil || byPath[path] != nil {
				return nil, fmt.Errorf("delete %s: %v", path, cmp.Or(err, errors.New("changed twice")))
			}
			f := &headlessFile{path: path, existed: true, old: string(b), deleted: true}
			files, byPath[path] = append(files, f), f
		case ch.Kind != "":
			return nil, fmt.Errorf("unsupported change %q", ch.Kind)
		default:
			path := uri.URI(ch.TextDocument.URI).FsPath()
			f := byPath[path]
			if f == nil {
				b, err := os.ReadFile(path)
				if err != nil {
					return nil, err
				}
				f = &headlessFile{path: path, existed: true, old: string(b), text: string(b)}
				files, byPath[path] = append(files, f), f
			}
			edits := make([]workspace.Change, len(ch.Edits))
			// LSP edits of one document refer to the original text: apply back to front.
			for i, e := range ch.Edits {
				r := e.Range
				edits[len(ch.Edits)-1-i] = workspace.Change{Range: &r, Text: e.NewText}
			}
			text, err := workspace.ApplyChanges(f.text, edits, c.enc)
			if err != nil {
				return nil, err
			}
			f.text = text
		}
	}
	return files, nil
}

// write makes text the file's whole content (a new file for one that did
// not exist: never over one that appeared since).
func (f *headlessFile) write(text string) (workspace.Written, error) {
	dir, name := filepath.Split(f.path)
	if !f.existed {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return workspace.Written{}, err
		}
	} else if real, err := filepath.EvalSymlinks(f.path); err == nil {
		dir, name = filepath.Split(real) // the file a symlink names is the one written
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return workspace.Written{}, err
	}
	defer r.Close()
	return workspace.WriteAtomic(r, name, []byte(text), !f.existed)
}

// apply writes f's new text, or deletes it.
func (f *headlessFile) apply() (workspace.Written, error) {
	if f.deleted {
		return workspace.Written{}, os.Remove(f.path)
	}
	return f.write(f.text)
}

// undo puts files back as they were before an edit that failed after
// writing them: their old text, or no file.
func undo(files []*headlessFile) error {
	var errs []error
	for _, f := range slices.Backward(files) {
		if f.deleted {
			f.existed = false
			_, err := f.write(f.old)
			errs = append(errs, err)
			continue
		}
		if !f.existed {
			errs = append(errs, os.Remove(f.path))
			continue
		}
		_, err := f.write(f.old)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

type pipeRWC struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p pipeRWC) Close() error {
	for _, c := range p.closers {
		c.Close()
	}
	return nil
}

// storeError is a shared store that cannot be reached: the run does not
// start.
type storeError struct{ err error }

func (e *storeError) Error() string { return "the session store: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// headless drives one run over JSON-RPC as an editor would, through the
// daemon of the store when one runs, else in-process (serving the daemon's
// address meanwhile, so that editors and the CLI reach the store), prints
// its result and returns the exit code.
func headless(f runFlags, prompt, model string, stdout, stderr io.Writer) int {
	ctx := context.Background()
	stderr = &syncWriter{w: stderr} // the store's warnings come from its own goroutines
	stream, served, err := serverFor(ctx, f, storeWarn(stderr))
	if err != nil {
		var se *storeError
		res := failed(err, errors.As(err, &se)) // a session that could not be stored: exit 2, as a setup error
		(&client{json: f.json, out: bufio.NewWriter(stdout), errw: stderr}).printResult(res, stdout)
		return res.exitCode()
	}
	cl := &client{json: f.json, verbose: f.verbose, out: bufio.NewWriter(stdout), errw: stderr, tr: transcript.New(stderr), enc: workspace.UTF8,
		rep: report{workspaces: f.workspaces}}
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(stream))
	conn.Go(ctx, cl.handle)
	defer conn.Close()

	res := cl.finish(cl.drive(ctx, conn, f, prompt), f, model)
	writeOutput(&res, f.output)
	cl.printResult(res, stdout)
	conn.Call(ctx, "shutdown", nil, nil)
	conn.Notify(ctx, "exit", nil)
	served(conn.Done())
	return res.exitCode()
}

// serverFor connects a headless run to a server: the daemon's, else one
// in-process. served waits for the server to end after exit.
//
// The store is opened here (not by the server), so that a run whose session
// cannot be stored does not start: a store that cannot be opened, and one
// that was damaged (salvaged on opening: sessions may be gone, which the
// user must hear of before going on), are a storeError. warn prints the
// store's warnings (damaged records it meets) on stderr.
func serverFor(ctx context.Context, f runFlags, warn func(string)) (stream io.ReadWriteCloser, served func(clientDone <-chan struct{}), err error) {
	opts := server.Options{Flags: f.settings, Logf: func(string, ...any) {}}
	st, _, err := config.Resolve(os.Getenv, nil, f.settings)
	if err != nil {
		return nil, nil, err
	}
	if f.ephemeral {
		// Sessions in memory, served here: the store file, a database and
		// the daemon are never opened.
		opts.Hub = server.NewHub(store.NewMemory(), st.StorePath)
		stream, wait := inProcess(ctx, opts)
		return stream, func(<-chan struct{}) { wait() }, nil
	}
	if postgres.IsURL(st.StorePath) {
		// A shared database: reached from here, no daemon. A run whose
		// session cannot be stored does not start (a CI job's later
		// --resume depends on it).
		cctx, cancel := context.WithTimeout(ctx, 2*postgres.ConnectTimeout)
		db, err := postgres.Open(cctx, st.StorePath, postgres.WithDefaultDurability(st.Durability), postgres.WithWarn(warn))
		cancel()
		if err != nil {
			return nil, nil, &storeError{err}
		}
		opts.Hub = server.NewHub(db, st.StorePath) // the server uses this store: it cannot fall back to memory
		stream, wait := inProcess(ctx, opts)
		return stream, func(<-chan struct{}) { wait(); db.Close() }, nil
	}
	if !f.noDaemon && daemonEnabled(os.Getenv) {
		path, err := filepath.Abs(st.StorePath)
		if err != nil {
			return nil, nil, err
		}
		dir, _ := os.Getwd()
		s, err := daemon.Dial(path, daemon.Hello{Op: "serve", Env: os.Environ(), Dir: dir, Args: append(f.settings.Args(), "-store="+path)})
		switch {
		case err == nil:
			cs := &connStream{s: s, ended: make(chan struct{})}
			return cs, func(clientDone <-chan struct{}) { // the daemon ends the connection after exit
				select {
				case <-cs.ended:
				case <-clientDone: // the client stopped reading (at the daemon's end frame)
				case <-time.After(10 * time.Second):
				}
				s.Conn.Close()
			}, nil
		case !daemon.IsNoDaemon(err):
			var unsafe *daemon.UnsafeDirError
			if errors.As(err, &unsafe) {
				return nil, nil, &storeError{err} // the run could not be stored: exit 2
			}
			return nil, nil, err
		}
		// None runs: serve the store here, and its address while the run lives.
		d, err := daemon.Open(ctx, daemon.Config{Store: path, Idle: -1, Sessions: sessionsOn, Warn: warn})
		if err != nil { // unwritable, or held by a server without a daemon: the run could not be stored
			return nil, nil, &storeError{err}
		}
		if r := d.Recovered(); r != "" {
			d.Close()
			return nil, nil, damagedStore(r)
		}
		if err := d.Listen(); err == nil {
			go d.Serve(ctx)
		}
		opts.Hub = d.Hub()
		stream, served := inProcess(ctx, opts)
		return stream, func(<-chan struct{}) { served(); d.Close() }, nil
	}
	db, err := store.Open(st.StorePath, store.WithDefaultDurability(st.Durability), store.WithWarn(warn))
	if err != nil { // held by a daemon or an editor's server, or unwritable: the run could not be stored
		return nil, nil, &storeError{err}
	}
	if r := db.Recovered(); r != "" {
		db.Close()
		return nil, nil, damagedStore(r)
	}
	opts.Hub = server.NewHub(db, st.StorePath)
	stream, wait := inProcess(ctx, opts)
	return stream, func(<-chan struct{}) { wait(); db.Close() }, nil
}

// runFailedLine is the server's log line of a session that failed (the
// runtime's), which the result repeats.
var runFailedLine = regexp.MustCompile(`^agent-lsp: session \S+ failed: `)

// damagedStore is the refusal of a run whose store file was damaged and has
// just been salvaged: what was kept and lost, and how to go on.
func damagedStore(report string) error {
	return &storeError{fmt.Errorf("%s; the run did not start: run it again to go on with the salvaged store ('agent-lsp sessions check' verifies it)", strings.TrimSpace(report))}
}

// storeWarn prints the store's warnings on w, one line each.
func storeWarn(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(w, "agent-lsp run: the session store: %s\n", msg) }
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// inProcess starts a server in this process.
func inProcess(ctx context.Context, opts server.Options) (io.ReadWriteCloser, func()) {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan struct{})
	go func() {
		server.Serve(ctx, c2sR, s2cW, opts)
		s2cW.Close()
		close(done)
	}()
	return pipeRWC{s2cR, c2sW, []io.Closer{c2sW, s2cR}}, func() { <-done }
}

// connStream is a daemon connection as the client's stream; ended is
// closed when reading it ends (the daemon closed the connection).
type connStream struct {
	s     *daemon.Session
	ended chan struct{}
	once  sync.Once
}

func (c *connStream) Read(p []byte) (int, error) {
	n, err := c.s.Reader.Read(p)
	if err != nil {
		c.once.Do(func() { close(c.ended) })
	}
	return n, err
}
func (c *connStream) Write(p []byte) (int, error) { return c.s.Conn.Write(p) }
func (c *connStream) Close() error                { return c.s.Conn.Close() }

// drive initializes the server and runs the command, cancelling it on SIGINT
// or SIGTERM (a second signal quits at once).
func (cl *client) drive(ctx context.Context, conn jsonrpc2.Conn, f runFlags, prompt string) resultLine {
	var folders []map[string]string
	for _, w := range f.workspaces {
		folders = append(folders, map[string]string{"uri": string(uri.File(w)), "name": filepath.Base(w)})
	}
	var initRes struct {
		Capabilities struct {
			PositionEncoding string `json:"positionEncoding"`
		} `json:"capabilities"`
	}
	if _, err := conn.Call(ctx, "initialize", map[string]any{
		"processId": nil, "workspaceFolders": folders, "rootUri": folders[0]["uri"],
		"capabilities": map[string]any{"general": map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}}},
		// Headless applies edits (review needs an editor) and cannot answer questions.
		"initializationOptions": map[string]any{"edits": "apply", "interactive": false},
	}, &initRes); err != nil {
		return rpcFailed(err)
	}
	if initRes.Capabilities.PositionEncoding == "utf-16" {
		cl.enc = workspace.UTF16
	}
	conn.Notify(ctx, "initialized", map[string]any{})

	const token = "headless"
	defer cl.cancelOnSignal(ctx, conn, token)()
	return cl.execute(ctx, conn, f, prompt, token)
}

// cancelOnSignal cancels the run on the first SIGINT or SIGTERM and exits on
// the second, until the returned func is called.
func (cl *client) cancelOnSignal(ctx context.Context, conn jsonrpc2.Conn, token string) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cl.mu.Lock()
			fmt.Fprintln(cl.errw, "\nagent-lsp run: cancelling (again to quit at once)…")
			cl.mu.Unlock()
			conn.Notify(ctx, "window/workDoneProgress/cancel", map[string]any{"token": token})
		case <-done:
			return
		}
		select {
		case <-sigs:
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/lsptest"
)

// writes records each Write.
type writes []string

func (w *writes) Write(p []byte) (int, error) { *w = append(*w, string(p)); return len(p), nil }

// The frames the daemon wrote together reach the editor in one write, and a
// frame that came alone goes on at once, before the next is read; the end
// frame's code is returned, and a daemon gone mid-stream is an error.
func TestCopyFrames(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	pr, pw := io.Pipe()
	var got writes
	type result struct {
		code int
		err  error
	}
	done := make(chan result)
	go func() {
		code, err := copyFrames(&got, bufio.NewReader(pr))
		done <- result{code, err}
	}()
	// One write of three frames, then one alone; a pipe hands each write
	// to one read, so copyFrames sees the burst buffered.
	pw.Write([]byte(frame(`{"a":1}`) + frame(`{"b":2}`) + frame(`{"c":3}`)))
	pw.Write([]byte(frame(`{"d":4}`)))
	pw.Write(endFrame(3))
	r := <-done
	if r.err != nil || r.code != 3 {
		t.Fatalf("copyFrames = %d, %v; want the end frame's 3", r.code, r.err)
	}
	want := writes{frame(`{"a":1}`) + frame(`{"b":2}`) + frame(`{"c":3}`), frame(`{"d":4}`)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the editor got %q, want %q", got, want)
	}

	got = nil
	code, err := copyFrames(&got, bufio.NewReader(strings.NewReader(frame(`{"e":5}`)+"Content-Length: 9\r\n\r\n{")))
	if err == nil || code != 0 {
		t.Fatalf("a cut stream: %d, %v", code, err)
	}
	if len(got) != 1 || got[0] != frame(`{"e":5}`) {
		t.Errorf("before the cut the editor got %q", got)
	}
	if errors.Is(err, errEditorGone) {
		t.Errorf("the daemon's end was taken for the editor's: %v", err)
	}
}

// openTestDaemon serves a daemon on a new store in this process until the test
// ends, logging into the returned function's result.
func openTestDaemon(t *testing.T) (d *Daemon, store string, logged func() string) {
	t.Helper()
	store = filepath.Join(t.TempDir(), "sessions.db")
	var mu sync.Mutex // guards log
	var log []string
	d, err := Open(context.Background(), Config{Store: store, Idle: -1, Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, fmt.Sprintf(format, args...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Listen(); err != nil {
		t.Fatal(err)
	}
	go d.Serve(context.Background())
	t.Cleanup(func() { d.Close() })
	return d, store, func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(log, "\n")
	}
}

// testForwarder is the forwarder an editor starts, for the daemon of store.
func testForwarder(store string) Forwarder {
	return Forwarder{Flags: config.Register(flag.NewFlagSet("agent-lsp", flag.ContinueOnError)),
		Environ: []string{"AGENT_LSP_STORE=" + store, "AGENT_LSP_LANDLOCK=false"}, Stderr: io.Discard}
}

// editorConn is an editor's JSON-RPC connection over r and w.
func editorConn(r io.Reader, w io.WriteCloser) *lsptest.Client {
	return lsptest.New(lsptest.Stream(r, w))
}

func lspCall(t *testing.T, conn *lsptest.Client, method string, params any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only to catch a hang
	defer cancel()
	if err := conn.Call(ctx, method, params, nil); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func waitCode(t *testing.T, code <-chan int) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-time.After(time.Minute): // only to catch a hang
		t.Fatal("the forwarder did not end after exit")
		return -1
	}
}

// streamKind is how a client's streams are made in a test: as pipes the
// forwarder hands over, or as in-memory pipes it copies.
type streamKind struct {
	name  string
	how   string // what the daemon logs of the connection
	pipes func() (clientIn io.ReadCloser, serverOut io.WriteCloser, serverIn io.ReadCloser, clientOut io.WriteCloser)
}

// serve makes tc's streams and runs forward (a forwarder) on the server's
// ends in the background, closing its output when it returns; it returns
// the client's ends and forward's exit code.
func (tc streamKind) serve(t *testing.T, forward func(in io.Reader, out io.Writer) int) (clientIn io.ReadCloser, clientOut io.WriteCloser, code <-chan int) {
	clientIn, serverOut, serverIn, clientOut := tc.pipes()
	t.Cleanup(func() { serverIn.Close() })
	c := make(chan int, 1)
	go func() {
		c <- forward(serverIn, serverOut)
		serverOut.Close()
	}()
	return clientIn, clientOut, c
}

func streamKinds(t *testing.T) []streamKind {
	handed := "the editor's streams handed over"
	if !handoffs {
		handed = "forwarded" // a platform without the handoff copies
	}
	return []streamKind{
		{"copied", "forwarded", func() (io.ReadCloser, io.WriteCloser, io.ReadCloser, io.WriteCloser) {
			r1, w1 := io.Pipe()
			r2, w2 := io.Pipe()
			return r1, w1, r2, w2
		}},
		{"handed off", handed, func() (io.ReadCloser, io.WriteCloser, io.ReadCloser, io.WriteCloser) {
			r1, w1, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r2, w2, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			return r1, w1, r2, w2
		}},
	}
}

// A forwarder serves an editor through the daemon both ways: handing the
// daemon its streams when they are pipes, copying them when they are not
// (or on a platform without the handoff); the server's exit code comes back
// either way.
func TestForward(t *testing.T) {
	_, path, logged := openTestDaemon(t)
	f := testForwarder(path)
	for _, tc := range streamKinds(t) {
		t.Run(tc.name, func(t *testing.T) {
			editorIn, editorOut, code := tc.serve(t, func(in io.Reader, out io.Writer) int { return f.Forward(context.Background(), in, out) })
			conn := editorConn(editorIn, editorOut)
			defer conn.Close()
			lspCall(t, conn, "initialize", map[string]any{"processId": nil, "capabilities": map[string]any{}})
			lspCall(t, conn, "shutdown", nil)
			conn.Notify(context.Background(), "exit", nil)
			if c := waitCode(t, code); c != 0 {
				t.Errorf("exit code %d after shutdown and exit", c)
			}
			opened := regexp.MustCompile(`\bconnection (\w+) opened \([^;]*; ` + regexp.QuoteMeta(tc.how) + `\)`)
			if log := logged(); len(opened.FindAllString(log, -1)) != 1 {
				t.Errorf("the daemon's log does not say, once, that this connection was %q:\n%s", tc.how, log)
			}
		})
	}
}

// An ACP client is served through the daemon both ways too: its streams
// handed over when they are pipes, copied when not.
func TestForwardACP(t *testing.T) {
	_, store, logged := openTestDaemon(t)
	f := testForwarder(store)
	for _, tc := range streamKinds(t) {
		t.Run(tc.name, func(t *testing.T) {
			folder := t.TempDir()
			var stderr strings.Builder
			f := f
			f.Stderr = &stderr
			clientIn, clientOut, code := tc.serve(t, func(in io.Reader, out io.Writer) int {
				return f.ForwardACP(context.Background(), in, out, []string{folder})
			})
			io.WriteString(clientOut, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
			line, err := bufio.NewReader(clientIn).ReadString('\n')
			if err != nil || !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"protocolVersion"`) {
				t.Fatalf("initialize: %q %v", line, err)
			}
			clientOut.Close() // the client ends
			if c := waitCode(t, code); c != 0 {
				t.Errorf("exit code %d after the client closed: %s\n%s", c, stderr.String(), logged())
			}
			opened := regexp.MustCompile(`ACP connection (\w+) opened \([^;]*; ` + regexp.QuoteMeta(tc.how) + `\)`)
			if log := logged(); len(opened.FindAllString(log, -1)) != 1 {
				t.Errorf("the daemon's log does not say, once, that this connection was %q:\n%s", tc.how, log)
			}
			clientIn.Close()
		})
	}
}

// Messages an editor writes ahead, before the forwarder has connected, reach
// the server once each, whether the forwarder passes its streams or copies
// them: the forwarder's reader may already hold them. The editor of the
// fixture then ends the connection twice (testdata/hostile/exit-twice.json):
// the server ends with status 0 and the daemon serves on (the next case is
// its next connection).
func TestForwardWrittenAhead(t *testing.T) {
	var fixture struct {
		Ahead, End []json.RawMessage
		Shutdown   json.RawMessage
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "exit-twice.json"))
	if err != nil || json.Unmarshal(raw, &fixture) != nil || len(fixture.Ahead) == 0 || len(fixture.End) == 0 {
		t.Fatalf("exit-twice.json: %v", err)
	}
	frames := func(msgs ...json.RawMessage) string {
		var b strings.Builder
		for _, m := range msgs {
			fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(m), m)
		}
		return b.String()
	}
	_, store, _ := openTestDaemon(t)
	f := testForwarder(store)
	for _, tc := range streamKinds(t) {
		t.Run(tc.name, func(t *testing.T) {
			editorIn, editorOut, code := tc.serve(t, func(in io.Reader, out io.Writer) int { return f.Forward(context.Background(), in, out) })
			r := bufio.NewReader(editorIn)
			var ids []string
			// answers reads messages until the answer to id, keeping the
			// ids of every answer.
			answers := func(id string) {
				t.Helper()
				for {
					_, body, err := readFrame(r, 1<<30)
					if err != nil {
						t.Fatalf("reading until the answer to %s: %v (answers so far: %v)", id, err, ids)
					}
					var m struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
					}
					json.Unmarshal(body, &m)
					if m.Method != "" {
						continue // a notification or a request of the server's
					}
					ids = append(ids, string(m.ID))
					if string(m.ID) == id {
						return
					}
				}
			}
			go io.WriteString(editorOut, frames(fixture.Ahead...))
			answers("1")
			answers("2")
			io.WriteString(editorOut, frames(fixture.Shutdown))
			answers("3")
			io.WriteString(editorOut, frames(fixture.End...))
			if c := waitCode(t, code); c != 0 {
				t.Errorf("exit code %d after shutdown and exit twice", c)
			}
			if fmt.Sprint(ids) != "[1 2 3]" {
				t.Errorf("answers to %v, want to 1, 2 and 3, once each", ids)
			}
		})
	}
}

// The forwarder reads the editor's first message as it comes: a header
// that claims 250 MB takes no memory until the bytes arrive, and a message
// over the server's 32 MiB limit is not read at all (the server refuses it
// by its header; its body follows unparsed).
func TestReadFrameHoldsOnlyWhatArrived(t *testing.T) {
	const claimed = 250 << 20
	body := strings.Repeat("x", 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	frame, _, err := readFrame(bufio.NewReader(strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", claimed, body))), claimed)
	runtime.ReadMemStats(&after)
	if err == nil || len(frame) > len(body)+64 {
		t.Fatalf("a cut message: %d bytes, %v", len(frame), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("reading 1 MiB of a message claiming 250 MB allocated %d MiB", alloc>>20)
	}

	r := bufio.NewReader(strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", claimed, body)))
	header, _, err := readFrame(r, maxFirstFrame)
	if err == nil || !strings.Contains(err.Error(), "over the") || string(header) != fmt.Sprintf("Content-Length: %d\r\n\r\n", claimed) {
		t.Fatalf("over the limit: %q, %v", header, err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != body {
		t.Fatalf("the body was read: %d bytes left", len(rest))
	}
}

// A frame larger than wholeFrame streams through copyFrames intact.
func TestCopyFramesLargeFrame(t *testing.T) {
	body := `{"x":"` + strings.Repeat("y", 3<<20) + `"}`
	in := fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) + string(endFrame(0))
	var out bytes.Buffer
	code, err := copyFrames(&out, bufio.NewReader(strings.NewReader(in)))
	if err != nil || code != 0 || out.String() != fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) {
		t.Fatalf("%d %v, %d bytes", code, err, out.Len())
	}
}

// A daemon that accepts the connection and never answers (hung) is one
// that cannot be reached: after the handshake's timeout the window serves
// itself, and is told why.
func TestForwardFallsBackFromAHungDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the handshake's timeout")
	}
	store := filepath.Join(t.TempDir(), "sessions.db")
	l, name, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	if err := writeSidecar(store, sidecar{Socket: name, Pid: os.Getpid(), Version: Version(), Handshake: handshakeVersion()}); err != nil {
		t.Fatal(err)
	}
	f := testForwarder(store)
	var stderr strings.Builder
	f.Stderr = &stderr
	var notices []string
	f.Serve = func(_ context.Context, in io.Reader, _ io.Writer, n []string) int {
		notices = n
		io.Copy(io.Discard, in)
		return 7
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}`
	code := f.Forward(context.Background(), strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(init), init)), io.Discard)
	if code != 7 || len(notices) != 1 || !strings.Contains(notices[0], "daemon handshake") || !strings.Contains(notices[0], "serves itself") {
		t.Fatalf("exit %d, notices %q, stderr %s", code, notices, stderr.String())
	}
}

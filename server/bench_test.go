//go:build unix

package server_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/lsptest"
)

var (
	benchOnce   sync.Once
	benchBinary string
)

// plainBinary builds agent-lsp without the race detector, for timing.
func plainBinary(b *testing.B) string {
	benchOnce.Do(func() {
		benchBinary = filepath.Join(os.TempDir(), "agent-lsp-bench")
		if out, err := exec.Command("go", "build", "-o", benchBinary, "../cmd/agent-lsp").CombinedOutput(); err != nil {
			b.Fatalf("build: %v\n%s", err, out)
		}
	})
	return benchBinary
}

// BenchmarkInitialize measures process start to initialize response.
func BenchmarkInitialize(b *testing.B) {
	bin := plainBinary(b)
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "AGENT_LSP_DAEMON=off", "AGENT_LSP_STORE="+filepath.Join(dir, "s.db"), "OPENAI_API_KEY=x")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		conn := lsptest.New(lsptest.Stream(out, in))
		if err := conn.Call(context.Background(), "initialize", map[string]any{"rootUri": string(uri.File(dir)), "capabilities": map[string]any{}}, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		conn.Call(context.Background(), "shutdown", nil, nil)
		conn.Notify(context.Background(), "exit", nil)
		cmd.Wait()
		conn.Close()
		b.StartTimer()
	}
}

// inProcess serves in this process over pipes and counts agent/event notifications.
type inProcess struct {
	conn   *lsptest.Client
	events atomic.Int64
	done   chan error
}

func startInProcess(b *testing.B, srv *scripted.Server, root string) *inProcess {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	p := &inProcess{done: make(chan error, 1)}
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "x", "AGENT_LSP_MODEL": "scripted", "AGENT_LSP_STORE": filepath.Join(b.TempDir(), "s.db")}
	go func() {
		p.done <- server.Serve(context.Background(), c2sR, s2cW, server.Options{Getenv: func(k string) string { return env[k] }})
		s2cW.Close()
	}()
	p.conn = lsptest.New(lsptest.Stream(s2cR, c2sW))
	// The events are counted, not kept, in the connection's reading
	// goroutine: an editor's client runs in its own process, so what it does
	// per message is kept from the time measured here as far as it can be.
	// The client applies every edit.
	p.conn.Handle("agent/event", func(context.Context, json.RawMessage) (any, error) {
		p.events.Add(1)
		return nil, nil
	})
	if err := p.conn.Call(context.Background(), "initialize", map[string]any{"rootUri": string(uri.File(root)), "capabilities": map[string]any{}, "initializationOptions": map[string]any{"maxSteps": 1000}}, nil); err != nil {
		b.Fatal(err)
	}
	return p
}

func (p *inProcess) run(b *testing.B, prompt string) {
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	err := p.conn.Command(context.Background(), "agent.run", map[string]any{"prompt": prompt}, &res)
	if err != nil || res.Status != "done" {
		b.Fatalf("run: %v %+v", err, res)
	}
}

func (p *inProcess) close() {
	p.conn.Call(context.Background(), "shutdown", nil, nil)
	p.conn.Notify(context.Background(), "exit", nil)
	<-p.done
	p.conn.Close()
}

// startOnSample serves in this process on a copy of the sample workspace,
// against a scripted model (its script set by each run); both end with b.
func startOnSample(b *testing.B) (*scripted.Server, *inProcess) {
	srv, _ := scripted.Start("127.0.0.1:0", scripted.Script{})
	b.Cleanup(func() { srv.Close() })
	root := filepath.Join(b.TempDir(), "sample")
	os.CopyFS(root, os.DirFS("../testdata/workspaces/sample"))
	p := startInProcess(b, srv, root)
	b.Cleanup(p.close)
	return srv, p
}

// readGreetTurns is n turns that each read greet.go (saying text), then
// the answer "done".
func readGreetTurns(n int, text string) []scripted.Turn {
	var turns []scripted.Turn
	for range n {
		turns = append(turns, scripted.Turn{Text: text, ToolCalls: []scripted.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"greet.go"}`)}}})
	}
	return append(turns, scripted.Turn{Text: "done"})
}

// BenchmarkRunOverhead runs agent.run against a zero-latency scripted model
// with 10 and 50 tool turns and reports the time per turn, and the server's
// own (server-ns/turn: less the scripted model's time answering), and the
// server's beyond the model call (beyond-model-ns/turn: less also
// exchange-ns, the HTTP exchange of a turn's model call alone, measured by
// replaying the last run's requests without the server). Profile one
// turn with, e.g., -bench 'RunOverhead/turns=50' -cpuprofile cpu.out: the
// scripted model's frames are agent/scripted's.
func BenchmarkRunOverhead(b *testing.B) {
	for _, n := range []int{10, 50} {
		b.Run("turns="+strconv.Itoa(n), func(b *testing.B) {
			turns := readGreetTurns(n, "")
			srv, p := startOnSample(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				srv.SetScript(scripted.Script{Turns: turns})
				b.StartTimer()
				p.run(b, "read it "+strconv.Itoa(n)+" times")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/turn")
			// The scripted model runs in this process: its own time is not the server's.
			serverNs := float64(b.Elapsed().Nanoseconds()-srv.Served().Nanoseconds()) / float64(b.N*(n+1))
			b.ReportMetric(serverNs, "server-ns/turn")
			b.ReportMetric(float64(p.events.Load())/float64(b.N*(n+1)), "events/turn")
			b.StopTimer()
			// A turn is one model call: its HTTP exchange alone, replayed,
			// is the floor under the call; the rest is the server's.
			floor, err := srv.ExchangeFloor(turns, func(bodies [][]byte) (time.Duration, error) {
				return scripted.Exchange(context.Background(), srv.URL, bodies)
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(floor.Nanoseconds()), "exchange-ns")
			b.ReportMetric(serverNs-float64(floor.Nanoseconds()), "beyond-model-ns/turn")
		})
	}
}

// BenchmarkEventStream streams 10,000 text deltas from the model to the client.
func BenchmarkEventStream(b *testing.B) {
	text := strings.Repeat("x", 10000)
	srv, _ := scripted.Start("127.0.0.1:0", scripted.Script{})
	defer srv.Close()
	root := b.TempDir()
	p := startInProcess(b, srv, root)
	defer p.close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		srv.SetScript(scripted.Script{Turns: []scripted.Turn{{Text: text, Chunk: 1}}})
		b.StartTimer()
		p.run(b, "stream")
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "deltas/s")
	b.ReportMetric(float64(p.events.Load())/float64(b.N), "events/run")
}

// BenchmarkToolCallWrites runs a session of 200 read_file calls through the
// server (default durability, batched) and reports what the process wrote
// to storage per tool call (/proc/self/io write_bytes: the store's commits;
// the in-process scripted model writes nothing).
func BenchmarkToolCallWrites(b *testing.B) {
	const calls = 200
	turns := readGreetTurns(calls, "Reading greet.go again.")
	srv, p := startOnSample(b)
	var written int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		srv.SetScript(scripted.Script{Turns: turns})
		before := procWriteBytes()
		b.StartTimer()
		p.run(b, "read it two hundred times")
		written += procWriteBytes() - before
	}
	b.ReportMetric(float64(written)/float64(b.N*calls), "disk-bytes/call")
}

// procWriteBytes is this process's write_bytes from /proc/self/io (0 where
// it cannot be read).
func procWriteBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/lsptest"
)

// benchBinaryEnv names another binary (or a wrapper that runs one) for the
// benchmarks to start instead: an earlier build to compare with in the
// same hour, or scripts/turn-instructions.sh's valgrind wrapper.
const benchBinaryEnv = "AGENT_LSP_BENCH_BINARY"

// The binary the benchmarks run: without -race (binary has it, which
// inflates every timing), built once; or the one benchBinaryEnv names.
func benchBinary(b *testing.B) string {
	if bin := os.Getenv(benchBinaryEnv); bin != "" {
		return bin
	}
	return variant(b, "", "")
}

// benchServer is agent-lsp started as an editor starts it, with a JSON-RPC
// client over its stdio (window needs a *testing.T).
type benchServer struct {
	cmd    *exec.Cmd
	conn   *lsptest.Client
	stderr bytes.Buffer
	exited chan struct{}
	store  string // the store's path, when startBenchWindow started it
}

func startServer(b *testing.B, bin string, env []string) *benchServer {
	b.Helper()
	s := &benchServer{cmd: exec.Command(bin), exited: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), env...)
	stdin, _ := s.cmd.StdinPipe()
	stdout, _ := s.cmd.StdoutPipe()
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	s.conn = lsptest.New(lsptest.Stream(stdout, stdin))
	// A run's many events and progress reports are dropped, not kept: only the server's time is measured.
	drop := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	s.conn.Handle("agent/event", drop)
	s.conn.Handle("$/progress", drop)
	return s
}

func (s *benchServer) call(b *testing.B, method string, params, result any) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.conn.Call(ctx, method, params, result); err != nil {
		b.Fatalf("%s: %v\n%s", method, err, s.stderr.String())
	}
}

func (s *benchServer) initialize(b *testing.B, ws string) {
	s.call(b, "initialize", map[string]any{"processId": nil, "capabilities": map[string]any{},
		"workspaceFolders":      []map[string]string{{"uri": string(uri.File(ws)), "name": "sample"}},
		"initializationOptions": map[string]any{"maxSteps": 1000}}, nil)
	s.conn.Notify(context.Background(), "initialized", map[string]any{})
}

// close ends the server as an editor does and waits (bounded) for it.
func (s *benchServer) close(b *testing.B) {
	s.call(b, "shutdown", nil, nil)
	s.conn.Notify(context.Background(), "exit", nil)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		b.Fatalf("the server did not exit\n%s", s.stderr.String())
	}
	s.conn.Close()
}

// benchSetup is a workspace, a model endpoint and a fresh store directory.
func benchSetup(b *testing.B) (ws string, srv *scripted.Server, dir string) {
	dir = b.TempDir()
	ws = filepath.Join(dir, "sample")
	if err := os.CopyFS(ws, os.DirFS("../../testdata/workspaces/sample")); err != nil {
		b.Fatal(err)
	}
	srv, err := scripted.Start("127.0.0.1:0", scripted.Script{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	return ws, srv, dir
}

// stopBenchDaemon stops the daemon of store and waits until its process is gone.
func stopBenchDaemon(b *testing.B, bin, store string) {
	exec.Command(bin, "daemon", "stop", "--now", "--store", store).Run()
	for deadline := time.Now().Add(30 * time.Second); len(serving(store)) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the daemon of %s did not exit", store)
		}
	}
}

// startBenchWindow starts agent-lsp as an editor starts it, in-process or
// through the daemon (stopped when b ends), initialized on a copy of the
// sample workspace, with the model endpoint it uses.
func startBenchWindow(b *testing.B, daemon bool) (*benchServer, *scripted.Server) {
	bin := benchBinary(b)
	ws, srv, dir := benchSetup(b)
	store := filepath.Join(dir, "sessions.db")
	mode := "AGENT_LSP_DAEMON=off"
	if daemon {
		mode = "AGENT_LSP_DAEMON=on"
		b.Cleanup(func() { stopBenchDaemon(b, bin, store) })
	}
	s := startServer(b, bin, daemonEnv(store, srv, mode, "AGENT_LSP_DAEMON_IDLE=1h"))
	s.store = store
	s.initialize(b, ws)
	return s, srv
}

// One request and its response (workspace/executeCommand agent.projects)
// between an editor and agent-lsp: served in-process, through the daemon
// (the process the editor started hands the daemon its pipes), to the
// daemon over its socket, and the floor: a small message to and fro over an
// abstract Unix socket.
func BenchmarkForwarderRoundTrip(b *testing.B) {
	request := map[string]any{"command": "agent.projects", "arguments": []any{map[string]any{}}}
	serve := func(b *testing.B, daemon bool) {
		s, _ := startBenchWindow(b, daemon)
		var projects []map[string]any
		s.call(b, "workspace/executeCommand", request, &projects) // warm up
		if len(projects) != 1 {
			b.Fatalf("agent.projects: %v", projects)
		}
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			s.call(b, "workspace/executeCommand", request, nil)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/float64(b.N), "µs/op")
		s.close(b)
	}
	b.Run("in-process", func(b *testing.B) { serve(b, false) })
	b.Run("forwarder", func(b *testing.B) { serve(b, true) })
	// The daemon without the forwarder: this process says hello on the
	// daemon's socket itself (as a headless run does), which tells the
	// forwarder's own share from the daemon's.
	b.Run("daemon-direct", func(b *testing.B) {
		bin := benchBinary(b)
		ws, srv, dir := benchSetup(b)
		store := filepath.Join(dir, "sessions.db")
		env := daemonEnv(store, srv, "AGENT_LSP_DAEMON=on", "AGENT_LSP_DAEMON_IDLE=1h")
		b.Cleanup(func() { stopBenchDaemon(b, bin, store) })
		s := startServer(b, bin, env) // starts the daemon
		s.initialize(b, ws)
		s.close(b)
		var sc struct{ Socket string }
		raw, err := os.ReadFile(store + ".daemon")
		if err != nil || json.Unmarshal(raw, &sc) != nil {
			b.Fatalf("sidecar: %v %s", err, raw)
		}
		c, err := net.Dial("unix", sc.Socket)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		hello, _ := json.Marshal(map[string]any{"handshake": currentHandshake(b), "version": server.Version, "op": "serve",
			"env": env, "dir": ws, "args": []string{"-store=" + store}})
		c.Write(append(hello, '\n'))
		br := bufio.NewReader(c)
		if line, err := br.ReadBytes('\n'); err != nil || bytes.Contains(line, []byte(`"error"`)) {
			b.Fatalf("welcome: %v %s", err, line)
		}
		conn := lsptest.New(lsptest.Stream(br, c))
		defer conn.Close()
		ds := &benchServer{conn: conn}
		ds.initialize(b, ws)
		ds.call(b, "workspace/executeCommand", request, nil)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			ds.call(b, "workspace/executeCommand", request, nil)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/float64(b.N), "µs/op")
	})
	b.Run("transport-floor", func(b *testing.B) {
		name := "@agent-lsp-bench-" + randomName()
		l, err := net.Listen("unix", name)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		body := `{"jsonrpc":"2.0","id":1,"method":"workspace/executeCommand","params":{"command":"agent.projects","arguments":[{}]}}`
		msg := []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			buf := make([]byte, len(msg))
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
		c, err := net.Dial("unix", name)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		buf := make([]byte, len(msg))
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/float64(b.N), "µs/op")
	})
}

// From starting agent-lsp to the initialize response: in-process, through
// a running daemon, and when the forwarder must start the daemon (a fresh
// store each time; stopping it is not timed).
func BenchmarkForwarderStartup(b *testing.B) {
	startup := func(b *testing.B, mode string) {
		bin := benchBinary(b)
		ws, srv, dir := benchSetup(b)
		store := filepath.Join(dir, "sessions.db")
		env := daemonEnv(store, srv, "AGENT_LSP_DAEMON=on", "AGENT_LSP_DAEMON_IDLE=1h")
		switch mode {
		case "in-process":
			env = daemonEnv(store, srv, "AGENT_LSP_DAEMON=off")
		case "daemon-running":
			b.Cleanup(func() { stopBenchDaemon(b, bin, store) })
			s := startServer(b, bin, env) // starts the daemon
			s.initialize(b, ws)
			s.close(b)
		}
		var total time.Duration
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			if mode == "daemon-start" {
				store = filepath.Join(dir, fmt.Sprint(i), "sessions.db")
				env = daemonEnv(store, srv, "AGENT_LSP_DAEMON=on", "AGENT_LSP_DAEMON_IDLE=1h")
			}
			b.StartTimer()
			start := time.Now()
			s := startServer(b, bin, env)
			s.initialize(b, ws)
			total += time.Since(start)
			b.StopTimer()
			s.close(b)
			if mode == "daemon-start" {
				stopBenchDaemon(b, bin, store)
			}
		}
		b.ReportMetric(float64(total.Nanoseconds())/1e6/float64(b.N), "ms/op")
	}
	for _, mode := range []string{"in-process", "daemon-running", "daemon-start"} {
		b.Run(mode, func(b *testing.B) { startup(b, mode) })
	}
}

// processCPU returns the CPU time (user and system, every thread) the
// processes pids have used, from /proc/<pid>/stat in clock ticks of 10 ms
// (Linux's USER_HZ on every architecture Go runs on).
func processCPU(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command's name, which ends with the last ')':
		// state is the first, utime and stime the 12th and 13th.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		total += time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return total
}

// cpuTicks reads the machine's CPU time from /proc/stat's first line, in
// clock ticks: all of it, and what the hypervisor stole (the time a virtual
// CPU was ready to run and its host ran something else). ok is false where
// there is no /proc/stat.
func cpuTicks() (total, steal int64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	// cpu user nice system idle iowait irq softirq steal guest guest_nice;
	// guest time is counted in user and nice already.
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:9] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 7 {
			steal = n
		}
	}
	return total, steal, true
}

// stealMeter reports the share of the machine's CPU time its host stole
// between its start and report, as steal-%: on a virtual machine that
// figure names how loaded the host was while a benchmark ran, which moves
// times per turn by more than any change to the code under test.
type stealMeter struct{ total, steal int64 }

func startSteal() stealMeter {
	total, steal, _ := cpuTicks()
	return stealMeter{total, steal}
}

func (m stealMeter) report(b *testing.B) {
	total, steal, ok := cpuTicks()
	if ok && total > m.total {
		b.ReportMetric(100*float64(steal-m.steal)/float64(total-m.total), "steal-%")
	}
}

// benchDaemonPid returns the pid of the daemon serving store, from its
// sidecar file.
func benchDaemonPid(b *testing.B, store string) int {
	var sc struct{ Pid int }
	raw, err := os.ReadFile(store + ".daemon")
	if err != nil || json.Unmarshal(raw, &sc) != nil || sc.Pid == 0 {
		b.Fatalf("the daemon's sidecar: %v %s", err, raw)
	}
	return sc.Pid
}

func randomName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// BenchmarkTurnOverhead runs agent.run with 10 and 50 read_file turns
// against the zero-latency scripted model (in this process), with agent-lsp
// started as an editor starts it: in-process, and through the daemon.
// server-ns/turn is the time per turn less the scripted model's own time
// answering; beyond-model-ns/turn less also exchange-ns, the HTTP exchange
// of a turn's model call alone (a run's requests replayed from another
// process, without agent-lsp, after every tenth run); server-cpu-ns/turn the CPU time
// agent-lsp's processes (the server, or the forwarder and the daemon) spent
// per turn, which the machine's noise moves much less; steal-% the share of
// the machine's CPU time its host took meanwhile (stealMeter).
func BenchmarkTurnOverhead(b *testing.B) {
	serve := func(b *testing.B, n int, daemon bool) {
		var turns []scripted.Turn
		for range n {
			turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"greet.go"}`)}}})
		}
		turns = append(turns, scripted.Turn{Text: "done"})
		s, srv := startBenchWindow(b, daemon)
		run := func() {
			srv.SetScript(scripted.Script{Turns: turns})
			var res struct {
				Status string `json:"status"`
			}
			s.call(b, "workspace/executeCommand", map[string]any{"command": "agent.run", "arguments": []any{map[string]any{"prompt": "read it " + strconv.Itoa(n) + " times"}}}, &res)
			if res.Status != "done" {
				b.Fatalf("run: %+v\n%s", res, s.stderr.String())
			}
		}
		run() // warm up
		pids := []int{s.cmd.Process.Pid}
		if daemon {
			pids = append(pids, benchDaemonPid(b, s.store))
		}
		// The floor is measured every floorEvery runs, between them, so that
		// it sees the machine as the runs around it did: this VM's speed
		// drifts within a benchmark, and one measurement at the end was a
		// window of 50 ms against the runs' seconds.
		const floorEvery = 10
		var (
			elapsed, served, cpu time.Duration
			floors               []time.Duration
		)
		steal := startSteal()
		b.ResetTimer()
		blockCPU := processCPU(pids) // at the start of the runs since the last floor
		for i := range b.N {
			start, before := time.Now(), srv.Served()
			run()
			elapsed += time.Since(start)
			served += srv.Served() - before
			if (i+1)%floorEvery == 0 || i == b.N-1 {
				b.StopTimer()
				cpu += processCPU(pids) - blockCPU
				// A turn is one model call: its HTTP exchange alone, replayed from
				// another process, is the floor under the call; the rest is the server's.
				floor, err := srv.ExchangeFloor(turns, func(bodies [][]byte) (time.Duration, error) { return exchangeElsewhere(b, srv.URL, bodies) })
				if err != nil {
					b.Fatal(err)
				}
				floors = append(floors, floor)
				blockCPU = processCPU(pids)
				b.StartTimer()
			}
		}
		b.StopTimer()
		steal.report(b)
		turnsRun := float64(b.N * len(turns))
		b.ReportMetric(float64(elapsed.Nanoseconds())/turnsRun, "ns/turn")
		serverNs := float64((elapsed - served).Nanoseconds()) / turnsRun
		b.ReportMetric(serverNs, "server-ns/turn")
		b.ReportMetric(float64(cpu.Nanoseconds())/turnsRun, "server-cpu-ns/turn")
		var floor time.Duration
		for _, f := range floors {
			floor += f
		}
		floor /= time.Duration(len(floors))
		b.ReportMetric(float64(floor.Nanoseconds()), "exchange-ns")
		b.ReportMetric(serverNs-float64(floor.Nanoseconds()), "beyond-model-ns/turn")
		s.close(b)
	}
	for _, n := range []int{10, 50} {
		b.Run("in-process/turns="+strconv.Itoa(n), func(b *testing.B) { serve(b, n, false) })
		b.Run("daemon/turns="+strconv.Itoa(n), func(b *testing.B) { serve(b, n, true) })
	}
}

// exchangeEnv names, in a child of this test binary, the scripted model's
// URL to exchange with (exchangeChild); the bodies are in the file named by
// exchangeEnv+"_BODIES".
const exchangeEnv = "AGENT_LSP_BENCH_EXCHANGE"

// exchangeElsewhere is scripted.Exchange of bodies with the server at url,
// made by a child process: the floor of a model call between two processes,
// as agent-lsp's with the benchmark's scripted model.
func exchangeElsewhere(b *testing.B, url string, bodies [][]byte) (time.Duration, error) {
	file := filepath.Join(b.TempDir(), "bodies.json")
	raw, _ := json.Marshal(bodies)
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		return 0, err
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), exchangeEnv+"="+url, exchangeEnv+"_BODIES="+file)
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("exchange child: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	return time.Duration(ns), err
}

// exchangeChild is this test binary as exchangeElsewhere's child: it prints
// the nanoseconds scripted.Exchange took.
func exchangeChild(url string) int {
	raw, err := os.ReadFile(os.Getenv(exchangeEnv + "_BODIES"))
	var bodies [][]byte
	if err == nil {
		err = json.Unmarshal(raw, &bodies)
	}
	var took time.Duration
	if err == nil {
		took, err = scripted.Exchange(context.Background(), url, bodies)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(took.Nanoseconds())
	return 0
}

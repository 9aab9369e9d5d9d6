package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agent-lsp/agent-lsp/server"
)

// handshake is the version of the handshake and of what follows it: a
// forwarder and a daemon with the same handshake work together whatever
// their versions. Change it only with an incompatible change (a string so
// that tests can build binaries of another handshake with -ldflags -X).
var handshake = "1"

// buildVersion overrides server.Version (tests build binaries that claim
// another version with -ldflags -X).
var buildVersion = ""

// Version is the version this binary reports in a handshake.
func Version() string {
	if buildVersion != "" {
		return buildVersion
	}
	return server.Version
}

func handshakeVersion() int {
	n, _ := strconv.Atoi(handshake)
	return n
}

// Operations a Hello asks for.
const (
	opServe    = "serve"    // an editor's LSP connection follows
	opACP      = "acp"      // an ACP client's connection follows (newline-delimited JSON-RPC)
	opStatus   = "status"   // the Welcome carries the daemon's Status
	opStop     = "stop"     // stop after the runs end (Now: at once, cancelling them)
	opSessions = "sessions" // run `agent-lsp sessions ARGS` on the daemon's store
)

// Hello is the first line a client sends.
type Hello struct {
	Handshake int      `json:"handshake"`
	Version   string   `json:"version"`
	Op        string   `json:"op"`
	Now       bool     `json:"now,omitempty"`
	Env       []string `json:"env,omitempty"`  // the client's environment: for its model and commands only, held in memory
	Dir       string   `json:"dir,omitempty"`  // the client's working directory
	Args      []string `json:"args,omitempty"` // serve: the flags; sessions: the subcommand's arguments
	// Fds (serve, acp): the forwarder can pass the client's stdin and
	// stdout, for the daemon to serve them itself (handoff_linux.go).
	Fds bool `json:"fds,omitempty"`
}

// Welcome is the daemon's answer to a Hello. Error set: the daemon refused
// the connection and closes it.
type Welcome struct {
	Handshake int     `json:"handshake"`
	Version   string  `json:"version"`
	Error     string  `json:"error,omitempty"`
	Status    *Status `json:"status,omitempty"`
	// Fds (serve, acp): the daemon takes the client's stdin and stdout:
	// the forwarder passes them and then only waits for the end. An older
	// daemon leaves it unset, and the forwarder copies the streams.
	Fds bool `json:"fds,omitempty"`
}

// Status describes a running daemon (agent-lsp daemon status).
type Status struct {
	Pid         int    `json:"pid"`
	Socket      string `json:"socket"`
	Store       string `json:"store"`
	Version     string `json:"version"`
	Connections int    `json:"connections"`
	Running     int    `json:"running"` // sessions running now
}

// SessionsResult is the outcome of a sessions operation.
type SessionsResult struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Code   int    `json:"code"`
}

// maxLine bounds a handshake line: a Hello carries an environment.
const maxLine = 4 << 20

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line into v.
func readLine(r *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, more, err := r.ReadLine()
		if err != nil {
			return err
		}
		line = append(line, chunk...)
		if len(line) > maxLine {
			return fmt.Errorf("handshake line over %d bytes", maxLine)
		}
		if !more {
			break
		}
	}
	return json.Unmarshal(line, v)
}

// newer reports whether version a is newer than b (dotted numbers; a
// suffix after "-" is ignored).
func newer(a, b string) bool {
	pa, pb := parts(a), parts(b)
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			return x > y
		}
	}
	return false
}

func parts(v string) []int {
	v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "-")
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, _ := strconv.Atoi(p)
		out = append(out, n)
	}
	return out
}

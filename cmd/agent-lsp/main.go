// Command agent-lsp is a coding agent that speaks the Language Server Protocol
// over stdio, and a headless client of itself for CI.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/daemon"
)

const usage = `agent-lsp: a coding agent in your editor, over the Language Server Protocol.

Usage:
  agent-lsp [flags]              serve LSP over stdin/stdout (editors start it like this)
  agent-lsp run [flags] [PROMPT | -]
                                 run the agent headless on a workspace (CI, scripts)
  agent-lsp acp [flags]          serve the Agent Client Protocol over stdin/stdout (Zed, JetBrains,
                                 codecompanion.nvim, avante.nvim; docs/acp.md)
  agent-lsp sessions [list|show ID|delete ID|prune] [flags]
                                 list, read or delete stored sessions
  agent-lsp daemon [status|stop] [flags]
                                 the per-user daemon that owns the store (started when needed)
  agent-lsp doctor [--json]      check the setup: endpoint, key, store, sandbox, projects
  agent-lsp mcp hash [NAME...]   print the MCP servers' NAME@HASH, what --allow-mcp approves
  agent-lsp version              print the version

Run 'agent-lsp COMMAND --help' for a command's flags.

Serve flags:
`

func main() {
	sandbox.Main() // when started as the sandbox's helper, it confines and execs a command
	keepHeapFloor(os.Getenv, heapFloor)
	if servesEditors(os.Args[1:]) {
		leaveTerminal() // failing that, there is nothing to do about it
	}
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// servesEditors reports whether args start a mode an editor (or another
// client) starts, which reads no terminal: the server (no command) and acp.
// Those give up a terminal they inherit (leaveTerminal), as the daemon does
// itself (runDaemon, which logs a failure); run keeps its own, for a shell's
// job control of it.
func servesEditors(args []string) bool {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return true
	}
	return args[0] == "acp"
}

func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "run":
			return runCommand(args[1:], stdin, stdout, stderr)
		case "acp":
			return acpCommand(args[1:], stdin, stdout, stderr)
		case "sessions":
			return sessionsCommand(args[1:], stdout, stderr)
		case "rewind":
			return rewindCommand(args[1:], stdout, stderr)
		case "daemon":
			return daemonCommand(args[1:], stdout, stderr)
		case "doctor":
			return doctorCommand(args[1:], stdout, stderr)
		case "mcp":
			return mcpCommand(args[1:], stdout, stderr)
		case "version", "--version":
			fmt.Fprintf(stdout, "agent-lsp %s (%s %s/%s)\n", server.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return 0
		case "help":
			args = []string{"--help"}
		}
	}
	fs := newFlags("agent-lsp", usage, "\nSettings, lowest to highest precedence: defaults, environment, initializationOptions, flags.\n"+
		"Environment: OPENAI_API_KEY (or the variable model.apiKeyEnv names), OPENAI_BASE_URL, AGENT_LSP_MODEL,\n"+
		"AGENT_LSP_STORE, AGENT_LSP_DURABILITY, AGENT_LSP_DAEMON (off: no daemon), AGENT_LSP_DAEMON_IDLE.\n"+
		"The server forwards to the daemon of its store (agent-lsp daemon --help). The wire contract is docs/protocol.md.\n", stdout, stderr)
	opts := server.Options{Flags: config.Register(fs)}
	fs.Bool("stdio", true, "serve over stdin/stdout (the only transport; accepted for clients that pass it)")
	noDaemon := fs.Bool("no-daemon", false, "serve in-process instead of through the per-user daemon that shares the store (also AGENT_LSP_DAEMON=off)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-lsp: unknown command %q (see agent-lsp --help)\n", fs.Arg(0))
		return 2
	}
	logger := log.New(stderr, "agent-lsp: ", log.LstdFlags)
	opts.Logf = logger.Printf
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	serve := func(ctx context.Context, in io.Reader, out io.Writer, notices []string) int {
		opts := opts
		opts.Notices = notices
		if err := server.Serve(ctx, in, out, opts); err != nil {
			logger.Printf("%v", err)
			return 1
		}
		return 0
	}
	if !*noDaemon && daemonEnabled(os.Getenv) {
		f := daemon.Forwarder{Flags: opts.Flags, Environ: os.Environ(), Starter: daemon.Starter{Idle: daemonIdle(os.Getenv, stderr)}, Stderr: stderr, Serve: serve}
		return f.Forward(ctx, stdin, stdout)
	}
	return serve(ctx, stdin, stdout, nil)
}

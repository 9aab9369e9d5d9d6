package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/acp"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/daemon"
)

const acpUsage = `Usage: agent-lsp acp [flags]

Serves the Agent Client Protocol (ACP, version 1) on stdin/stdout, for
editors that talk to coding agents over it: Zed, the JetBrains IDEs,
codecompanion.nvim, avante.nvim. Logs go to stderr. Sessions are the same
store's as the language server's: one started here is listed by
agent.sessions and 'agent-lsp sessions', and resumable from VS Code or
Neovim, and the other way round. Each session's cwd becomes a workspace
folder; --workspace opens more from the start.

Configure your editor to start it, e.g. Zed's settings.json:

  "agent_servers": {"agent-lsp": {"command": "agent-lsp", "args": ["acp"]}}

See docs/acp.md for Zed, codecompanion.nvim and avante.nvim, and what each
ACP feature maps to.

Flags:
`

func acpCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("agent-lsp acp", acpUsage, "", stdout, stderr)
	var folders multiFlag
	fs.Var(&folders, "workspace", "workspace folder to open from the start (repeatable); each session's cwd is added too")
	settings := config.Register(fs)
	noDaemon := fs.Bool("no-daemon", false, "serve in-process instead of through the per-user daemon that shares the store (also AGENT_LSP_DAEMON=off)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-lsp acp: unexpected argument %q (see agent-lsp acp --help)\n", fs.Arg(0))
		return 2
	}
	for i, f := range folders { // the daemon's working directory is not this one
		abs, err := filepath.Abs(f)
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp acp: --workspace %s: %v\n", f, err)
			return 2
		}
		folders[i] = abs
	}
	logger := log.New(stderr, "agent-lsp acp: ", log.LstdFlags)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	serve := func(ctx context.Context, in io.Reader, out io.Writer, notices []string) int {
		if err := acp.Serve(ctx, in, out, server.Options{Flags: settings, Logf: logger.Printf, Notices: notices, Version: server.Version}, folders); err != nil {
			logger.Printf("%v", err)
			return 1
		}
		return 0
	}
	if !*noDaemon && daemonEnabled(os.Getenv) {
		f := daemon.Forwarder{Flags: settings, Environ: os.Environ(), Starter: daemon.Starter{Idle: daemonIdle(os.Getenv, stderr)}, Stderr: stderr, Serve: serve}
		return f.ForwardACP(ctx, stdin, stdout, folders)
	}
	return serve(ctx, stdin, stdout, nil)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/daemon"
	"github.com/agent-lsp/agent-lsp/store"
)

const daemonUsage = `Usage:
  agent-lsp daemon [--store PATH] [--idle 60s]   run the daemon that owns a store (editors start it)
  agent-lsp daemon status [--json] [--store PATH] print the running daemon: pid, socket, store, version, connections
  agent-lsp daemon stop [--now] [--store PATH]    stop it once its runs end (--now: cancel them; they resume later)

The agent-lsp an editor starts forwards its connection to the daemon of its
store, starting one when none runs: every window, the command line and CI
runs on this machine share the sessions. AGENT_LSP_DAEMON=off (or --no-daemon)
serves in-process instead. AGENT_LSP_DAEMON_IDLE (default 60s): how long the
daemon waits after its last connection before it exits.

Flags:
`

// daemonEnabled reports whether servers and runs go through the daemon:
// AGENT_LSP_DAEMON=off turns it off.
func daemonEnabled(getenv func(string) string) bool {
	switch strings.ToLower(getenv("AGENT_LSP_DAEMON")) {
	case "off", "0", "false", "no":
		return false
	}
	return true
}

// daemonIdle is AGENT_LSP_DAEMON_IDLE, 0 when unset or unreadable.
func daemonIdle(getenv func(string) string, stderr io.Writer) time.Duration {
	v := getenv("AGENT_LSP_DAEMON_IDLE")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		fmt.Fprintf(stderr, "agent-lsp: AGENT_LSP_DAEMON_IDLE=%q is not a positive duration (e.g. 60s); using %s\n", v, daemon.DefaultIdle)
		return 0
	}
	return d
}

func daemonCommand(args []string, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlags("agent-lsp daemon", daemonUsage, "", stdout, stderr)
	storePath := fs.String("store", "", "the store file (default from AGENT_LSP_STORE, else ~/.local/state/agent-lsp/sessions.db)")
	idle := fs.Duration("idle", daemon.DefaultIdle, "exit this long after the last connection closed")
	asJSON := fs.Bool("json", false, "status: print JSON")
	now := fs.Bool("now", false, "stop: cancel the runs at once (they checkpoint and resume later)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	path := *storePath
	if path == "" {
		path = config.StorePath(os.Getenv)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	switch sub {
	case "":
		return runDaemon(path, *idle, stderr)
	case "status":
		st, err := daemon.StatusOf(path)
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp daemon: %v (%s)\n", err, path)
			return 1
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(st)
			return 0
		}
		fmt.Fprintf(stdout, "agent-lsp %s daemon, pid %d\nstore        %s\nsocket       %s\nconnections  %d\nrunning      %d\n",
			st.Version, st.Pid, st.Store, st.Socket, st.Connections, st.Running)
		return 0
	case "stop":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if !*now {
			fmt.Fprintln(stderr, "agent-lsp daemon: stopping once the runs in progress end (--now cancels them)")
		}
		if err := daemon.Stop(ctx, path, *now); err != nil {
			fmt.Fprintf(stderr, "agent-lsp daemon: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, "stopped")
		return 0
	}
	fmt.Fprintf(stderr, "agent-lsp daemon: unknown subcommand %q\n", sub)
	fs.Usage()
	return 2
}

// runDaemon runs the daemon of the store at path in the foreground until
// it is idle, stopped or signalled.
func runDaemon(path string, idle time.Duration, stderr io.Writer) int {
	logger := log.New(stderr, "agent-lsp daemon: ", log.LstdFlags)
	if err := leaveTerminal(); err != nil {
		logger.Printf("could not give up the controlling terminal: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// In its starter's session, the daemon gets a hangup if it was stopped
	// when the process that started it exited (its process group was then
	// orphaned); it is no reason to end. Caught, not ignored: an ignored
	// signal stays ignored in the commands it runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			logger.Printf("hangup ignored")
		}
	}()
	d, err := daemon.Open(ctx, daemon.Config{Store: path, Idle: idle, Durability: store.DefaultDurability, Logf: logger.Printf, Sessions: sessionsOn})
	if err != nil {
		logger.Printf("%v", err)
		return 1
	}
	if err := d.Listen(); err != nil {
		d.Close()
		logger.Printf("%v", err)
		return 1
	}
	if err := d.Serve(ctx); err != nil {
		logger.Printf("%v", err)
		return 1
	}
	logger.Printf("exited")
	return 0
}

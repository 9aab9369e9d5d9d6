package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// The headless side of rewind (docs/rewind.md): agent-lsp sessions
// checkpoints, agent-lsp rewind, and run --fork ID@N.

const rewindUsage = `Usage: agent-lsp rewind ID --to N [--conversation | --files] [flags]
       agent-lsp rewind ID --undo [flags]

Returns session ID to checkpoint N, the state just before its prompt N was
sent (agent-lsp sessions checkpoints ID lists them): by default both the
conversation (prompt N and what followed leave it, kept in the store as a
branch) and the files (every file prompts N and later changed is put back
as it was, atomically). A file changed since the agent changed it is kept
and listed as a conflict. A running session is refused. --undo takes the
session's newest rewind back: the files it wrote as they were before it
(a file changed since is kept and listed) and the conversation it took out
(refused when a prompt was sent since).

  agent-lsp rewind s-01J... --to 2
  agent-lsp rewind s-01J... --to 2 --files --json
  agent-lsp rewind s-01J... --undo

Exit status: 0 rewound, 1 refused or failed, 2 usage error.

Flags:
`

// printCheckpoints is agent-lsp sessions checkpoints ID [--json].
func printCheckpoints(ctx context.Context, db store.Store, id string, asJSON bool, stdout, stderr io.Writer) int {
	if _, err := db.Session(ctx, id); err != nil {
		fmt.Fprintf(stderr, "agent-lsp sessions: session %s: %v\n", id, err)
		return 1
	}
	h := store.NewHistory(db)
	cps, err := agent.LoadCheckpoints(ctx, h, id)
	var blobs *store.Blobs
	if err == nil {
		blobs, err = h.LoadBlobs(ctx, id)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
		return 1
	}
	rows := server.CheckpointRows(cps, blobs)
	if asJSON {
		b, _ := json.Marshal(rows)
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	if len(rows.Checkpoints) == 0 {
		fmt.Fprintf(stderr, "session %s has no checkpoints\n", id)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tTIME\tMODEL\tPROMPT")
	for _, c := range rows.Checkpoints {
		t, _ := time.Parse(time.RFC3339, c.Time)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", c.Checkpoint, t.Local().Format(time.DateTime), c.Model, transcript.FirstWords(c.Prompt, 12))
		for _, f := range c.Files {
			note := ""
			if !f.Restorable {
				note = "  (" + f.Reason + ")"
			}
			fmt.Fprintf(tw, "\t\t\t  %s +%d -%d%s\n", shownPath(f.Path), f.Added, f.Removed, note)
		}
		for _, n := range c.Notes {
			fmt.Fprintf(tw, "\t\t\t  (%s)\n", n)
		}
	}
	tw.Flush()
	return 0
}

// rewindCommand is agent-lsp rewind: it runs agent.rewind through a server
// (the daemon of the store, else in-process) whose client writes files to
// disk and keeps the user's version of a conflict.
func rewindCommand(args []string, stdout, stderr io.Writer) int {
	var f runFlags
	fs := newFlags("agent-lsp rewind", rewindUsage, "", stdout, stderr)
	fs.Var(&f.workspaces, "workspace", "workspace folder (repeatable; default: the current directory): the session's folder must be one")
	to := fs.Int("to", 0, "the checkpoint to return to (required)")
	conversation := fs.Bool("conversation", false, "rewind only the conversation")
	files := fs.Bool("files", false, "rewind only the files")
	undo := fs.Bool("undo", false, "take the session's newest rewind back (without --to)")
	fs.BoolVar(&f.json, "json", false, "print the result as JSON")
	fs.BoolVar(&f.noDaemon, "no-daemon", false, "run in-process even when a daemon owns the store (also AGENT_LSP_DAEMON=off)")
	f.settings = config.Register(fs)
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if id == "" || (*to <= 0) != *undo || (*conversation && *files) || (*undo && (*conversation || *files)) {
		fmt.Fprintln(stderr, "agent-lsp rewind: give a session ID and either --to N (from 1), with at most one of --conversation and --files, or --undo alone")
		return 2
	}
	if len(f.workspaces) == 0 {
		wd, _ := os.Getwd()
		f.workspaces = multiFlag{wd}
	}
	restore := "both"
	if *conversation {
		restore = "conversation"
	} else if *files {
		restore = "files"
	}
	rargs := server.RewindArgs{Session: id, Checkpoint: *to, Restore: restore}
	if *undo {
		rargs = server.RewindArgs{Session: id, Undo: true}
	}
	var res server.RewindResult
	err := withServer(f, stderr, func(ctx context.Context, conn jsonrpc2.Conn) error {
		_, err := conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": "agent.rewind", "arguments": []any{rargs}}, &res)
		return err
	})
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp rewind: %v\n", err)
		return 1
	}
	printRewind(res, f.json, stdout)
	return 0
}

// printRewind prints a rewind's result.
func printRewind(res server.RewindResult, asJSON bool, stdout io.Writer) {
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "%s\n", b)
		return
	}
	if res.Undone {
		fmt.Fprintf(stdout, "undid the rewind to before prompt %d (conversation: %v)\n", res.Checkpoint, res.Conversation)
	} else {
		fmt.Fprintf(stdout, "rewound to before prompt %d (conversation: %v; --undo takes it back)\n", res.Checkpoint, res.Conversation)
	}
	for _, r := range res.Restored {
		fmt.Fprintf(stdout, "  restored %s\n", shownPath(r.Path))
	}
	for _, c := range res.Conflicts {
		by := "agent"
		if res.Undone {
			by = "rewind"
		}
		fmt.Fprintf(stdout, "  kept %s: changed since the %s changed it\n", shownPath(c.Path), by)
	}
	for _, n := range res.NotRestorable {
		fmt.Fprintf(stdout, "  not restored %s: %s\n", shownPath(n.Path), n.Reason)
	}
}

// shownPath is a path as a line of text shows it: quoted when it holds a
// control character (a newline, which a command may put in a file's name,
// would forge a line).
func shownPath(path string) string {
	if strings.ContainsFunc(path, unicode.IsControl) {
		return strconv.Quote(path)
	}
	return path
}

// withServer runs fn with a connection to an initialized server (the
// headless client's) for the workspaces f names.
func withServer(f runFlags, stderr io.Writer, fn func(ctx context.Context, conn jsonrpc2.Conn) error) error {
	ctx := context.Background()
	stderr = &syncWriter{w: stderr}
	stream, served, err := serverFor(ctx, f, storeWarn(stderr))
	if err != nil {
		return err
	}
	cl := &client{out: bufio.NewWriter(io.Discard), errw: stderr, tr: transcript.New(io.Discard), enc: workspace.UTF8, rep: report{workspaces: f.workspaces}}
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(stream))
	conn.Go(ctx, cl.handle)
	defer conn.Close()
	defer func() {
		conn.Call(ctx, "shutdown", nil, nil)
		conn.Notify(ctx, "exit", nil)
		served(conn.Done())
	}()
	var folders []map[string]string
	for _, w := range f.workspaces {
		abs, _ := filepath.Abs(w)
		folders = append(folders, map[string]string{"uri": string(uri.File(abs)), "name": filepath.Base(abs)})
	}
	var initRes struct {
		Capabilities struct {
			PositionEncoding string `json:"positionEncoding"`
		} `json:"capabilities"`
	}
	if _, err := conn.Call(ctx, "initialize", map[string]any{"processId": nil, "workspaceFolders": folders, "rootUri": folders[0]["uri"],
		"capabilities":          map[string]any{"general": map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}}},
		"initializationOptions": map[string]any{"edits": "apply", "interactive": false}}, &initRes); err != nil {
		return err
	}
	if initRes.Capabilities.PositionEncoding == "utf-16" {
		cl.enc = workspace.UTF16
	}
	conn.Notify(ctx, "initialized", map[string]any{})
	return fn(ctx, conn)
}

// parseFork parses run --fork's ID@N.
func parseFork(s string) (id string, n int, err error) {
	id, num, ok := strings.Cut(s, "@")
	if ok {
		n, err = strconv.Atoi(num)
	}
	if !ok || err != nil || n <= 0 || id == "" {
		return "", 0, fmt.Errorf("--fork takes SESSION@N (a checkpoint from 1), not %q", s)
	}
	return id, n, nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/daemon"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/postgres"
)

const sessionsUsage = `Usage:
  agent-lsp sessions [list] [--project NAME] [--store PATH]   list sessions, newest first
  agent-lsp sessions show ID [--store PATH]                    print a session's transcript
  agent-lsp sessions checkpoints ID [--json] [--store PATH]    list a session's checkpoints (one per prompt)
                                                               and the files each prompt changed (agent-lsp rewind)
  agent-lsp sessions delete ID [--store PATH]                  delete a session
  agent-lsp sessions prune --older-than 720h [--store PATH]    delete sessions not updated since
                                                               (and compact the file when that frees over half of it)
  agent-lsp sessions compact [--store PATH]                    give the free space of the store file back
  agent-lsp sessions check [--store PATH]                      verify every record; list the damaged ones

list, show and check only read the store file: a damaged one is left where
it is, and they read what can be salvaged. A command that met damage says so
and exits 1 (check exits 0 after its report).

Flags:
`

func sessionsCommand(args []string, stdout, stderr io.Writer) int {
	f, _, path, code := parseSessions(args, io.Discard, io.Discard)
	if code >= 0 {
		_, _, _, code = parseSessions(args, stdout, stderr) // prints the usage or the error
		return code
	}
	if postgres.IsURL(path) {
		// A shared database: every process reaches it, no daemon.
		ctx, cancel := context.WithTimeout(context.Background(), 2*postgres.ConnectTimeout)
		db, err := postgres.Open(ctx, path, postgres.WithWarn(func(msg string) { fmt.Fprintf(stderr, "agent-lsp sessions: %s\n", msg) }))
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
			return 1
		}
		defer db.Close()
		running := func(id string) bool { // a live lease: it runs on some machine now
			_, live, err := db.Holder(context.Background(), id)
			return live || err != nil // unknown: treated as running, never deleted
		}
		return sessionsOnStore(context.Background(), db, running, args, stdout, stderr)
	}
	if daemonEnabled(os.Getenv) {
		// A daemon owns the store while editors run: it runs the command.
		res, err := daemon.RunSessions(path, args)
		if err == nil {
			fmt.Fprint(stdout, res.Stdout)
			fmt.Fprint(stderr, res.Stderr)
			return res.Code
		}
		if !daemon.IsNoDaemon(err) {
			fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
			return 1
		}
		if foreign := (*daemon.ForeignPeerError)(nil); errors.As(err, &foreign) {
			fmt.Fprintf(stderr, "agent-lsp sessions: %v; reading the store file directly\n", err)
		}
	}
	warn := store.WithWarn(func(msg string) { fmt.Fprintf(stderr, "agent-lsp sessions: %s\n", msg) })
	var db *store.Bolt
	var err error
	if readOnlySessions[f.sub] {
		db, err = store.OpenReadOnly(path, warn)
	} else {
		db, err = store.Open(path, warn)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
		return 1
	}
	defer db.Close()
	damaged := db.Recovered() != ""
	if damaged {
		fmt.Fprintf(stderr, "agent-lsp sessions: %s\n", db.Recovered())
	}
	code = sessionsOnBolt(context.Background(), db, 0, func(string) bool { return false }, args, stdout, stderr)
	if damaged && code == 0 {
		return 1
	}
	return code
}

// readOnlySessions are the subcommands that only read: they open the
// store read-only, so a damaged file is left where and as it is.
var readOnlySessions = map[string]bool{"list": true, "show": true, "check": true, "checkpoints": true}

// sessionFlags are the parsed arguments of agent-lsp sessions.
type sessionFlags struct {
	sub, id, project string
	olderThan        time.Duration
	json             bool // checkpoints --json
}

// parseSessions parses the arguments; code is -1 when they are good, else
// the exit code (0 after --help).
func parseSessions(args []string, stdout, stderr io.Writer) (f sessionFlags, fs *flag.FlagSet, path string, code int) {
	f.sub = "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		f.sub, args = args[0], args[1:]
	}
	fs = newFlags("agent-lsp sessions", sessionsUsage, "", stdout, stderr)
	storePath := fs.String("store", "", "session store file (default from AGENT_LSP_STORE, else ~/.local/state/agent-lsp/sessions.db)")
	fs.StringVar(&f.project, "project", "", "only sessions of this project (list)")
	fs.DurationVar(&f.olderThan, "older-than", 0, "age for prune, e.g. 720h")
	fs.BoolVar(&f.json, "json", false, "print as JSON (checkpoints)")
	if f.sub == "show" || f.sub == "delete" || f.sub == "checkpoints" {
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "agent-lsp sessions %s: missing session ID\n", f.sub)
			return f, fs, "", 2
		}
		f.id, args = args[0], args[1:]
	}
	if code, ok := parseFlags(fs, args); !ok {
		return f, fs, "", code
	}
	path = *storePath
	if path == "" {
		path = config.StorePath(os.Getenv)
	}
	if abs, err := filepath.Abs(path); err == nil && !postgres.IsURL(path) {
		path = abs
	}
	return f, fs, path, -1
}

// sessionsOn runs agent-lsp sessions ARGS on db in the daemon that owns
// it; running says whether a session runs now.
func sessionsOn(ctx context.Context, db *store.Bolt, running func(string) bool, args []string, stdout, stderr io.Writer) int {
	return sessionsOnBolt(ctx, db, db.Damage(), running, args, stdout, stderr)
}

// sessionsOnBolt runs agent-lsp sessions ARGS on db, whose reads had met
// damage before times: a command that meets more (a damaged record left
// out, a read through a salvaged copy) says so and exits 1, after printing
// what it could; check reports damage as its result and exits 0.
func sessionsOnBolt(ctx context.Context, db *store.Bolt, before int64, running func(string) bool, args []string, stdout, stderr io.Writer) int {
	code := sessionsOnStore(ctx, db, running, args, stdout, stderr)
	if f, _, _, _ := parseSessions(args, io.Discard, io.Discard); f.sub == "check" {
		return code
	}
	if met := db.Damage() - before; met > 0 && code == 0 {
		fmt.Fprintf(stderr, "agent-lsp sessions: the store %s is damaged (met %d time(s)): what is shown leaves the damaged records out; `agent-lsp sessions check` lists them\n", db.Path(), met)
		return 1
	}
	return code
}

// sessionStore is a store the sessions command works on: a bbolt file or a
// PostgreSQL database (whose Path is its URL without the password).
type sessionStore interface {
	store.Store
	Path() string
}

// sessionsOnStore is sessionsOn for either kind of store.
func sessionsOnStore(ctx context.Context, db sessionStore, running func(string) bool, args []string, stdout, stderr io.Writer) int {
	f, fs, _, code := parseSessions(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	sub, id, project, olderThan := f.sub, f.id, &f.project, &f.olderThan
	path := db.Path()
	switch sub {
	case "list":
		list, err := db.Sessions(ctx, *project)
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
			return 1
		}
		for i, s := range list {
			if s.Status == store.StatusRunning && !running(s.ID) {
				list[i].Status = store.StatusInterrupted
			}
		}
		if len(list) == 0 {
			fmt.Fprintln(stderr, "no sessions in", path)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tPROJECT\tSTATUS\tMESSAGES\tUPDATED\tTITLE")
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Project, s.Status, s.Messages, s.Updated.Local().Format(time.DateTime), s.Title)
		}
		tw.Flush()
	case "show":
		return show(ctx, db, id, stdout, stderr)
	case "checkpoints":
		return printCheckpoints(ctx, db, id, f.json, stdout, stderr)
	case "delete":
		if running(id) {
			fmt.Fprintf(stderr, "agent-lsp sessions: session %s is running; cancel it first\n", id)
			return 1
		}
		ok, err := db.DeleteSession(ctx, id)
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
			return 1
		}
		if !ok {
			fmt.Fprintf(stderr, "agent-lsp sessions: no session %s\n", id)
			return 1
		}
		fmt.Fprintf(stdout, "deleted %s\n", id)
	case "prune":
		if *olderThan <= 0 {
			fmt.Fprintln(stderr, "agent-lsp sessions prune: give --older-than, e.g. 720h")
			return 2
		}
		n, err := db.DeleteOlderThan(ctx, time.Now().Add(-*olderThan))
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "deleted %d session(s)\n", n)
		if b, ok := db.(*store.Bolt); ok {
			used, file, err := b.Sizes()
			if err == nil && file > 0 && used < file/2 {
				return compact(ctx, b, stdout, stderr)
			}
		}
	case "check":
		return check(ctx, db, stdout, stderr)
	case "compact":
		b, ok := db.(*store.Bolt)
		if !ok {
			fmt.Fprintln(stdout, "nothing to compact: PostgreSQL gives the space of deleted sessions back itself (autovacuum)")
			return 0
		}
		return compact(ctx, b, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "agent-lsp sessions: unknown subcommand %q\n", sub)
		fs.Usage()
		return 2
	}
	return 0
}

// show prints session id's transcript: what it can when its record is
// damaged.
func show(ctx context.Context, db sessionStore, id string, stdout, stderr io.Writer) int {
	s, err := db.Session(ctx, id)
	switch {
	case errors.Is(err, store.ErrDamaged):
		// Its record is damaged (and named): its transcript may not be.
		fmt.Fprintf(stdout, "session %s  (its record is damaged)\n\n", id)
	case err != nil:
		fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
		return 1
	default:
		fmt.Fprintf(stdout, "session %s  project %s  status %s  (%s)\n\n", s.ID, s.Project, s.Status, s.Title)
	}
	msgs, err := agent.Transcript(ctx, db, id, "")
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
		return 1
	}
	tr := transcript.New(stdout)
	for _, m := range msgs {
		tr.Message(m)
	}
	return 0
}

// check verifies every record of db and lists the damaged ones; it exits
// 0 once it reported, damage or not, and 1 when it could not check.
func check(ctx context.Context, db sessionStore, stdout, stderr io.Writer) int {
	b, ok := db.(*store.Bolt)
	if !ok {
		fmt.Fprintln(stdout, "nothing to check here: PostgreSQL keeps its own checksums of its pages, and agent-lsp checks each record's as it reads it")
		return 0
	}
	rep, err := b.Check(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "checked %s: %d session(s), %d record(s)\n", b.Path(), rep.Sessions, rep.Records)
	if len(rep.Damaged) == 0 {
		fmt.Fprintln(stdout, "no damage found")
		return 0
	}
	fmt.Fprintf(stdout, "%d damaged:\n", len(rep.Damaged))
	for _, d := range rep.Damaged {
		fmt.Fprintf(stdout, "  %s\n", d)
	}
	fmt.Fprintln(stdout, "A command that writes (agent-lsp sessions compact) moves a file with damaged pages aside and keeps what can be read; damaged records are left out when sessions are read.")
	return 0
}

// compact compacts db's file and says by how much.
func compact(ctx context.Context, db *store.Bolt, stdout, stderr io.Writer) int {
	before, after, err := db.Compact(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp sessions: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "compacted %s: %s -> %s\n", db.Path(), size(before), size(after))
	return 0
}

// size is a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

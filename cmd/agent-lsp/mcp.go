package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	mcpdef "github.com/agent-lsp/agent-lsp/agent/mcp"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/workspace"
)

const mcpUsage = `Usage:
  agent-lsp mcp hash [--workspace DIR] [--json] [flags] [NAME...]

Prints each MCP server the runs of the workspace's projects may use, as
NAME@HASH: the value of --allow-mcp (mcp.allow) that starts exactly that
definition without asking. The hash covers what the server runs (transport,
command, args, env, cwd, url, headers, "sandbox"): a repository that changes
its definition needs a new approval. A bare --allow-mcp NAME approves only
your own servers (your mcp.json, the editor's mcpServers, --mcp-config
files), never a repository's .mcp.json. Nothing is started.

Output: one line per server, tab-separated: NAME@HASH, its source (project,
user, editor, flag), what it runs, and the project.

Flags:
`

// mcpHashLine is one server in agent-lsp mcp hash --json.
type mcpHashLine struct {
	Ref     string `json:"ref"` // NAME@HASH
	Name    string `json:"name"`
	Hash    string `json:"hash"`
	Source  string `json:"source"`
	Origin  string `json:"origin"`
	Command string `json:"command"` // what it runs (or its URL); never a variable's value
	Project string `json:"project"`
	Allowed bool   `json:"allowed"` // the settings' --allow-mcp already starts it without asking
}

func mcpCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "hash" {
		if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
			fmt.Fprint(stdout, mcpUsage)
			return 0
		}
		fmt.Fprintf(stderr, "agent-lsp mcp: unknown subcommand %q\nRun 'agent-lsp mcp --help' for usage.\n", args[0])
		return 2
	}
	fs := newFlags("agent-lsp mcp hash", mcpUsage, "", stdout, stderr)
	var workspaces multiFlag
	fs.Var(&workspaces, "workspace", "workspace folder whose projects' servers to list (repeatable; default: the current directory)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	flags := config.Register(fs)
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	st, _, err := config.Resolve(os.Getenv, nil, flags)
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp mcp hash: %v\n", err)
		return 2
	}
	if len(workspaces) == 0 {
		wd, _ := os.Getwd()
		workspaces = multiFlag{wd}
	}
	lines, notes, err := mcpHashes(st, workspaces)
	for _, n := range notes {
		fmt.Fprintf(stderr, "agent-lsp mcp hash: %s\n", n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agent-lsp mcp hash: %v\n", err)
		return 2
	}
	names := fs.Args()
	found := 0
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if len(names) > 0 && !slices.Contains(names, l.Name) {
			continue
		}
		found++
		if *asJSON {
			enc.Encode(l)
		} else {
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", l.Ref, l.Source, l.Command, l.Project)
		}
	}
	if len(names) > 0 && found == 0 {
		fmt.Fprintf(stderr, "agent-lsp mcp hash: no MCP server named %s in %s\n", strings.Join(names, ", "), strings.Join(workspaces, ", "))
		return 1
	}
	return 0
}

// mcpHashes lists the servers of every project of the folders.
func mcpHashes(st config.Settings, folders []string) ([]mcpHashLine, []string, error) {
	ws := workspace.New(workspace.UTF8)
	var lines []mcpHashLine
	var notes []string
	for _, dir := range folders {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, notes, err
		}
		p, err := ws.Add(filepath.Base(abs), abs)
		if err != nil {
			return nil, notes, fmt.Errorf("--workspace %s: %w", dir, err)
		}
		defs, n := session.MCPDefinitions(st, ws, os.Getenv, p)
		notes = append(notes, n...)
		for _, d := range defs {
			lines = append(lines, mcpHashLine{Ref: d.Ref(), Name: d.Name, Hash: d.Hash(), Source: string(d.Source), Origin: d.Origin,
				Command: d.Summary(), Project: p.Root(), Allowed: d.Source != mcpdef.SourceProject || mcpdef.Allowed(st.AllowMCP, d)})
		}
	}
	return lines, notes, nil
}

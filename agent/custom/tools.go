package custom

import (
	"slices"
	"strings"
)

// Groups are names that stand for several tools, and the names other
// tools' files use for ours (Claude Code's Read, Grep, Bash...; Copilot's
// codebase, editFiles, runCommands...). Keys are lower case.
var Groups = map[string][]string{
	"read":    {"read_file", "list_files", "search"},
	"edit":    {"edit_file", "create_file"},
	"command": {"run_command", "process_output", "process_wait", "process_stop"},
	"execute": {"run_command", "process_output", "process_wait", "process_stop"},
	"todo":    {"todo_write"},
	// Claude Code's tool names.
	"glob": {"list_files"}, "grep": {"search"}, "ls": {"list_files"},
	"multiedit": {"edit_file"}, "write": {"create_file"},
	"bash": {"run_command"}, "todowrite": {"todo_write"},
	// Copilot's.
	"codebase": {"read_file", "list_files", "search"}, "editfiles": {"edit_file", "create_file"},
	"runcommands": {"run_command"}, "search/codebase": {"read_file", "list_files", "search"},
}

// SelectTools picks, of the available tool names, those spec names: a
// tool's own name, a group (Groups), "Bash(git status:*)" as run_command
// (never as a permission: a file cannot let a command run without asking),
// an MCP server's tools as mcp__SERVER or mcp__SERVER__*, all MCP tools as
// mcp. Unknown are the spec's names that are neither an available tool nor a
// group (a group whose tools are not available chooses nothing).
func SelectTools(spec []string, available []string) (chosen, unknown []string) {
	add := func(n string) {
		if slices.Contains(available, n) && !slices.Contains(chosen, n) {
			chosen = append(chosen, n)
		}
	}
	for _, s := range spec {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if i := strings.IndexByte(s, '('); i > 0 && strings.HasSuffix(s, ")") {
			s = s[:i] // Bash(git add:*): the tool, not a permission
		}
		switch key := strings.ToLower(s); {
		case slices.Contains(available, s):
			add(s)
		case Groups[key] != nil:
			for _, n := range Groups[key] {
				add(n)
			}
		case key == "mcp" || strings.HasPrefix(s, "mcp__"):
			prefix := strings.TrimSuffix(strings.TrimSuffix(s, "*"), "__") + "__"
			if key == "mcp" {
				prefix = "mcp__"
			}
			for _, n := range available {
				if strings.HasPrefix(n, prefix) {
					add(n)
				}
			}
		default:
			unknown = append(unknown, s)
		}
	}
	slices.Sort(chosen)
	return chosen, unknown
}

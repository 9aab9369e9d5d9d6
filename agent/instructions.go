package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// InstructionFiles are the files at a project's root whose text goes into
// the system prompt as the project's instructions, the first found: the
// convention of current coding agents.
var InstructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxInstructions bounds the instructions shown; a longer file is cut with a note.
const maxInstructions = 8 << 10

// instructions returns the project's instructions section, or "". It reads
// the editor's buffer when the file is open, so unsaved changes count.
func (rt *Runtime) instructions(p *workspace.Project) string {
	for _, name := range InstructionFiles {
		b, err := rt.cfg.Workspace.ReadFile(p, filepath.Join(p.Root(), name), 1<<20)
		var big *workspace.FileTooLargeError
		switch {
		case errors.As(err, &big):
			return fmt.Sprintf("\n## Project instructions (%s)\n(%s is %d bytes, too large to read into the prompt; read_file it in parts.)\n", name, name, big.Size)
		case err != nil:
			continue
		}
		text := strings.TrimSpace(string(b))
		if text == "" {
			continue
		}
		note := ""
		if len(text) > maxInstructions {
			note = fmt.Sprintf("\n(%s is %d bytes; its head and tail are shown. read_file it for the rest.)", name, len(text))
			text = tools.Cut(text, maxInstructions)
		}
		return fmt.Sprintf("\n## Project instructions (%s)\nThe project's maintainers wrote these for coding agents; follow them unless the user says otherwise.\n%s%s\n", name, text, note)
	}
	return ""
}

//go:build unix

package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// protectedTable is docs/security.md's table of protected paths, from
// workspace.ProtectedPaths.
func protectedTable() string {
	var b strings.Builder
	b.WriteString("| path | why it is protected |\n|---|---|\n")
	for _, r := range workspace.ProtectedPaths {
		fmt.Fprintf(&b, "| `%s` | %s |\n", r.Pattern, r.Why)
	}
	return b.String()
}

// TestDocsProtectedPaths keeps docs/security.md's table of protected paths
// equal to the table the server decides by.
func TestDocsProtectedPaths(t *testing.T) {
	section(t, "../docs/security.md", "protected-paths", protectedTable())
}

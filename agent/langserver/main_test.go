package langserver

import (
	"os"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

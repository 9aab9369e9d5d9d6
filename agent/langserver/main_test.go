package langserver

import (
	"os"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	if name := os.Getenv(fakeEnv); name != "" {
		os.Exit(runFake(name)) // started as a language server by a test
	}
	code := m.Run()
	closeShared()
	os.Exit(code)
}

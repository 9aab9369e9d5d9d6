// Command helper is the sandbox's helper alone (what agent-lsp runs when
// re-executed in its hidden mode), built without the race detector for the
// race runs of agent/sandbox's tests: a race build starts many times slower,
// and those tests start hundreds of commands.
package main

import (
	"fmt"
	"os"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

func main() {
	sandbox.Main()
	fmt.Fprintln(os.Stderr, "helper: run only as the sandbox's helper")
	os.Exit(2)
}

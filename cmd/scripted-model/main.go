// Command scripted-model serves a scripted OpenAI-compatible chat endpoint for
// demos and manual tests. It is a test double that replays a script, not a model.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	script := flag.String("script", "", "script file (see testdata/scripts/*.json)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: scripted-model --script FILE [--addr HOST:PORT]\n\n"+
			"Serves /v1/chat/completions by replaying FILE's scripted turns (a test double, not a model)\n"+
			"and prints the base URL to use as OPENAI_BASE_URL on its first line.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *script == "" {
		flag.Usage()
		os.Exit(2)
	}
	s, err := scripted.Load(*script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scripted-model:", err)
		os.Exit(1)
	}
	srv, err := scripted.Start(*addr, s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scripted-model:", err)
		os.Exit(1)
	}
	fmt.Println(srv.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
}

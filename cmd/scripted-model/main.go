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
	requests := flag.String("requests", "", "append each chat request's body to this file, one line of JSON each")
	contextTokens := flag.Int("context-tokens", 0, "context size in tokens, overriding the script's contextTokens (0 = unlimited);\nlarger requests get a provider's context-overflow error")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: scripted-model --script FILE [--addr HOST:PORT] [--context-tokens N] [--requests FILE]\n\n"+
			"Serves /v1/chat/completions by replaying FILE's scripted turns (a test double, not a model)\n"+
			"and prints the base URL to use as OPENAI_BASE_URL on its first line.\n\n"+
			"It counts each request's tokens with the cl100k_base tokenizer and reports them as usage\n"+
			"when the client asks for stream_options.include_usage. With --context-tokens N (or the\n"+
			"script's contextTokens), a request of more than N tokens is refused like a real provider\n"+
			"refuses it (by default OpenAI's 400 context_length_exceeded) and consumes no turn.\n\nFlags:\n")
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
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "context-tokens" {
			s.ContextTokens = *contextTokens
		}
	})
	if s.ContextTokens < 0 {
		fmt.Fprintln(os.Stderr, "scripted-model: --context-tokens must not be negative")
		os.Exit(2)
	}
	srv, err := scripted.Start(*addr, s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scripted-model:", err)
		os.Exit(1)
	}
	if *requests != "" {
		f, err := os.OpenFile(*requests, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "scripted-model:", err)
			os.Exit(1)
		}
		defer f.Close()
		srv.RecordTo(f)
	}
	fmt.Println(srv.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
}

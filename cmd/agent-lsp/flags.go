package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agent-lsp/agent-lsp/server/config"
)

// newFlags is the flag set of the command name: its errors go to stderr,
// and --help prints usage, then the flags, then after ("" for nothing).
func newFlags(name, usage, after string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
		fmt.Fprint(stderr, after)
	}
	return fs
}

// parseFlags parses args into fs. When the command is to stop there, ok is
// false and code is its exit status: 0 after --help, 2 after a bad flag
// (fs has said why).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(config.JoinFlagValues(args)); err != nil {
		if err == flag.ErrHelp {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

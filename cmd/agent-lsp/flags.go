package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agent-lsp/agent-lsp/server/config"
)

// newFlags is the flag set of the command name. --help prints usage, then
// the flags, then after ("" for nothing) on stdout, so that `agent-lsp
// --help | less` works; a bad flag is two lines on stderr (parseFlags).
func newFlags(name, usage, after string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		errw := fs.Output()
		fs.SetOutput(stdout)
		defer fs.SetOutput(errw)
		fmt.Fprint(stdout, usage)
		fs.PrintDefaults()
		fmt.Fprint(stdout, after)
	}
	return fs
}

// parseFlags parses args into fs. When the command is to stop there, ok is
// false and code is its exit status: 0 after --help (usage on stdout), 2
// after a bad flag, which is said in two lines on fs's output (stderr): the
// error, and where the usage is.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := parseQuiet(fs, args)
	switch {
	case err == flag.ErrHelp:
		fs.Usage()
		return 0, false
	case err != nil:
		fmt.Fprintln(fs.Output(), flagError(fs, err))
		return 2, false
	}
	return 0, true
}

// parseQuiet parses args into fs without printing anything.
func parseQuiet(fs *flag.FlagSet, args []string) error {
	errw, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defer func() { fs.SetOutput(errw); fs.Usage = usage }()
	return fs.Parse(config.JoinFlagValues(args)) // --allow-hooks HASH: the hash is the flag's, not the prompt
}

// flagError is a bad flag in two lines: what is wrong, and where the usage is.
func flagError(fs *flag.FlagSet, err error) string {
	return fmt.Sprintf("%s: %v\nRun '%s --help' for usage.", fs.Name(), err, fs.Name())
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

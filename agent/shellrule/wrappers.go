package shellrule

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrappers run the command given in their arguments; they always ask, and
// deny rules are matched against every command they could be running.
var wrappers = setOf(`env xargs nice nohup timeout stdbuf setsid sudo doas su runuser sg chroot flock
	watch parallel ionice taskset chrt unshare nsenter systemd-run strace ltrace script time exec command
	builtin busybox eval setpriv ssh-agent dbus-run-session dbus-launch valgrind chronic firejail prlimit
	numactl fakeroot faketime eatmydata nocache unbuffer catchsegv cgexec proot bwrap torsocks proxychains
	proxychains4 xvfb-run tini dumb-init runcon setarch linux32 linux64 capsh chpst systemd-inhibit pkexec
	trickle cpulimit choom daemonize aa-exec hyperfine entr watchexec gdb perf rlwrap ccache distcc sshpass
	tmux screen dtach nix-shell lckdo with-lock-ex sem tsp rr heaptrack gpg-agent`)

// runners run the command in their arguments from a subcommand on (npm
// exec, uv run; "" when the command follows the runner's options): an allow
// rule that names the runner allows them, and deny rules see the command.
var runners = map[string][]string{
	"npx": {""}, "bunx": {""}, "uvx": {""}, "pipx": {"run"}, "npm": {"exec", "x"}, "pnpm": {"exec", "dlx"},
	"yarn": {"exec", "dlx"}, "bun": {"x"}, "uv": {"run"}, "poetry": {"run"}, "pipenv": {"run"}, "pdm": {"run"},
	"hatch": {"run"}, "conda": {"run"}, "pixi": {"run"}, "bundle": {"exec"}, "mise": {"exec", "x"},
	"rustup": {"run"}, "direnv": {"exec"},
}

// shells run the body of -c as a command line: it is parsed in turn.
var shells = setOf("sh bash zsh dash ksh mksh ash fish")

func setOf(names string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		m[n] = true
	}
	return m
}

// maxNesting bounds lines parsed inside each other (sh -c bodies, option
// values, aliases).
const maxNesting = 4

// inspect marks a command that runs other commands or code, and parses what
// it runs where that is written out: wrappers, shells, eval, trap, sourced
// files, find -exec, the option tables (tools) and interpreter code.
func (w *walker) inspect(cmd *Command) {
	if cmd.Words[0] == nil {
		return
	}
	name := path.Base(*cmd.Words[0])
	args := cmd.Words[1:]
	switch {
	case name == "." || name == "source":
		cmd.ask("it runs a file of shell commands")
	case shells[name]:
		cmd.ask("it runs a shell")
		if i := slices.IndexFunc(args, func(a *string) bool { return a != nil && isShellCFlag(*a) }); i >= 0 && i+1 < len(args) {
			w.shellBody(args[i+1])
		}
	case name == "eval" && len(args) > 0:
		// eval runs its arguments as shell code, whatever they look like:
		// `eval -` runs the command "-" (found by FuzzDecide).
		cmd.ask("it runs another command (eval): its arguments are shell code")
		cmd.innerAt = 1
		w.evalBody(cmd)
	case name == "trap":
		w.trapBody(cmd)
	case name == "alias":
		w.defineAliases(args)
	case name == "env":
		if slices.ContainsFunc(args, mayBeCommand) {
			cmd.ask("it runs another command (env)")
			cmd.innerAt = 1
		}
		w.options(cmd, envTool, 1) // env -S STRING: the command is in the string
	case wrappers[name] && slices.ContainsFunc(args, mayBeCommand):
		cmd.ask("it runs another command (" + name + ")")
		cmd.innerAt = 1
	case name == "find" && hasWord(args, "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"):
		cmd.ask("find runs commands or changes files with -exec, -ok, -delete or -fprint")
		cmd.innerAt = 1
	case tools[name] != nil:
		w.options(cmd, tools[name], 1)
	case interpreters[strings.TrimRight(name, "0123456789.")] != nil:
		w.options(cmd, interpreters[strings.TrimRight(name, "0123456789.")], 1)
	}
	if at := runnerAt(name, cmd.Words); at > 0 && cmd.innerAt == 0 {
		cmd.innerAt = at
	}
	if cmd.innerAt > 0 && !cmd.tail {
		w.tails(cmd)
	}
}

// runnerAt is the index where the command a runner runs may start, 0 if cmd
// runs none.
func runnerAt(name string, words []*string) int {
	subs, ok := runners[name]
	if !ok {
		return 0
	}
	if subs[0] == "" {
		return 1
	}
	// The first word that names the subcommand: options before it may take
	// values (npm --prefix DIR exec), and over-reading only shows deny
	// rules more.
	for i, a := range words[1:] {
		if a != nil && slices.Contains(subs, *a) {
			return i + 2
		}
	}
	return 0
}

// tails reads each tail of a wrapper's arguments as the command it may run,
// so an sh -c body, an option's program or a split string in it is parsed and
// deny rules see `timeout 5 sh -c 'rm x'`; and an argument that reads as
// shell code (watch 'rm x', su -c 'rm x', sg g 'rm x') is parsed for deny
// rules. Over-reading a wrapper denies or asks; it never allows.
func (w *walker) tails(cmd *Command) {
	for i := cmd.innerAt; i < len(cmd.Words); i++ {
		a := cmd.Words[i]
		if a == nil {
			continue
		}
		if strings.ContainsAny(*a, " \t\n;&|()<>`$") {
			cmd.hidden = append(cmd.hidden, w.hiddenLine(*a)...)
		}
		if !mayBeCommand(a) {
			continue
		}
		tail := Command{Text: cmd.Text, Name: *a, Words: cmd.Words[i:], tail: true}
		w.inspect(&tail)
		cmd.hidden = append(cmd.hidden, tail.hidden...)
	}
}

// shellBody parses the body of sh -c as a line of its own, so deny rules see
// its commands; a body known only at run time just asks.
func (w *walker) shellBody(body *string) {
	w.askLine("it runs a shell")
	if body == nil {
		w.askLine("the body of sh -c is expanded at run time")
		return
	}
	w.nested(*body, "the body of sh -c")
}

// evalBody parses eval's arguments, joined by spaces as eval joins them.
func (w *walker) evalBody(cmd *Command) {
	var words []string
	for _, a := range cmd.Words[1:] {
		if a == nil {
			cmd.hidden = append(cmd.hidden, unknownCommand)
			return
		}
		words = append(words, *a)
	}
	w.nested(strings.Join(words, " "), "the code of eval")
}

// trapBody parses the command of `trap COMMAND SIGNAL...`: it runs in this
// shell when the signal comes (or on EXIT), so it is a line of its own.
func (w *walker) trapBody(cmd *Command) {
	args := cmd.Words[1:]
	if len(args) > 0 && args[0] != nil && *args[0] == "--" {
		args = args[1:]
	}
	if len(args) < 2 || args[0] != nil && strings.HasPrefix(*args[0], "-") {
		return // trap -p, trap -l, trap SIGNAL and trap - SIGNAL run nothing
	}
	if args[0] == nil {
		cmd.ask("the command of trap is expanded at run time")
		cmd.hidden = append(cmd.hidden, unknownCommand)
		return
	}
	w.nested(*args[0], "the command of trap")
}

// defineAliases records `alias NAME=VALUE...`; an argument known only at run
// time may define any alias ("" stands for it).
func (w *walker) defineAliases(args []*string) {
	for _, a := range args {
		switch {
		case a == nil:
			w.aliases[""] = nil
		case strings.HasPrefix(*a, "-"):
		default:
			if name, value, ok := strings.Cut(*a, "="); ok {
				w.aliases[name] = &value
			}
		}
	}
}

// alias reads a command whose name is an alias the line defined: the alias's
// value is what runs (dash expands aliases in `sh -c` from the next line on;
// the rules assume the same line too), so the value and the arguments are
// parsed as a line of their own, and the command as written stays listed for
// a shell that does not expand it.
func (w *walker) alias(cmd *Command, c *syntax.CallExpr) {
	if len(w.aliases) == 0 || cmd.Name == "" {
		return
	}
	if _, how := literal(c.Args[0]); how != plainWord {
		return // a quoted or escaped name is never an alias
	}
	v, ok := w.aliases[cmd.Name]
	if _, any := w.aliases[""]; !ok && !any {
		return
	}
	if v == nil {
		cmd.ask("it may be an alias whose value is known only at run time")
		cmd.hidden = append(cmd.hidden, newCandidate(append([]*string{nil}, cmd.Words[1:]...)))
		return
	}
	line := *v
	if len(c.Args) > 1 {
		start, end := int(c.Args[1].Pos().Offset()), int(c.Args[len(c.Args)-1].End().Offset())
		if start < 0 || end > len(w.src) || start > end {
			return
		}
		line += " " + w.src[start:end]
	}
	w.nested(line, "the alias "+cmd.Name)
}

// nested parses text as a line of its own (an sh -c body, an option's value,
// an alias) and lists its commands after the current ones.
func (w *walker) nested(text, what string) {
	if w.depth >= maxNesting {
		w.askLine(what + " is nested too deeply")
		w.cmds = append(w.cmds, Command{Text: text, Words: fields(text), Ask: what + " is nested too deeply"})
		return
	}
	if !w.spend(len(text)) {
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	if err != nil {
		w.askLine(what + " does not parse")
		w.cmds = append(w.cmds, Command{Text: text, Words: fields(text), Ask: what + " does not parse"})
		return
	}
	inner := &walker{src: text, depth: w.depth + 1, aliases: w.aliases, budget: w.budget}
	for _, st := range f.Stmts {
		inner.stmt(st)
	}
	w.cmds = append(w.cmds, inner.cmds...)
	if inner.ask != "" {
		w.askLine(inner.ask)
	}
}

// hiddenLine parses text as a line for deny rules only: the word lists of
// its commands (and of what they run). Text that does not parse is split at
// spaces.
func (w *walker) hiddenLine(text string) []candidate {
	if w.depth >= maxNesting || !w.spend(len(text)) {
		return []candidate{newCandidate(fields(text))}
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	if err != nil {
		return []candidate{newCandidate(fields(text))}
	}
	inner := &walker{src: text, depth: w.depth + 1, aliases: map[string]*string{}, budget: w.budget}
	for _, st := range f.Stmts {
		inner.stmt(st)
	}
	var out []candidate
	for _, c := range inner.cmds {
		out = append(out, denyCandidates(c)...)
	}
	return out
}

// fields splits text at white space.
func fields(text string) []*string {
	var out []*string
	for _, f := range strings.Fields(text) {
		out = append(out, &f)
	}
	if out == nil {
		out = []*string{nil}
	}
	return out
}

// mayBeCommand reports whether a wrapper's argument could name a command: not
// an option and not an assignment (env lists the environment without one).
func mayBeCommand(a *string) bool {
	return a == nil || (!strings.HasPrefix(*a, "-") && !strings.Contains(*a, "="))
}

// isShellCFlag reports whether a shell option word includes -c (-c, -ec, -lc...).
func isShellCFlag(a string) bool {
	return strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c")
}

func hasWord(words []*string, any ...string) bool {
	return slices.ContainsFunc(words, func(w *string) bool { return w != nil && slices.Contains(any, *w) })
}

// denyCandidates are the word lists deny rules are matched against: the
// command; for a command that runs another one, every tail of its
// arguments (so `timeout 5 rm -rf x` and `xargs rm` meet "rm *"); and the
// hidden ones (what its options, strings and scripts run). Over-matching
// denies; it never allows.
func denyCandidates(c Command) []candidate {
	out := []candidate{newCandidate(c.Words)}
	if c.innerAt > 0 {
		for i := c.innerAt; i < len(c.Words); i++ {
			out = append(out, newCandidate(c.Words[i:]))
		}
	}
	return append(out, c.hidden...)
}

// candidate is a word list deny rules are matched against, its first word
// read without its directory (/bin/rm as rm). The words are shared, not
// copied: a wrapper's tails cost nothing each.
type candidate struct {
	words []*string
	name  *string // the first word's base name; nil when known only at run time
}

// unknownCommand is a command known only at run time: it meets every deny
// rule whose first word it could be.
var unknownCommand = candidate{words: []*string{nil}}

func newCandidate(words []*string) candidate {
	c := candidate{words: words}
	if len(words) > 0 && words[0] != nil {
		base := path.Base(*words[0])
		c.name = &base
	}
	return c
}

// match reports whether a deny rule's words match the candidate.
func (c candidate) match(pat []string) bool {
	if len(c.words) == 0 {
		return len(pat) == 0
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "*" {
		return c.match(pat[1:]) || matchWords(pat, c.words[1:]) // the * takes no word, or the first and more
	}
	if c.name != nil && !matchWord(pat[0], *c.name) {
		return false
	}
	return matchWords(pat[1:], c.words[1:])
}

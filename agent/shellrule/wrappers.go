package shellrule

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrappers run the command given in their arguments; they always ask, and
// deny rules are matched against every command they could be running.
var wrappers = map[string]bool{
	"env": true, "xargs": true, "nice": true, "nohup": true, "timeout": true, "stdbuf": true, "setsid": true,
	"sudo": true, "doas": true, "su": true, "runuser": true, "sg": true, "chroot": true, "flock": true,
	"watch": true, "parallel": true, "ionice": true, "taskset": true, "chrt": true, "unshare": true,
	"nsenter": true, "systemd-run": true, "strace": true, "ltrace": true, "script": true, "time": true,
	"exec": true, "command": true, "builtin": true, "busybox": true, "eval": true,
}

// shells run the body of -c as a command line: it is parsed in turn.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true}

// maxNesting bounds sh -c bodies parsed inside each other.
const maxNesting = 4

// wrapped marks commands that run other commands or code: wrappers, shells,
// sourced files, find -exec and git -c.
func (w *walker) wrapped(cmd *Command, c *syntax.CallExpr) {
	if cmd.Words[0] == nil {
		return
	}
	name := path.Base(*cmd.Words[0])
	args := cmd.Words[1:]
	switch {
	case name == "." || name == "source":
		cmd.Ask = "it runs a file of shell commands"
	case shells[name]:
		cmd.Ask = "it runs a shell"
		if i := slices.IndexFunc(args, func(a *string) bool { return a != nil && isShellCFlag(*a) }); i >= 0 && i+1 < len(args) {
			w.shellBody(args[i+1])
		}
	case name == "eval" && len(args) > 0:
		// eval runs its arguments as shell code, whatever they look like:
		// `eval -` runs the command "-" (found by FuzzDecide).
		cmd.Ask = "it runs another command (eval): its arguments are shell code"
		cmd.inner = true
	case wrappers[name] && slices.ContainsFunc(args, mayBeCommand):
		cmd.Ask = "it runs another command (" + name + ")"
		cmd.inner = true
	case name == "find" && hasWord(args, "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"):
		cmd.Ask = "find runs commands or changes files with -exec, -ok, -delete or -fprint"
		cmd.inner = true
	case name == "git" && hasPrefixWord(args, "-c", "--config-env", "--exec-path"):
		cmd.Ask = "git -c can set hooks, fsmonitor or aliases that run programs"
	}
}

// shellBody parses the body of sh -c as a line of its own, so deny rules see
// its commands; a body known only at run time just asks.
func (w *walker) shellBody(body *string) {
	if body == nil {
		w.askLine("the body of sh -c is expanded at run time")
		return
	}
	if w.depth >= maxNesting {
		w.askLine("sh -c is nested too deeply")
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(*body), "")
	if err != nil {
		w.askLine("the body of sh -c does not parse")
		return
	}
	inner := &walker{src: *body, depth: w.depth + 1}
	for _, st := range f.Stmts {
		inner.stmt(st)
	}
	w.cmds = append(w.cmds, inner.cmds...)
	w.askLine("it runs a shell")
	if inner.ask != "" {
		w.askLine(inner.ask)
	}
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

func hasPrefixWord(words []*string, prefixes ...string) bool {
	return slices.ContainsFunc(words, func(w *string) bool {
		if w == nil {
			return false
		}
		for _, p := range prefixes {
			if *w == p || strings.HasPrefix(*w, p+"=") {
				return true
			}
		}
		return false
	})
}

// denyCandidates are the word lists deny rules are matched against: the
// command with its name's directory removed, and for a command that runs
// another one, every tail of its arguments (so `timeout 5 rm -rf x` and
// `xargs rm` meet "rm *"). Over-matching a wrapper denies; it never allows.
func denyCandidates(c Command) [][]*string {
	out := [][]*string{baseName(c.Words)}
	if c.inner {
		for i := 1; i < len(c.Words); i++ {
			out = append(out, baseName(c.Words[i:]))
		}
	}
	return out
}

func baseName(words []*string) []*string {
	if len(words) == 0 || words[0] == nil {
		return words
	}
	base := path.Base(*words[0])
	return append([]*string{&base}, words[1:]...)
}

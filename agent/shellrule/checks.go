package shellrule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The checks of the option tables: values and operands whose text says what
// they run (ssh -o ProxyCommand=..., make SHELL=..., sed's e command).

// goCheck reads go's -ldflags: -extld names the external linker, a program,
// and -extldflags hands gcc flags that can name programs.
func goCheck(w *walker, cmd *Command, f found) {
	if f.value != nil && strings.Contains(*f.value, "extld") {
		cmd.ask("go -ldflags -extld/-extldflags name a program for the linker")
		cmd.hidden = append(cmd.hidden, w.hiddenLine(*f.value)...)
	}
}

// tarOldStyle rewrites tar's old-style first argument (tar xzf FILE, tar
// cIf PROGRAM FILE) as options, each letter that takes a value taking the
// next word in turn.
func tarOldStyle(t *tool, words []*string) []*string {
	if len(words) < 2 || words[1] == nil || *words[1] == "" || strings.HasPrefix(*words[1], "-") {
		return words
	}
	out, queue := []*string{words[0]}, words[2:]
	for _, c := range *words[1] {
		opt := "-" + string(c)
		out = append(out, &opt)
		if o := t.opts[opt]; o.kind.takesValue() && !o.optional && len(queue) > 0 {
			out, queue = append(out, queue[0]), queue[1:]
		}
	}
	return append(out, queue...)
}

// tarCheck reads --checkpoint-action: exec=COMMAND runs a shell command.
func tarCheck(w *walker, cmd *Command, f found) {
	if f.value == nil {
		cmd.hidden = append(cmd.hidden, unknownCommand)
		return
	}
	if v, ok := strings.CutPrefix(*f.value, "exec="); ok {
		w.valueCommand(cmd, found{name: "--checkpoint-action=exec", value: &v, hasValue: true}, true)
	}
}

// sshKeys are the ssh_config keywords (-o KEY=VALUE) that run nothing.
var sshKeys = setOf(strings.ToLower(`AddKeysToAgent AddressFamily BatchMode BindAddress BindInterface CanonicalDomains
	CanonicalizeFallbackLocal CanonicalizeHostname CanonicalizeMaxDots CanonicalizePermittedCNAMEs CASignatureAlgorithms
	CertificateFile ChannelTimeout CheckHostIP Ciphers ClearAllForwardings Compression ConnectionAttempts ConnectTimeout
	ControlMaster ControlPath ControlPersist DynamicForward EnableEscapeCommandline EscapeChar ExitOnForwardFailure
	FingerprintHash ForkAfterAuthentication ForwardAgent ForwardX11 ForwardX11Timeout ForwardX11Trusted GatewayPorts
	GlobalKnownHostsFile GSSAPIAuthentication GSSAPIDelegateCredentials HashKnownHosts HostbasedAcceptedAlgorithms
	HostbasedAuthentication HostKeyAlgorithms HostKeyAlias Hostname IdentitiesOnly IdentityAgent IdentityFile
	IgnoreUnknown IPQoS KbdInteractiveAuthentication KbdInteractiveDevices KexAlgorithms LocalForward LogLevel
	LogVerbose MACs NoHostAuthenticationForLocalhost NumberOfPasswordPrompts ObscureKeystrokeTiming
	PasswordAuthentication PermitRemoteOpen Port PreferredAuthentications ProxyJump ProxyUseFdpass
	PubkeyAcceptedAlgorithms PubkeyAcceptedKeyTypes PubkeyAuthentication RekeyLimit RemoteForward RequestTTY
	RequiredRSASize RevokedHostKeys SendEnv ServerAliveCountMax ServerAliveInterval SessionType SetEnv StdinNull
	StreamLocalBindMask StreamLocalBindUnlink StrictHostKeyChecking SyslogFacility TCPKeepAlive Tag Tunnel
	TunnelDevice UpdateHostKeys User UserKnownHostsFile VerifyHostKeyDNS VisualHostKey PermitLocalCommand`))

// sshCheck reads -o KEY=VALUE (or "KEY VALUE"): ProxyCommand, LocalCommand
// and KnownHostsCommand are shell code, XAuthLocation a program; keywords
// that load code or more config ask, and so does an unknown one.
func sshCheck(w *walker, cmd *Command, f found) {
	if f.value == nil {
		return // the line asks for the expanded word
	}
	// The keyword ends at the first space or "=" (-o "ProxyCommand sh -c x").
	key, value := strings.TrimSpace(*f.value), ""
	if i := strings.IndexAny(key, " \t="); i >= 0 {
		key, value = key[:i], strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(key[i:]), "="))
	}
	switch k := strings.ToLower(key); {
	case k == "proxycommand" || k == "localcommand" || k == "knownhostscommand" || k == "remotecommand":
		if !strings.EqualFold(value, "none") {
			w.valueCommand(cmd, found{name: "-o " + key, value: &value, hasValue: true}, true)
		}
	case k == "xauthlocation":
		w.valueCommand(cmd, found{name: "-o " + key, value: &value, hasValue: true}, false)
	case !sshKeys[k]:
		cmd.ask(fmt.Sprintf("ssh -o %s is not an option the rules know to run nothing (it may load code or config)", key))
	}
}

// sshRemote reads the command ssh runs on the destination: deny rules see
// it (the remote shell parses it).
func sshRemote(w *walker, cmd *Command, s scan) {
	if len(s.operands) < 2 {
		return
	}
	var words []string
	for _, i := range s.operands[1:] {
		if cmd.Words[i] == nil {
			cmd.hidden = append(cmd.hidden, unknownCommand)
			return
		}
		words = append(words, *cmd.Words[i])
	}
	cmd.hidden = append(cmd.hidden, w.hiddenLine(strings.Join(words, " "))...)
}

var makeAssignment = regexp.MustCompile(`^([^\s=:+?!#]+)\s*(=|:=|::=|:::=|\+=|\?=|!=)(.*)$`)

// makeAssignments reads make's VAR=VALUE operands: SHELL is the program that
// runs every recipe, != runs a shell command, MAKEFLAGS and the like carry
// options (--eval); any other value may be a command a recipe runs, so deny
// rules see it.
func makeAssignments(w *walker, cmd *Command, s scan) {
	for _, i := range s.operands {
		if cmd.Words[i] == nil {
			continue
		}
		m := makeAssignment.FindStringSubmatch(*cmd.Words[i])
		if m == nil {
			continue
		}
		name, op, value := m[1], m[2], m[3]
		switch {
		case op == "!=":
			cmd.ask(fmt.Sprintf("make %s!= runs a shell command", name))
			cmd.hidden = append(cmd.hidden, w.hiddenLine(value)...)
		case name == "SHELL" || name == "MAKESHELL":
			w.valueCommand(cmd, found{name: name, value: &value, hasValue: true}, false)
		case slices.Contains([]string{".SHELLFLAGS", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKE", "MAKEOVERRIDES"}, name):
			cmd.ask(fmt.Sprintf("make %s changes how make runs recipes or which makefiles it reads", name))
		case strings.TrimSpace(value) != "":
			cmd.hidden = append(cmd.hidden, w.hiddenLine(value)...)
		}
	}
}

// sedCheck reads a script given with -e.
func sedCheck(w *walker, cmd *Command, f found) { w.sedScript(cmd, f.value) }

// sedOperands reads the script given as the first operand, when there is no
// -e or -f.
func sedOperands(w *walker, cmd *Command, s scan) {
	if len(s.operands) == 0 || slices.ContainsFunc(s.found, func(f found) bool {
		return slices.Contains([]string{"-e", "--expression", "-f", "--file"}, f.name)
	}) {
		return
	}
	w.sedScript(cmd, cmd.Words[s.operands[0]])
}

// sedScript reads a sed script for what it executes: the command of `e
// COMMAND` is a line of its own; `e` alone and s///e run text made from
// the input, so they ask, and deny rules see the replacement.
func (w *walker) sedScript(cmd *Command, script *string) {
	if script == nil {
		return // the line asks for the expanded word
	}
	commands, replacements, reason := sedExec(*script)
	for _, c := range commands {
		w.nested(c, "the command of sed's e")
	}
	for _, r := range replacements {
		cmd.hidden = append(cmd.hidden, w.hiddenLine(r)...)
	}
	if reason != "" {
		cmd.ask(reason)
	}
}

// awkCheck reads a program given with gawk's -e/--source.
func awkCheck(w *walker, cmd *Command, f found) { w.awkProgram(cmd, f.value) }

// awkOperands reads the program given as the first operand, when there is no
// -f, -E or -e.
func awkOperands(w *walker, cmd *Command, s scan) {
	if len(s.operands) == 0 || slices.ContainsFunc(s.found, func(f found) bool {
		return slices.Contains([]string{"-f", "--file", "-E", "--exec", "-e", "--source"}, f.name)
	}) {
		return
	}
	w.awkProgram(cmd, cmd.Words[s.operands[0]])
}

var awkString = regexp.MustCompile(`"(?:\\.|[^"\\])*"`)

// awkProgram asks for an awk program that can run commands: system(), a
// pipe (print | "cmd", "cmd" | getline), getline, or an extension. Its
// string literals are parsed for deny rules (system("rm -rf x")).
func (w *walker) awkProgram(cmd *Command, prog *string) {
	if prog == nil {
		return // the line asks for the expanded word
	}
	p := *prog
	if !strings.Contains(p, "system") && !strings.Contains(p, "|") && !strings.Contains(p, "getline") && !strings.Contains(p, "@") {
		return
	}
	cmd.ask("the awk program can run commands (system, | or getline)")
	for _, lit := range awkString.FindAllString(p, -1) {
		s := strings.ReplaceAll(lit[1:len(lit)-1], `\"`, `"`)
		cmd.hidden = append(cmd.hidden, w.hiddenLine(s)...)
	}
}

// envSplit reads env -S STRING: env splits the string into words that take
// its place, so the command it names is read as env's own.
func envSplit(w *walker, cmd *Command, f found) {
	cmd.ask("it runs another command (env -S)")
	if f.value == nil {
		cmd.hidden = append(cmd.hidden, unknownCommand)
		return
	}
	if w.depth >= maxNesting {
		w.askLine("env -S is nested too deeply")
		return
	}
	words := append([]*string{cmd.Words[0]}, splitWords(*f.value)...)
	split := Command{Text: cmd.Text, Name: "env", Words: append(words, cmd.Words[f.valueAt+1:]...)}
	inner := &walker{src: *f.value, depth: w.depth + 1, aliases: w.aliases, budget: w.budget}
	inner.inspect(&split)
	w.cmds = append(w.cmds, inner.cmds...)
	if inner.ask != "" {
		w.askLine(inner.ask)
	}
	cmd.hidden = append(cmd.hidden, denyCandidates(split)...)
}

// splitWords splits text into words as a shell would (env -S honours the same
// quotes); text that does not parse as one simple command is split at spaces.
func splitWords(text string) []*string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader("_ "+text), "")
	if err != nil || len(f.Stmts) != 1 {
		return fields(text)
	}
	c, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(c.Assigns) > 0 {
		return fields(text)
	}
	var out []*string
	for _, a := range c.Args[1:] {
		v, _ := literal(a)
		out = append(out, v)
	}
	return out
}

// perlModule reads perl's -M/-m: -M'Foo;system(...)' is code.
func perlModule(w *walker, cmd *Command, f found) {
	if f.value != nil && strings.ContainsAny(*f.value, "; (){}\"'`$@&|") {
		cmd.code(f.at, optionPrefix(*cmd.Words[f.at], f.name))
	}
}

// stdinCode marks an interpreter that reads its program from standard input:
// no script and no code option, or the script "-"; unless one of the info
// options (--version, -m) says it reads no program.
func stdinCode(info string) func(w *walker, cmd *Command, s scan) {
	names := strings.Fields(info)
	return func(w *walker, cmd *Command, s scan) {
		if cmd.codeAt > 0 || slices.ContainsFunc(s.found, func(f found) bool { return slices.Contains(names, f.name) }) {
			return
		}
		if len(s.operands) == 0 {
			cmd.code(len(cmd.Words), 0)
		} else if i := s.operands[0]; cmd.Words[i] != nil && *cmd.Words[i] == "-" {
			cmd.code(i, 1)
		}
	}
}

// denoEval marks deno eval CODE, deno repl (which runs what it reads) and a
// bare deno (a REPL).
func denoEval(w *walker, cmd *Command, s scan) {
	if len(s.operands) == 0 {
		if len(s.found) == 0 {
			cmd.code(len(cmd.Words), 0)
		}
		return
	}
	if i := s.operands[0]; cmd.Words[i] != nil && (*cmd.Words[i] == "eval" || *cmd.Words[i] == "repl") {
		cmd.code(i, len(*cmd.Words[i]))
	}
}

// gitSubmodule reads git submodule foreach COMMAND: shell code, run in each
// submodule.
func gitSubmodule(w *walker, cmd *Command, s scan) {
	if len(s.operands) == 0 || cmd.Words[s.operands[0]] == nil || *cmd.Words[s.operands[0]] != "foreach" {
		return
	}
	var words []string
	for _, a := range cmd.Words[s.operands[0]+1:] {
		switch {
		case a == nil:
			cmd.hidden = append(cmd.hidden, unknownCommand)
			cmd.ask("the command of git submodule foreach is expanded at run time")
			return
		case len(words) == 0 && strings.HasPrefix(*a, "-"):
		default:
			words = append(words, *a)
		}
	}
	w.nested(strings.Join(words, " "), "the command of git submodule foreach")
}

// gitBisect reads git bisect run COMMAND ARGS...: a command of its own.
func gitBisect(w *walker, cmd *Command, s scan) {
	if len(s.operands) == 0 || cmd.Words[s.operands[0]] == nil || *cmd.Words[s.operands[0]] != "run" {
		return
	}
	if words := cmd.Words[s.operands[0]+1:]; len(words) > 0 {
		w.wordsCommand(cmd.Text, words)
	}
}

// gitConfig asks for git config that writes: a value can be an alias, a
// hook path, a pager or an editor, which later git commands run.
func gitConfig(w *walker, cmd *Command, s scan) {
	reads := []string{"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--get-color", "--get-colorbool"}
	if slices.ContainsFunc(s.found, func(f found) bool { return slices.Contains(reads, f.name) }) {
		return
	}
	var first string
	if len(s.operands) > 0 && cmd.Words[s.operands[0]] != nil {
		first = *cmd.Words[s.operands[0]]
	}
	switch {
	case first == "set" || first == "edit":
	case first == "get" || first == "list" || first == "unset" || first == "remove-section" || len(s.operands) < 2:
		return
	}
	cmd.ask("git config writes config, which can name programs that git runs later (aliases, hooks, pagers)")
	if last := cmd.Words[len(cmd.Words)-1]; last != nil && strings.HasPrefix(*last, "!") {
		cmd.hidden = append(cmd.hidden, w.hiddenLine((*last)[1:])...) // a shell alias
	}
}

// wordsCommand lists words as a command of its own (git bisect run's), read
// like any other.
func (w *walker) wordsCommand(text string, words []*string) {
	c := Command{Text: text, Words: words}
	if words[0] != nil {
		c.Name = *words[0]
	} else {
		c.Ask = "the command name is expanded at run time"
	}
	if slices.Contains(words[1:], nil) {
		c.ask("an argument is expanded at run time")
	}
	at := len(w.cmds)
	w.cmds = append(w.cmds, c)
	w.inspect(&c)
	w.cmds[at] = c
}

// gitConfigOption reads git -c NAME=VALUE: config can name hooks, fsmonitor,
// aliases and pagers, so it asks; a value is parsed for deny rules (a shell
// alias is `!COMMAND`).
func gitConfigOption(w *walker, cmd *Command, f found) {
	cmd.ask(fmt.Sprintf("git %s sets config that can run programs (hooks, fsmonitor, aliases, pagers)", f.name))
	if f.value == nil {
		return
	}
	if _, v, ok := strings.Cut(*f.value, "="); ok {
		cmd.hidden = append(cmd.hidden, w.hiddenLine(strings.TrimPrefix(v, "!"))...)
	}
}

// settingsWrite is the check of a command that writes settings later
// commands read (go env -w GOFLAGS=-toolexec=..., npm config set
// script-shell ...): it asks when the command writes (the option or first
// operand named by how; "" always), and deny rules see the values.
func settingsWrite(how string) func(w *walker, cmd *Command, s scan) {
	return func(w *walker, cmd *Command, s scan) {
		writes := how == "" || slices.ContainsFunc(s.found, func(f found) bool { return f.name == how }) ||
			len(s.operands) > 0 && cmd.Words[s.operands[0]] != nil && *cmd.Words[s.operands[0]] == how
		if !writes {
			return
		}
		cmd.ask("it writes settings that later commands read (they can name programs)")
		for _, i := range s.operands {
			if a := cmd.Words[i]; a != nil {
				v := *a // a value (npm config set KEY VALUE) or KEY=VALUE
				if _, after, ok := strings.Cut(v, "="); ok {
					v = after
				}
				for _, part := range append([]string{v}, strings.Fields(v)...) {
					_, inner, _ := strings.Cut(part, "=")
					cmd.hidden = append(cmd.hidden, w.hiddenLine(part)...)
					cmd.hidden = append(cmd.hidden, w.hiddenLine(inner)...)
				}
			}
		}
	}
}

package shellrule

import (
	"fmt"
	"slices"
	"strings"
)

// optKind is what an option of a tool does with its value.
type optKind uint8

const (
	flagOpt    optKind = iota // takes no value
	valueOpt                  // takes a value that runs nothing: a file, a pattern, a count
	programOpt                // takes a program and its arguments: a command of its own
	shellOpt                  // takes shell code: a line of its own
	askOpt                    // takes a value that makes the tool run code the matcher cannot read (a config file, a makefile)
	askFlagOpt                // takes no value, and makes the tool run code the matcher cannot read
	codeOpt                   // takes interpreter code: only an allow rule that names the option allows it
	checkOpt                  // takes a value that says what it does: the tool's check reads it
)

func (k optKind) takesValue() bool { return k != flagOpt && k != askFlagOpt }

// opt is one option of a tool.
type opt struct {
	kind     optKind
	optional bool // the value is only ever attached (--color=always, -O<pager>)
	digits   bool // the optional value is digits only (perl -l0)
	stop     bool // the options end after it (go test -args, python -c)
}

// optStyle is how a tool writes its options.
type optStyle uint8

const (
	getopt optStyle = iota // -abc clusters, -ovalue, -o value, --long=value, --long value
	goflag                 // -name or --name, -name=value or -name value; no clusters
)

// spec lists a tool's options by what they do, each a space-separated list
// of names ("-x --long"). A name in optional takes its value only attached;
// its kind is the list it is also in, else valueOpt.
type spec struct {
	flags, values, optional, digits, programs, shells, asks, askFlags, codes, checks, stops string
}

// tool is what the matcher knows of a program's command line: every option
// it takes, and what each does with its value. An option the table does not
// know makes the line ask (unless lenient): it could run a program.
type tool struct {
	name    string
	style   optStyle
	abbrev  bool // a unique prefix of a long option is that option (getopt_long, git, npm)
	negate  bool // --no-NAME is a flag when --NAME is known (git, rg, npm)
	numbers bool // -NUM is an option (git grep -5)
	lenient bool // an unknown option does not ask (interpreters: they only look for code)
	// optionsEnd is the operand at which the options end: 1 at the first
	// operand (a subcommand, a script), 2 after one operand (ssh's
	// destination); 0 never (GNU tools permute options and operands).
	optionsEnd int
	subs       map[string]*tool // subcommands, picked by the first operand
	// check reads the value of a checkOpt option; operands reads the
	// operands (sed and awk scripts, make assignments); either may be nil.
	check    func(w *walker, cmd *Command, f found)
	operands func(w *walker, cmd *Command, s scan)
	// prepare rewrites the words before they are read (tar's old-style
	// options); nil for none.
	prepare func(t *tool, words []*string) []*string

	opts  map[string]opt
	longs []string // the long options, sorted, for abbreviations
}

// newTool fills a tool's table from its spec.
func newTool(t tool, s spec) *tool {
	t.opts = map[string]opt{}
	for _, l := range []struct {
		names string
		kind  optKind
	}{{s.flags, flagOpt}, {s.values, valueOpt}, {s.programs, programOpt}, {s.shells, shellOpt},
		{s.asks, askOpt}, {s.askFlags, askFlagOpt}, {s.codes, codeOpt}, {s.checks, checkOpt}} {
		for _, n := range strings.Fields(l.names) {
			t.opts[n] = opt{kind: l.kind}
		}
	}
	mark := func(names string, set func(*opt)) {
		for _, n := range strings.Fields(names) {
			o, ok := t.opts[n]
			if !ok {
				o.kind = valueOpt
			}
			set(&o)
			t.opts[n] = o
		}
	}
	mark(s.optional, func(o *opt) { o.optional = true })
	mark(s.digits, func(o *opt) { o.optional, o.digits = true, true })
	mark(s.stops, func(o *opt) { o.stop = true })
	for n := range t.opts {
		if strings.HasPrefix(n, "--") {
			t.longs = append(t.longs, n)
		}
	}
	slices.Sort(t.longs)
	return &t
}

// found is one option on a command line.
type found struct {
	at       int     // the index of the option's word
	valueAt  int     // the index of the value's word (at when attached)
	name     string  // the option as the table names it, or as written when unknown
	kind     optKind // flagOpt for an unknown option
	value    *string // nil when it has none or it is known only at run time
	hasValue bool
}

// scan is a command line read with a tool's table.
type scan struct {
	found    []found
	operands []int  // the indexes of the operands
	unknown  string // the first option the table does not know, "" if none
}

// scan reads words[from:] with the table.
func (t *tool) scan(words []*string, from int) scan {
	var s scan
	rest := func(i int) {
		for ; i < len(words); i++ {
			s.operands = append(s.operands, i)
		}
	}
	for i := from; i < len(words); i++ {
		a := words[i]
		switch {
		case a != nil && t.numbers && strings.HasPrefix(*a, "-") && isNumber((*a)[1:]):
			continue // -NUM (git grep -5)
		case a == nil || *a == "-" || !strings.HasPrefix(*a, "-"):
			// A word known only at run time may be an option: the line
			// asks for it anyway, so it counts as an operand here.
			s.operands = append(s.operands, i)
			if t.optionsEnd > 0 && len(s.operands) >= t.optionsEnd {
				rest(i + 1)
				return s
			}
			continue
		case *a == "--":
			rest(i + 1)
			return s
		}
		n := len(s.found)
		if t.style == goflag || strings.HasPrefix(*a, "--") {
			i = t.long(&s, words, i)
		} else {
			i = t.short(&s, words, i)
		}
		if slices.ContainsFunc(s.found[n:], func(f found) bool { return t.opts[f.name].stop }) {
			rest(i + 1)
			return s
		}
	}
	return s
}

// long reads the long option at words[i] and returns the index of its last word.
func (t *tool) long(s *scan, words []*string, i int) int {
	name, val, attached := strings.Cut(*words[i], "=")
	if t.style == goflag {
		name = "-" + strings.TrimPrefix(strings.TrimPrefix(name, "-"), "-")
	}
	canon, o, known := t.lookup(name)
	if !known && s.unknown == "" {
		s.unknown = name
	}
	f := found{at: i, valueAt: i, name: canon, kind: o.kind}
	switch {
	case !o.kind.takesValue():
	case attached:
		f.value, f.hasValue = &val, true
	case !o.optional && i+1 < len(words):
		i++
		f.value, f.hasValue, f.valueAt = words[i], true, i
	}
	s.found = append(s.found, f)
	return i
}

// short reads the cluster of short options at words[i] (-xvf FILE) and
// returns the index of its last word.
func (t *tool) short(s *scan, words []*string, i int) int {
	a := *words[i]
	if o, ok := t.opts[a]; ok && len(a) > 2 { // a long option with one dash (npm -ws, -iwr)
		f := found{at: i, valueAt: i, name: a, kind: o.kind}
		if o.kind.takesValue() && !o.optional && i+1 < len(words) {
			i++
			f.value, f.hasValue, f.valueAt = words[i], true, i
		}
		s.found = append(s.found, f)
		return i
	}
	for j := 1; j < len(a); j++ {
		name := "-" + a[j:j+1]
		o, ok := t.opts[name]
		if !ok {
			if t.numbers && a[j] >= '0' && a[j] <= '9' {
				continue
			}
			if s.unknown == "" {
				s.unknown = name
			}
			continue // the rest may be this option's value or more options: read it as options
		}
		f := found{at: i, valueAt: i, name: name, kind: o.kind}
		if !o.kind.takesValue() {
			s.found = append(s.found, f)
			continue
		}
		v := a[j+1:]
		if o.digits {
			v = v[:len(v)-len(strings.TrimLeft(v, "0123456789xXabcdefABCDEF"))]
			if v != "" {
				f.value, f.hasValue = &v, true
			}
			s.found = append(s.found, f)
			j += len(v)
			continue
		}
		switch {
		case v != "":
			f.value, f.hasValue = &v, true
		case !o.optional && i+1 < len(words):
			i++
			f.value, f.hasValue, f.valueAt = words[i], true, i
		}
		s.found = append(s.found, f)
		break
	}
	return i
}

// lookup finds a long option: by its name, as --no-NAME of a known one, or
// by a unique prefix. When a prefix is ambiguous or unknown it reports
// false, with the most dangerous option it may stand for (a program, code):
// the caller reads the value as that, so deny rules still see it.
func (t *tool) lookup(name string) (string, opt, bool) {
	if o, ok := t.opts[name]; ok {
		return name, o, true
	}
	if t.negate && strings.HasPrefix(name, "--no-") {
		if _, ok := t.opts["--"+name[len("--no-"):]]; ok {
			return name, opt{kind: flagOpt}, true
		}
	}
	if !t.abbrev || !strings.HasPrefix(name, "--") || len(name) < 3 {
		return name, opt{kind: flagOpt}, false
	}
	var cands []string
	for _, l := range t.longs {
		if strings.HasPrefix(l, name) {
			cands = append(cands, l)
		}
	}
	if len(cands) == 1 {
		return cands[0], t.opts[cands[0]], true
	}
	for _, c := range cands {
		if k := t.opts[c].kind; k != flagOpt && k != valueOpt {
			return c, t.opts[c], false
		}
	}
	return name, opt{kind: flagOpt}, false
}

// options applies a tool's table to cmd from its word at index from: the
// value of an option that takes a program or shell code becomes commands of
// their own (deny rules see them, allow rules must allow them), an option
// that runs code the matcher cannot read asks, and so does an unknown one.
func (w *walker) options(cmd *Command, t *tool, from int) {
	if !w.spend(len(cmd.Words) - from) {
		return
	}
	words := cmd.Words
	if t.prepare != nil {
		words = t.prepare(t, words)
	}
	s := t.scan(words, from)
	if s.unknown != "" && !t.lenient {
		cmd.ask(fmt.Sprintf("%s: unknown option %s (an option the rules do not know could run a program)", t.name, s.unknown))
	}
	for _, f := range s.found {
		switch f.kind {
		case programOpt, shellOpt:
			w.valueCommand(cmd, f, f.kind == shellOpt)
		case askOpt, askFlagOpt:
			cmd.ask(fmt.Sprintf("%s %s runs code the rules cannot see", t.name, f.name))
			if f.value != nil {
				cmd.hidden = append(cmd.hidden, w.hiddenLine(*f.value)...)
			}
		case codeOpt:
			cmd.code(f.at, optionPrefix(*words[f.at], f.name))
		case checkOpt:
			if t.check != nil {
				t.check(w, cmd, f)
			}
		}
	}
	if t.operands != nil {
		t.operands(w, cmd, s)
	}
	if len(s.operands) > 0 && t.subs != nil {
		if i := s.operands[0]; words[i] != nil {
			if sub, ok := t.subs[*words[i]]; ok {
				w.options(cmd, sub, i+1)
			}
		}
	}
}

// valueCommand reads an option's value as a command of its own: shell code
// as a line, a program as a command whose words the tool splits (so shell
// syntax in it asks). The commands are listed after cmd.
func (w *walker) valueCommand(cmd *Command, f found, shell bool) {
	if !f.hasValue {
		return // an optional program left out: the tool's default
	}
	what := fmt.Sprintf("the value of %s", f.name)
	if f.value == nil {
		w.cmds = append(w.cmds, Command{Text: cmd.Text, Words: []*string{nil}, Ask: what + " is expanded at run time"})
		return
	}
	if !shell && strings.ContainsAny(*f.value, ";&|<>()$`\n") {
		cmd.ask(what + " is not a plain command")
	}
	w.nested(*f.value, what)
}

// optionPrefix is how many bytes of word spell out the option name: all of
// it when word starts with it (-c, --eval=...), else up to its letter in a
// cluster (-Bc).
func optionPrefix(word, name string) int {
	if strings.HasPrefix(word, name) {
		return len(name)
	}
	if len(name) == 2 {
		if i := strings.IndexByte(word[1:], name[1]); i >= 0 {
			return i + 2
		}
	}
	return len(word)
}

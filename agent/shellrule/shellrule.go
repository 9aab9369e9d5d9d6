// Package shellrule decides whether a shell command line may run without
// asking. It parses the line (mvdan.cc/sh/v3/syntax, bash dialect) into its
// simple commands and matches allow and deny rules against each, with the
// semantics of Claude Code's Bash(npm run test:*) rules: a rule's * matches
// words, never operators, so "go test *" allows `go test ./...` and not
// `go test ./... ; touch x`.
//
// A line runs without asking only if every simple command in it is allowed
// by a rule and is a plain literal command: no command or process
// substitution, no redirection to a file other than /dev/null, no words
// expanded at run time, no environment assignments, no wrapper that runs
// another command (env, xargs, sh -c, find -exec, ...), no function or
// sourced file. A deny rule matching any simple command (also one reached
// through a wrapper, a quoted or path-qualified name, or an sh -c body) denies
// the whole line. Everything else asks.
package shellrule

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Verdict is what to do with a command line.
type Verdict int

// Verdicts.
const (
	Ask   Verdict = iota // ask the user (headless: deny)
	Allow                // run without asking
	Deny                 // never run
)

func (v Verdict) String() string {
	return [...]string{"ask", "allow", "deny"}[v]
}

// Rule is an allow or deny pattern: words, where a word that is only "*"
// matches any number of words (none included) and a "*" inside a word matches
// any characters of that one word.
type Rule struct {
	text  string
	words []string
}

// ParseRule parses a rule; an empty rule is an error.
func ParseRule(s string) (Rule, error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return Rule{}, fmt.Errorf("empty command rule")
	}
	return Rule{text: strings.Join(words, " "), words: words}, nil
}

// String returns the rule as written (spaces normalized).
func (r Rule) String() string { return r.text }

// match reports whether the rule matches a command's words. A nil word is a
// word only known at run time: it matches any one rule word.
func (r Rule) match(words []*string) bool { return matchWords(r.words, words) }

func matchWords(pat []string, words []*string) bool {
	if len(pat) == 0 {
		return len(words) == 0
	}
	if pat[0] == "*" {
		for i := 0; i <= len(words); i++ {
			if matchWords(pat[1:], words[i:]) {
				return true
			}
		}
		return false
	}
	if len(words) == 0 {
		return false
	}
	if words[0] != nil && !matchWord(pat[0], *words[0]) {
		return false
	}
	return matchWords(pat[1:], words[1:])
}

// matchWord matches one word against a pattern whose only special character is *.
func matchWord(pat, w string) bool {
	head, rest, star := strings.Cut(pat, "*")
	if !star {
		return pat == w
	}
	if !strings.HasPrefix(w, head) {
		return false
	}
	w = w[len(head):]
	for i := 0; i <= len(w); i++ {
		if matchWord(rest, w[i:]) {
			return true
		}
	}
	return false
}

// Command is one simple command of a line.
type Command struct {
	// Text is the command as written.
	Text string
	// Name is the command name after quote removal, "" when it is only known
	// at run time (a variable, a substitution).
	Name string
	// Words are the name and the arguments after quote removal; nil for a
	// word only known at run time.
	Words []*string
	// Ask says why the command cannot run without asking, "" when an allow
	// rule may let it.
	Ask string

	innerAt int  // it runs the command in its words from this index on (a wrapper: 1), 0 for none
	tail    bool // it is a tail of a wrapper's arguments: the wrapper's own tails cover its tails
	// codeAt is the index of the word that gives interpreter code (python
	// -c), len(Words) for a program read from standard input, 0 for none:
	// only an allow rule that names that word (its first codeLen bytes
	// written out, no "*" over them) allows the command.
	codeAt, codeLen int
	// hidden are more word lists deny rules see: commands in an option's
	// value, a wrapper's string arguments, an awk program's strings.
	hidden []candidate
}

// ask sets the reason to ask unless there is one.
func (c *Command) ask(reason string) {
	if c.Ask == "" {
		c.Ask = reason
	}
}

// code records the first word that gives interpreter code, and how many of
// its bytes name the option.
func (c *Command) code(at, n int) {
	if c.codeAt == 0 {
		c.codeAt, c.codeLen = at, n
	}
}

// Decision is the verdict on a line, with what the prompt shows.
type Decision struct {
	Verdict  Verdict
	Commands []Command // the simple commands, in the order they appear
	// Reason says why: the deny rule and the command it matched, or why
	// the line must ask; "" for Allow.
	Reason string
	// Ruled: an Ask only because no allow rule matches one of its simple
	// commands, so an allow rule naming it would let the line run. A line
	// that asks for its form (a substitution, a file redirection, a
	// wrapper...) asks whatever the rules say.
	Ruled bool
}

// Set is a set of allow and deny rules.
type Set struct {
	Allow, Deny []Rule
}

// NewSet parses allow and deny rules.
func NewSet(allow, deny []string) (Set, error) {
	var s Set
	for _, a := range allow {
		r, err := ParseRule(a)
		if err != nil {
			return Set{}, fmt.Errorf("allow rule %q: %w", a, err)
		}
		s.Allow = append(s.Allow, r)
	}
	for _, d := range deny {
		r, err := ParseRule(d)
		if err != nil {
			return Set{}, fmt.Errorf("deny rule %q: %w", d, err)
		}
		s.Deny = append(s.Deny, r)
	}
	return s, nil
}

// Decide parses line and returns the verdict.
func (s Set) Decide(line string) Decision {
	p, err := Parse(line)
	if err != nil {
		return Decision{Verdict: Ask, Reason: err.Error()}
	}
	d := Decision{Verdict: Allow, Commands: p.Commands}
	for _, c := range p.Commands {
		for _, cand := range denyCandidates(c) {
			for _, r := range s.Deny {
				if cand.match(r.words) {
					return Decision{Verdict: Deny, Commands: p.Commands, Reason: fmt.Sprintf("%q matches the deny rule %q", c.Text, r)}
				}
			}
		}
	}
	if p.Ask != "" {
		d.Verdict, d.Reason = Ask, p.Ask
		return d
	}
	for _, c := range p.Commands {
		if c.Ask != "" {
			d.Verdict, d.Reason = Ask, fmt.Sprintf("%q: %s", c.Text, c.Ask)
			return d
		}
		if !s.allows(c) {
			d.Verdict, d.Reason, d.Ruled = Ask, fmt.Sprintf("no allow rule matches %q", c.Text), true
			if c.codeAt > 0 {
				d.Reason = fmt.Sprintf("%q runs interpreter code: only an allow rule that names %s allows it (%q)", c.Text, c.codeName(), c.codeRule())
			}
			return d
		}
	}
	return d
}

func (s Set) allows(c Command) bool {
	for _, r := range s.Allow {
		if c.codeAt == 0 && r.match(c.Words) || c.codeAt > 0 && matchNaming(r.words, c.Words, 0, c.codeAt, c.codeLen) {
			return true
		}
	}
	return false
}

// matchNaming is matchWords where the word at index at must be met by a rule
// word whose text before any "*" spells out its first n bytes (python -c *
// names -c; python * does not). at == len(words) means the code comes from
// standard input: only a rule without a "*" word names that.
func matchNaming(pat []string, words []*string, i, at, n int) bool {
	if at == len(words) && slices.Contains(pat, "*") {
		return false
	}
	if len(pat) == 0 {
		return i == len(words)
	}
	if pat[0] == "*" {
		for k := i; k <= len(words); k++ {
			if i <= at && at < k {
				return false // the * would swallow the code option
			}
			if matchNaming(pat[1:], words, k, at, n) {
				return true
			}
		}
		return false
	}
	if i == len(words) || words[i] != nil && !matchWord(pat[0], *words[i]) {
		return false
	}
	if i == at {
		head, _, _ := strings.Cut(pat[0], "*")
		if words[i] == nil || len(head) < n {
			return false
		}
	}
	return matchNaming(pat[1:], words, i+1, at, n)
}

// codeName is the option that gives c's interpreter code, as written.
func (c Command) codeName() string {
	if c.codeAt >= len(c.Words) || c.Words[c.codeAt] == nil {
		return "its program read from standard input, with no *"
	}
	return (*c.Words[c.codeAt])[:c.codeLen]
}

// codeRule is an allow rule that would allow c's code.
func (c Command) codeRule() string {
	var words []string
	for i, w := range c.Words {
		if i > c.codeAt || w == nil {
			break
		}
		words = append(words, *w)
	}
	if c.codeAt >= len(c.Words) {
		return strings.Join(words, " ")
	}
	if opt := (*c.Words[c.codeAt])[:c.codeLen]; opt != *c.Words[c.codeAt] {
		words[len(words)-1] = opt + "*" // the code (or more options) follows in the word
	}
	return strings.Join(words, " ") + " *"
}

// Parsed is a line's simple commands and the line-level reason to ask.
type Parsed struct {
	Commands []Command
	Ask      string // a substitution, a file redirection, a function...; "" if none
}

// Parse parses a line into its simple commands, following sh -c bodies.
func Parse(line string) (Parsed, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return Parsed{}, fmt.Errorf("the command line does not parse: %v", err)
	}
	budget := maxWork
	w := &walker{src: line, aliases: map[string]*string{}, budget: &budget}
	for _, st := range f.Stmts {
		w.stmt(st)
	}
	return Parsed{Commands: w.cmds, Ask: w.ask}, nil
}

// maxWork bounds the words read by tool tables and wrapper tails in one line
// (a wrapper's tails are read one by one: `xargs tar tar tar ...`).
const maxWork = 200_000

// walker collects the simple commands of one line, or of a line nested in it
// (an sh -c body, an option's value), and the line's reason to ask.
type walker struct {
	src   string
	cmds  []Command
	ask   string
	depth int // nesting of lines in lines
	// aliases are the aliases the line defines, by name (nil: a value known
	// only at run time); nested lines share them.
	aliases map[string]*string
	budget  *int // the work left, shared by nested walkers
}

// spend takes n from the work budget; when it runs out the line asks.
func (w *walker) spend(n int) bool {
	if *w.budget < n {
		w.askLine("the line is too long to check the commands it wraps")
		return false
	}
	*w.budget -= n
	return true
}

func (w *walker) askLine(reason string) {
	if w.ask == "" {
		w.ask = reason
	}
}

func (w *walker) text(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(w.src) || start > end {
		return ""
	}
	return w.src[start:end]
}

func (w *walker) stmt(st *syntax.Stmt) {
	for _, r := range st.Redirs {
		w.redirect(r)
	}
	w.substitutions(st)
	switch c := st.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		w.call(c)
	case *syntax.BinaryCmd:
		w.stmt(c.X)
		w.stmt(c.Y)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			w.stmts(c.Cond)
			w.stmts(c.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		w.stmts(c.Do)
	case *syntax.CaseClause:
		for _, it := range c.Items {
			w.stmts(it.Stmts)
		}
	case *syntax.TestClause, *syntax.ArithmCmd:
		// [[ ]] and (( )) run nothing; a substitution inside was seen above.
	case *syntax.FuncDecl:
		w.askLine("it defines a function")
		w.stmt(c.Body)
	case *syntax.TimeClause:
		w.askLine("it times another command")
		if c.Stmt != nil {
			w.stmt(c.Stmt)
		}
	default:
		w.askLine(fmt.Sprintf("%q is not a simple command", w.text(c)))
	}
}

func (w *walker) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		w.stmt(s)
	}
}

// substitutions asks for command and process substitutions anywhere in st,
// and walks their commands so deny rules see them.
func (w *walker) substitutions(st *syntax.Stmt) {
	syntax.Walk(st, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			return n == st // nested statements are walked when stmt reaches them
		case *syntax.CmdSubst:
			w.askLine("it runs a command substitution")
			w.stmts(n.Stmts)
			return false
		case *syntax.ProcSubst:
			w.askLine("it runs a process substitution")
			w.stmts(n.Stmts)
			return false
		}
		return true
	})
}

// redirect asks for output to a file other than /dev/null.
func (w *walker) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return
	case syntax.DplOut:
		if v := r.Word.Lit(); v == "-" || isNumber(v) {
			return
		}
	}
	if r.Word != nil && r.Word.Lit() == "/dev/null" {
		return
	}
	w.askLine(fmt.Sprintf("it redirects output to a file (%s)", w.text(r)))
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// call records one simple command.
func (w *walker) call(c *syntax.CallExpr) {
	cmd := Command{Text: w.text(c)}
	if len(c.Args) == 0 {
		w.askLine(fmt.Sprintf("%q sets shell variables", cmd.Text))
		return
	}
	if len(c.Assigns) > 0 {
		cmd.Ask = "it sets environment variables for the command"
	}
	for i, word := range c.Args {
		v, how := literal(word)
		switch {
		case i == 0 && how != plainWord:
			cmd.Ask = "the command name " + how.String()
		case how == expanded || how == globbed:
			if cmd.Ask == "" {
				cmd.Ask = "an argument " + how.String()
			}
		}
		cmd.Words = append(cmd.Words, v)
	}
	if cmd.Words[0] != nil {
		cmd.Name = *cmd.Words[0]
	}
	at := len(w.cmds)
	w.cmds = append(w.cmds, cmd) // first; commands found inside it follow
	w.alias(&cmd, c)
	w.inspect(&cmd)
	w.cmds[at] = cmd
}

// wordKind says how literal a word is.
type wordKind int

const (
	plainWord wordKind = iota // unquoted literal text
	quoted                    // quotes or escapes; its value is known
	globbed                   // unquoted glob or brace characters or ~: it expands to other words
	expanded                  // a variable, substitution or arithmetic: known only at run time
)

func (k wordKind) String() string {
	return [...]string{"is plain", "is quoted or escaped", "has glob or brace characters", "is expanded at run time"}[k]
}

// literal returns a word's value after quote removal (nil when it is known
// only at run time) and how literal the word is.
func literal(word *syntax.Word) (*string, wordKind) {
	kind := plainWord
	for _, part := range word.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[{") || strings.HasPrefix(p.Value, "~") {
				kind = max(kind, globbed)
			} else if strings.Contains(p.Value, `\`) {
				kind = max(kind, quoted)
			}
		case *syntax.SglQuoted:
			kind = max(kind, quoted)
		case *syntax.DblQuoted:
			if !onlyLits(p.Parts) {
				return nil, expanded
			}
			kind = max(kind, quoted)
		default:
			return nil, expanded
		}
	}
	switch kind {
	case plainWord:
		v := word.Lit()
		return &v, kind
	case globbed:
		return nil, kind // never expanded here: {1..1000000000} is a billion words
	}
	// Quote removal as for a command word. A nil config would share (and
	// modify, in v3.14.1) expand's package-level config: racy under
	// parallel tool calls, so each call gets its own.
	fields, err := expand.Fields(&expand.Config{}, word)
	if err != nil || len(fields) != 1 {
		return nil, expanded
	}
	return &fields[0], kind
}

func onlyLits(parts []syntax.WordPart) bool {
	for _, p := range parts {
		if _, ok := p.(*syntax.Lit); !ok {
			return false
		}
	}
	return true
}

package shellrule

import "strings"

// sedLexer reads a sed script in GNU sed's syntax, command by command.
type sedLexer struct {
	s string
	i int
}

const sedUnreadable = "the sed script does not parse as GNU sed (so its e commands cannot be seen)"

// sedExec reads a sed script for what it executes: the commands of `e
// COMMAND`, and the replacements of s///e (the command is the pattern space
// after the substitution). reason says why the script asks, "" if it needs
// not: `e` alone and s///e run text made from the input, and a script the
// lexer cannot read may hide either.
func sedExec(script string) (commands, replacements []string, reason string) {
	l := &sedLexer{s: script}
	for {
		l.skip(" \t\n;")
		if l.i >= len(l.s) {
			return commands, replacements, reason
		}
		if c := l.s[l.i]; c == '#' || c == '}' {
			if c == '#' {
				l.line()
			} else {
				l.i++
			}
			continue
		}
		if !l.addresses() || l.i >= len(l.s) {
			return nil, nil, sedUnreadable
		}
		c := l.s[l.i]
		l.i++
		switch {
		case c == 'e':
			cmd := strings.TrimSpace(l.line())
			if cmd == "" {
				reason = "sed's e command runs the pattern space, made from the input, as a command"
			} else {
				commands = append(commands, cmd)
			}
		case c == 's':
			repl, exec, ok := l.substitute()
			if !ok {
				return nil, nil, sedUnreadable
			}
			if exec {
				replacements = append(replacements, repl)
				reason = "sed's s///e runs the pattern space, made from the input, as a command"
			}
		case c == 'y':
			if _, ok := l.part(); !ok {
				return nil, nil, sedUnreadable
			}
			if _, ok := l.part(); !ok {
				return nil, nil, sedUnreadable
			}
		case !l.simple(c):
			return nil, nil, sedUnreadable
		}
	}
}

// simple reads the rest of a command other than e, s and y; false for one
// sed does not have.
func (l *sedLexer) simple(c byte) bool {
	switch {
	case c == '{' || strings.IndexByte("=dDgGhHnNpPxzF", c) >= 0:
	case strings.IndexByte("lLqQ", c) >= 0:
		l.skip(" \t")
		l.skip("0123456789")
	case strings.IndexByte(":btTv", c) >= 0:
		l.until("\n;")
	case strings.IndexByte("aic", c) >= 0:
		// One line of text, continued by a backslash at the end of a line.
		for {
			line := l.line()
			if !strings.HasSuffix(line, `\`) || l.i >= len(l.s) {
				break
			}
		}
	case strings.IndexByte("rRwW", c) >= 0:
		l.line() // a file name
	default:
		return false
	}
	return true
}

// addresses reads a command's addresses: none, one or two, then "!".
func (l *sedLexer) addresses() bool {
	if !l.address(false) {
		return false
	}
	l.skip(" \t")
	if l.i < len(l.s) && l.s[l.i] == ',' {
		l.i++
		l.skip(" \t")
		if !l.address(true) {
			return false
		}
	}
	l.skip(" \t!")
	return true
}

// address reads one address if there is one: N, N~M, $, /RE/ or \cREc
// (with I and M flags), and after a comma +N and ~N.
func (l *sedLexer) address(second bool) bool {
	if l.i >= len(l.s) {
		return true
	}
	switch c := l.s[l.i]; {
	case c >= '0' && c <= '9' || second && (c == '+' || c == '~'):
		l.i++
		l.skip("0123456789")
		if l.i < len(l.s) && l.s[l.i] == '~' {
			l.i++
			l.skip("0123456789")
		}
	case c == '$':
		l.i++
	case c == '/' || c == '\\':
		if c == '\\' {
			l.i++
		}
		if _, ok := l.part(); !ok {
			return false
		}
		l.skip("IM")
	}
	return true
}

// substitute reads s's regex, replacement and flags (after the s).
func (l *sedLexer) substitute() (repl string, exec, ok bool) {
	if _, ok := l.part(); !ok {
		return "", false, false
	}
	l.i-- // the regex's closing delimiter opens the replacement
	if repl, ok = l.part(); !ok {
		return "", false, false
	}
	for l.i < len(l.s) {
		switch c := l.s[l.i]; {
		case c == 'e':
			exec = true
		case c == 'w':
			l.line()
			return repl, exec, true
		case strings.IndexByte(" \t\n;}#", c) >= 0:
			return repl, exec, true
		case strings.IndexByte("gpiImM0123456789", c) < 0:
			return "", false, false
		}
		l.i++
	}
	return repl, exec, true
}

// part reads a delimited part: the delimiter at l.i, text up to the next
// unescaped delimiter, which it consumes. A newline ends it unescaped only
// in the replacement, which sed allows escaped.
func (l *sedLexer) part() (string, bool) {
	if l.i >= len(l.s) || l.s[l.i] == '\n' || l.s[l.i] == '\\' {
		return "", false
	}
	delim := l.s[l.i]
	l.i++
	start := l.i
	for ; l.i < len(l.s); l.i++ {
		switch l.s[l.i] {
		case '\\':
			l.i++
		case delim:
			l.i++
			return l.s[start : l.i-1], true
		}
	}
	return "", false
}

// line reads the rest of the line (and its newline), returning it without.
func (l *sedLexer) line() string {
	start := l.i
	l.until("\n")
	text := l.s[start:l.i]
	if l.i < len(l.s) {
		l.i++
	}
	return text
}

func (l *sedLexer) skip(set string) {
	for l.i < len(l.s) && strings.IndexByte(set, l.s[l.i]) >= 0 {
		l.i++
	}
}

func (l *sedLexer) until(set string) {
	for l.i < len(l.s) && strings.IndexByte(set, l.s[l.i]) < 0 {
		l.i++
	}
}

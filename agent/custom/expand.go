package custom

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Parse splits a prompt typed as a slash command, "/name arguments", into
// the name and the rest; ok is false when the prompt is not one (it does
// not start with "/" followed by a name: "/ path" or "/usr/bin" are prose).
func Parse(prompt string) (name, args string, ok bool) {
	p := strings.TrimLeftFunc(prompt, unicode.IsSpace)
	if !strings.HasPrefix(p, "/") {
		return "", "", false
	}
	head, rest, _ := strings.Cut(p[1:], " ")
	if i := strings.IndexAny(head, "\n\t"); i >= 0 {
		head, rest = head[:i], head[i+1:]+" "+rest
	}
	if !validName(head) || strings.Contains(head, "/") {
		return "", "", false
	}
	return head, strings.TrimSpace(rest), true
}

var placeholder = regexp.MustCompile(`\$(ARGUMENTS|[1-9])`)

// Expand is the command's prompt for the arguments typed after its name:
// $ARGUMENTS becomes all of them, $1 to $9 the words (a quoted string is one
// word; a missing one is empty). A body without placeholders gets the
// arguments after it, on a line of their own.
func (c Command) Expand(args string) string {
	if !placeholder.MatchString(c.Body) {
		if args == "" {
			return c.Body
		}
		return c.Body + "\n\nARGUMENTS: " + args
	}
	words := Words(args)
	return placeholder.ReplaceAllStringFunc(c.Body, func(m string) string {
		if m == "$ARGUMENTS" {
			return args
		}
		i := int(m[1] - '1')
		if i < len(words) {
			return words[i]
		}
		return ""
	})
}

// Words splits arguments as a shell would split plain words and quotes:
// "a b" and 'a b' are one word each, without their quotes.
func Words(s string) []string {
	var out []string
	var b strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

// Reference is a file an @path names: the path as written, and its text.
type Reference struct {
	Path string
	Text string
}

// MaxReferences bounds the files one prompt inlines.
const MaxReferences = 20

var reference = regexp.MustCompile(`(^|[\s(\[{"'])@([^\s@"'()\[\]{}<>` + "`" + `]+)`)

// References finds the @path references of text: at its start or after
// white space or an opening bracket or quote, trailing punctuation left
// out. Each path once, at most MaxReferences.
func References(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range reference.FindAllStringSubmatch(text, -1) {
		p := strings.TrimRight(m[2], ".,;:!?")
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		if len(out) == MaxReferences {
			break
		}
	}
	return out
}

// Attach is text with each referenced file's text after it, fenced (the
// reference stays where it is, as a name).
func Attach(text string, refs []Reference) string {
	var b strings.Builder
	b.WriteString(text)
	for _, r := range refs {
		fence := fenceFor(r.Text)
		fmt.Fprintf(&b, "\n\n(@%s is attached:)\n%s\n%s\n%s", r.Path, fence, strings.TrimRight(r.Text, "\n"), fence)
	}
	return b.String()
}

// fenceFor is a code fence longer than every run of backticks in text.
func fenceFor(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// Suggest returns the names of candidates closest to name (by edit
// distance, or sharing a prefix), at most three, best first.
func Suggest(name string, candidates []string) []string {
	type scored struct {
		name string
		d    int
	}
	var list []scored
	for _, c := range candidates {
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if strings.HasPrefix(strings.ToLower(c), strings.ToLower(name)) || strings.HasPrefix(strings.ToLower(name), strings.ToLower(c)) {
			d = min(d, 1)
		}
		if d <= max(2, len(name)/3) {
			list = append(list, scored{c, d})
		}
	}
	for i := 1; i < len(list); i++ { // insertion sort: stable, and the lists are short
		for j := i; j > 0 && list[j].d < list[j-1].d; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	var out []string
	for _, s := range list[:min(3, len(list))] {
		out = append(out, s.name)
	}
	return out
}

// distance is the Levenshtein distance of a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

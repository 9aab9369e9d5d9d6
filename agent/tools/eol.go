package tools

import "strings"

// lineEnding is the line ending text uses: "\r\n" when its first line ends
// so (a file written on Windows), else "\n".
func lineEnding(text string) string {
	if i := strings.IndexByte(text, '\n'); i > 0 && text[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// withEOL is s with its line endings made eol: the model reads a file's
// lines without their "\r" and writes "\n", and a CRLF file edited keeps
// CRLF.
func withEOL(s, eol string) string {
	if eol == "\n" || !strings.Contains(s, "\n") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", eol)
}

package model

import (
	"errors"
	"strings"
)

// MinRedactedKey is the length of the shortest API key that is redacted from
// what an endpoint answers. A shorter "key" is likely a word (a local
// server's placeholder such as "none" or "ollama"), and replacing every
// occurrence of a word garbles the messages it appears in; `agent-lsp
// doctor` warns that such keys are not redacted.
const MinRedactedKey = 12

// Redacted is what stands for a key in a redacted text.
const Redacted = "[redacted]"

// Redact replaces key in s where it stands as a whole token (not inside a
// longer word: the characters next to it are neither letters, digits, '-'
// nor '_'), when key has at least MinRedactedKey bytes.
func Redact(s, key string) string {
	if len(key) < MinRedactedKey || !strings.Contains(s, key) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, key)
		if i < 0 {
			break
		}
		end := i + len(key)
		if (i > 0 && tokenByte(s[i-1])) || (end < len(s) && tokenByte(s[end])) {
			b.WriteString(s[:i+1]) // inside a longer token: look on from the next byte
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(Redacted)
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}

// tokenByte reports whether c continues a key-like token.
func tokenByte(c byte) bool {
	return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// redact removes the API key from an error's text (Redact), in case a server
// echoes it.
func redact(err error, key string) error {
	if r := Redact(err.Error(), key); r != err.Error() {
		return errors.New(r)
	}
	return err
}

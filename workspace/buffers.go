package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Encoding is the unit of LSP character offsets.
type Encoding string

// Position encodings.
const (
	UTF16 Encoding = "utf-16"
	UTF8  Encoding = "utf-8"
)

// Position is a zero-based line and character offset in Encoding units.
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is a half-open span of text.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Change is one content change of a didChange notification: a replacement of
// Range, or of the whole text when Range is nil.
type Change struct {
	Range *Range
	Text  string
}

// Offset converts pos to a byte offset in text. A character past the end of
// its line means the end of the line; a line past the end means the end of text.
func Offset(text string, pos Position, enc Encoding) int {
	start := 0
	for line := uint32(0); line < pos.Line; line++ {
		i := strings.IndexByte(text[start:], '\n')
		if i < 0 {
			return len(text)
		}
		start += i + 1
	}
	lineEnd := len(text)
	if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
		lineEnd = start + i
		if lineEnd > start && text[lineEnd-1] == '\r' {
			lineEnd--
		}
	}
	if enc == UTF8 {
		off := start + int(pos.Character)
		if off > lineEnd {
			return lineEnd
		}
		for off > start && off < len(text) && !utf8.RuneStart(text[off]) { // never split a rune
			off--
		}
		return off
	}
	units := uint32(0)
	off := start
	for off < lineEnd && units < pos.Character {
		r, size := utf8.DecodeRuneInString(text[off:])
		n := uint32(1)
		if r >= 0x10000 {
			n = 2
		}
		if units+n > pos.Character { // inside a surrogate pair: stay before it
			break
		}
		units += n
		off += size
	}
	return off
}

// PositionOf converts a byte offset in text to a Position.
func PositionOf(text string, offset int, enc Encoding) Position {
	if offset > len(text) {
		offset = len(text)
	}
	for offset > 0 && offset < len(text) && !utf8.RuneStart(text[offset]) {
		offset--
	}
	line := strings.Count(text[:offset], "\n")
	start := strings.LastIndexByte(text[:offset], '\n') + 1
	var char uint32
	if enc == UTF8 {
		char = uint32(offset - start)
	} else {
		for _, r := range text[start:offset] {
			if r >= 0x10000 {
				char += 2
			} else {
				char++
			}
		}
	}
	return Position{Line: uint32(line), Character: char}
}

// ApplyChanges applies content changes in order and returns the new text.
func ApplyChanges(text string, changes []Change, enc Encoding) (string, error) {
	for _, c := range changes {
		if c.Range == nil {
			text = c.Text
			continue
		}
		a := Offset(text, c.Range.Start, enc)
		b := Offset(text, c.Range.End, enc)
		if b < a {
			return "", fmt.Errorf("range end %d:%d is before its start %d:%d",
				c.Range.End.Line, c.Range.End.Character, c.Range.Start.Line, c.Range.Start.Character)
		}
		text = text[:a] + c.Text + text[b:]
	}
	return text, nil
}

package model

import (
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	openai "github.com/sashabaranov/go-openai"
)

// decodeChunk decodes the chunks of the shape providers send into c, the
// zero chunk, without reflection: a stream's chunks are most of what a tool
// turn decodes. It reports false for anything outside that shape (a key in
// another case or twice, a value of another type, a number that is not a
// plain integer, nesting deeper than maxChunkDepth, more than maxChunkKeys
// keys in an object, invalid UTF-8, a string jsontext will not unquote,
// invalid JSON): the caller then decodes the
// chunk with encoding/json's semantics, which also gives the error. Where it
// reports true, c is what that decoding makes (FuzzDecodeChunk checks it).
func decodeChunk(data []byte, c *chunk) bool {
	s := chunkScanner{data: data}
	s.space()
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if s.at('[') {
				c.Choices = []chunkChoice{} // an empty array is an empty slice, as in encoding/json
			}
			return s.array(func() bool {
				c.Choices = append(c.Choices, chunkChoice{})
				ch := &c.Choices[len(c.Choices)-1]
				return s.object(func(key []byte) bool {
					switch string(key) {
					case "delta":
						return s.object(func(key []byte) bool {
							switch string(key) {
							case "content":
								return s.str(&ch.Delta.Content)
							case "tool_calls":
								if s.at('[') {
									ch.Delta.ToolCalls = []openai.ToolCall{}
								}
								return s.array(func() bool {
									ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, openai.ToolCall{})
									return s.toolCall(&ch.Delta.ToolCalls[len(ch.Delta.ToolCalls)-1])
								})
							}
							return s.other(key, "content", "tool_calls")
						})
					case "finish_reason":
						return s.str(&ch.FinishReason)
					}
					return s.other(key, "delta", "finish_reason")
				})
			})
		case "usage":
			if s.null() {
				return true
			}
			u := new(chunkUsage)
			c.Usage = u
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "prompt_tokens":
					return s.integer(&u.PromptTokens)
				case "completion_tokens":
					return s.integer(&u.CompletionTokens)
				case "total_tokens":
					return s.integer(&u.TotalTokens)
				}
				return s.other(key, "prompt_tokens", "completion_tokens", "total_tokens")
			})
		}
		return s.other(key, "choices", "usage")
	})
	s.space()
	return ok && s.i == len(s.data)
}

// toolCall decodes one tool-call delta.
func (s *chunkScanner) toolCall(tc *openai.ToolCall) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			if s.null() {
				return true
			}
			tc.Index = new(int)
			return s.integer(tc.Index)
		case "id":
			return s.str(&tc.ID)
		case "type":
			var t string
			if !s.str(&t) {
				return false
			}
			tc.Type = openai.ToolType(t)
			return true
		case "function":
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "name":
					return s.str(&tc.Function.Name)
				case "arguments":
					return s.str(&tc.Function.Arguments)
				}
				return s.other(key, "name", "arguments")
			})
		}
		return s.other(key, "index", "id", "type", "function")
	})
}

// maxChunkDepth bounds the nesting decodeChunk reads, and maxChunkKeys the
// keys of one object (OpenAI's chunks have nine); other chunks go to the
// full decoder.
const (
	maxChunkDepth = 32
	maxChunkKeys  = 64
)

// chunkScanner reads one chunk's JSON. Each method reports false when the
// input is outside what decodeChunk takes.
type chunkScanner struct {
	data    []byte
	i       int
	depth   int
	escaped bool // the last string read holds escapes
}

// at reports whether b is the next byte.
func (s *chunkScanner) at(b byte) bool { return s.i < len(s.data) && s.data[s.i] == b }

func (s *chunkScanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads an object, calling field for each key with the scanner at
// its value; a key escaped or seen twice (encoding/json merges repeated
// keys) is refused.
func (s *chunkScanner) object(field func(key []byte) bool) bool {
	var buf [16][]byte
	seen := buf[:0]
	return s.items('{', '}', func() bool {
		key, ok := s.rawString()
		if !ok || s.escaped || len(seen) == maxChunkKeys {
			return false // an escaped key may spell a known one
		}
		for _, k := range seen {
			if string(k) == string(key) {
				return false
			}
		}
		seen = append(seen, key)
		s.space()
		if !s.at(':') {
			return false
		}
		s.i++
		s.space()
		return field(key)
	})
}

// array reads an array (or null), calling elem with the scanner at each
// element.
func (s *chunkScanner) array(elem func() bool) bool {
	return s.null() || s.items('[', ']', elem)
}

// items reads what open and end enclose, item after item separated by
// commas, within maxChunkDepth.
func (s *chunkScanner) items(open, end byte, item func() bool) bool {
	if !s.at(open) || s.depth >= maxChunkDepth {
		return false
	}
	s.depth++
	s.i++
	s.space()
	if s.at(end) {
		s.i++
		s.depth--
		return true
	}
	for {
		if !item() {
			return false
		}
		s.space()
		switch {
		case s.at(','):
			s.i++
			s.space()
		case s.at(end):
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// other skips the value of a key that is none of known; a key that matches
// one of them but for case (encoding/json would take it) is refused.
func (s *chunkScanner) other(key []byte, known ...string) bool {
	for _, k := range known {
		if equalFoldASCII(key, k) {
			return false
		}
	}
	return s.skip()
}

// equalFoldASCII reports whether key may match k (lower-case ASCII) the
// way a decoder that ignores case, and perhaps '_' and '-', matches names.
// A key with non-ASCII bytes may: Unicode folding (the Kelvin sign, the
// long s) reaches ASCII.
func equalFoldASCII(key []byte, k string) bool {
	i, j := 0, 0
	for {
		for i < len(key) && (key[i] == '_' || key[i] == '-') {
			i++
		}
		for j < len(k) && (k[j] == '_' || k[j] == '-') {
			j++
		}
		if i == len(key) || j == len(k) {
			return i == len(key) && j == len(k)
		}
		b := key[i]
		if b >= utf8.RuneSelf {
			return true
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != k[j] {
			return false
		}
		i++
		j++
	}
}

// null reads a null if one is next.
func (s *chunkScanner) null() bool {
	if len(s.data)-s.i >= 4 && string(s.data[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string (or null, which leaves *dst as it is).
func (s *chunkScanner) str(dst *string) bool {
	if s.null() {
		return true
	}
	start := s.i
	raw, ok := s.rawString()
	if !ok {
		return false
	}
	if s.escaped {
		b, err := jsontext.AppendUnquote(nil, s.data[start:s.i])
		if err != nil {
			return false
		}
		*dst = string(b)
		return true
	}
	*dst = string(raw)
	return true
}

// rawString reads a string, returning what is between its quotes. It
// refuses control characters and invalid UTF-8, and records in s.escaped
// whether the string holds escapes (which it checks but leaves as they are).
func (s *chunkScanner) rawString() ([]byte, bool) {
	d, i := s.data, s.i
	if i >= len(d) || d[i] != '"' {
		return nil, false
	}
	i++
	start := i
	s.escaped = false
	ascii := true
	for {
		for i < len(d) && unquoted[d[i]] {
			i++
		}
		if i >= len(d) {
			return nil, false
		}
		switch b := d[i]; {
		case b == '"':
			raw := d[start:i]
			s.i = i + 1
			if !ascii && !utf8.Valid(raw) {
				return nil, false
			}
			return raw, true
		case b == '\\':
			s.escaped = true
			if i+1 >= len(d) {
				return nil, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return nil, false
				}
				for _, h := range d[i+2 : i+6] {
					if !isHex(h) {
						return nil, false
					}
				}
				i += 6
			default:
				return nil, false
			}
		case b < 0x20:
			return nil, false
		default: // b >= utf8.RuneSelf
			ascii = false
			i++
		}
	}
}

// unquoted are the bytes a JSON string holds as they are: not a quote, a
// backslash, a control character or the start of a multi-byte rune.
var unquoted = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

// integer reads an integer of int's range written without a fraction or
// exponent (or null, which leaves *dst as it is).
func (s *chunkScanner) integer(dst *int) bool {
	if s.null() {
		return true
	}
	start := s.i
	if s.i < len(s.data) && s.data[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.data) && '0' <= s.data[s.i] && s.data[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || (s.data[digits] == '0' && s.i-digits > 1) {
		return false
	}
	if s.i < len(s.data) {
		switch s.data[s.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	n, err := strconv.Atoi(string(s.data[start:s.i]))
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// skip reads any value this scanner takes, checking it.
func (s *chunkScanner) skip() bool {
	if s.i >= len(s.data) {
		return false
	}
	switch b := s.data[s.i]; {
	case b == '{':
		return s.object(func([]byte) bool { return s.skip() })
	case b == '[':
		return s.array(s.skip)
	case b == '"':
		_, ok := s.rawString()
		return ok
	case b == 't':
		return s.literal("true")
	case b == 'f':
		return s.literal("false")
	case b == 'n':
		return s.null()
	case b == '-' || '0' <= b && b <= '9':
		return s.number()
	}
	return false
}

func (s *chunkScanner) literal(lit string) bool {
	if len(s.data)-s.i >= len(lit) && string(s.data[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number reads a JSON number.
func (s *chunkScanner) number() bool {
	d := s.data
	if s.i < len(d) && d[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(d) && d[s.i] == '0':
		s.i++
	case s.i < len(d) && '1' <= d[s.i] && d[s.i] <= '9':
		for s.i < len(d) && '0' <= d[s.i] && d[s.i] <= '9' {
			s.i++
		}
	default:
		return false
	}
	if s.i < len(d) && d[s.i] == '.' {
		s.i++
		start := s.i
		for s.i < len(d) && '0' <= d[s.i] && d[s.i] <= '9' {
			s.i++
		}
		if s.i == start {
			return false
		}
	}
	if s.i < len(d) && (d[s.i] == 'e' || d[s.i] == 'E') {
		s.i++
		if s.i < len(d) && (d[s.i] == '+' || d[s.i] == '-') {
			s.i++
		}
		start := s.i
		for s.i < len(d) && '0' <= d[s.i] && d[s.i] <= '9' {
			s.i++
		}
		if s.i == start {
			return false
		}
	}
	return true
}

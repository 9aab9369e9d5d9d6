package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// appendRequest appends the JSON body of a streamed chat request for model
// to b, the tools' parameters as params has them: byte for byte what encoding/json makes of the go-openai
// ChatCompletionRequest the same request is (model, messages, stream, tools,
// stream_options with usage), without its reflection, per-message
// MarshalJSON and re-compaction of their output, which cost a few hundred
// microseconds a turn once a session has some history. A tool's Parameters
// that are not valid JSON fail the request, as they did there.
func appendRequest(b []byte, model string, req Request, params *paramCache, msgs *messageCache) ([]byte, error) {
	b = append(b, `{"model":`...)
	b = appendString(b, model)
	b = append(b, `,"messages":[`...)
	b = msgs.appendAll(b, req.Messages)
	b = append(b, `],"stream":true`...)
	if len(req.Tools) > 0 {
		tools, err := params.tools(req.Tools)
		if err != nil {
			return nil, err
		}
		b = append(b, tools...)
	}
	return append(b, `,"stream_options":{"include_usage":true}}`...), nil
}

// completionOnly are the models go-openai refuses to send to the chat
// endpoint (its disabledModelsForEndpoints): they only complete text.
var completionOnly = []string{
	openai.CodexCodeDavinci002, openai.CodexCodeCushman001, openai.CodexCodeDavinci001,
	openai.GPT3TextDavinci003, openai.GPT3TextDavinci002, openai.GPT3TextCurie001,
	openai.GPT3TextBabbage001, openai.GPT3TextAda001, openai.GPT3TextDavinci001,
	openai.GPT3DavinciInstructBeta, openai.GPT3Davinci, openai.GPT3CurieInstructBeta,
	openai.GPT3Curie, openai.GPT3Ada, openai.GPT3Babbage,
}

// check refuses, before anything is sent, what go-openai refused: a model
// that only completes text, and what its reasoning validator rejects (tools
// given to a GPT-6 reasoning model, for one).
func check(model string, req Request) error {
	if slices.Contains(completionOnly, model) {
		return openai.ErrChatCompletionInvalidModel
	}
	// The validator reads the model, whether there are tools, and
	// parameters this package never sets.
	return openai.NewReasoningValidator().Validate(openai.ChatCompletionRequest{Model: model, Stream: true, Tools: make([]openai.Tool, len(req.Tools))})
}

// paramCache holds tool parameters as a request carries them (compacted,
// HTML-escaped), by their text, and the last tool list's whole encoding:
// every request of a run sends the same definitions, and compacting and
// escaping them is a scan of every byte.
type paramCache struct {
	mu       sync.Mutex
	byIn     map[string][]byte
	last     []ToolSpec // the last list tools encoded, and its encoding
	lastJSON []byte
}

// tools returns `,"tools":[...]` for specs, from the last list's encoding
// while specs is that list again (every request of a run sends the same
// definitions, and escaping their descriptions was most of a request's
// encoding once the history came from the message cache).
func (c *paramCache) tools(specs []ToolSpec) ([]byte, error) {
	c.mu.Lock()
	if slices.EqualFunc(c.last, specs, sameSpec) {
		defer c.mu.Unlock()
		return c.lastJSON, nil
	}
	c.mu.Unlock()
	b := append([]byte(nil), `,"tools":[`...)
	for i, t := range specs {
		if i > 0 {
			b = append(b, ',')
		}
		// go-openai writes a tool through a map: its keys sorted.
		b = append(b, `{"function":{"name":`...)
		b = appendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = appendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		if t.Parameters == nil {
			b = append(b, "null"...)
		} else {
			p, err := c.get(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("parameters of tool %s: %w", t.Name, err)
			}
			b = append(b, p...)
		}
		b = append(b, `},"type":"function"}`...)
	}
	b = append(b, ']')
	last := make([]ToolSpec, len(specs))
	for i, t := range specs {
		last[i] = ToolSpec{t.Name, t.Description, bytes.Clone(t.Parameters)} // the caller's bytes may change
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.lastJSON = last, b
	return b, nil
}

// sameSpec reports whether two tool specs encode alike.
func sameSpec(a, b ToolSpec) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters) && (a.Parameters == nil) == (b.Parameters == nil)
}

// maxParamCache bounds the cache's entries; past it, it starts over.
const maxParamCache = 1024

// get returns p compacted and HTML-escaped, as encoding/json writes a
// json.RawMessage, or the error that makes it invalid.
func (c *paramCache) get(p json.RawMessage) ([]byte, error) {
	c.mu.Lock()
	out, ok := c.byIn[string(p)]
	c.mu.Unlock()
	if ok {
		return out, nil
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, p); err != nil {
		return nil, err
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	out = escaped.Bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byIn == nil || len(c.byIn) >= maxParamCache {
		c.byIn = map[string][]byte{}
	}
	c.byIn[string(p)] = out
	return out, nil
}

// messageCache holds messages as requests carry them, by message ID: each
// request of a session sends its history again, and escaping it anew was
// most of a request's encoding once a session had some turns. An entry is
// used only for a message equal to the one it was made of (a message cut to
// fit the window has the ID of the whole one): comparing strings that share
// their bytes, as the history's messages do from one turn to the next, takes
// no time.
type messageCache struct {
	mu   sync.Mutex // guards the fields below
	byID map[string]encodedMessage
	size int // bytes encoded in byID
	// last is the last request's messages by position: the next request of
	// its session carries them again, and a look at the same position is
	// faster than one in a large map. Sessions that interleave overwrite
	// each other's entries.
	last []encodedMessage
	// plain is the last message without an ID encoded (the system prompt,
	// rebuilt for every request and most often the same text).
	plain encodedMessage
}

type encodedMessage struct {
	m    message.Message
	json []byte
}

// maxMessageCache bounds the bytes the cache keeps; past it, it starts over.
const maxMessageCache = 16 << 20

// appendAll appends msgs as chat messages (appendMessage) separated by
// commas, each from the cache when it holds it. A nil cache encodes them all.
func (c *messageCache) appendAll(b []byte, msgs []message.Message) []byte {
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		if c == nil {
			b = appendMessage(b, m)
			continue
		}
		if m.ID == "" {
			if c.plain.json == nil || !sameMessage(c.plain.m, m) {
				start := len(b)
				b = appendMessage(b, m)
				c.plain = encodedMessage{m: m, json: bytes.Clone(b[start:])}
				c.plain.m.ToolCalls = slices.Clone(m.ToolCalls)
				continue
			}
			b = append(b, c.plain.json...)
			continue
		}
		if i < len(c.last) && c.last[i].m.ID == m.ID && sameMessage(c.last[i].m, m) {
			b = append(b, c.last[i].json...)
			continue
		}
		e, ok := c.byID[m.ID]
		if !ok || !sameMessage(e.m, m) {
			start := len(b)
			b = appendMessage(b, m)
			e = c.put(m, bytes.Clone(b[start:]))
		} else {
			b = append(b, e.json...)
		}
		if i < maxLast {
			if i >= len(c.last) {
				c.last = append(c.last, make([]encodedMessage, i+1-len(c.last))...)
			}
			c.last[i] = e
		}
	}
	return b
}

// maxLast bounds the positions messageCache.last keeps.
const maxLast = 100_000

// put keeps enc as m's encoding and returns its entry. c.mu is held.
func (c *messageCache) put(m message.Message, enc []byte) encodedMessage {
	if c.byID == nil || c.size+len(enc) > maxMessageCache {
		c.byID, c.size = map[string]encodedMessage{}, 0
	}
	if old, ok := c.byID[m.ID]; ok {
		c.size -= len(old.json)
	}
	m.ToolCalls = slices.Clone(m.ToolCalls) // its own: a caller changing its calls in place must not change the key
	e := encodedMessage{m: m, json: enc}
	c.byID[m.ID] = e
	c.size += len(enc)
	return e
}

// sameMessage reports whether a and b are encoded alike: the same role,
// content, tool calls and tool call ID.
func sameMessage(a, b message.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls)
}

// sizeHint is about the size of req's body, escapes aside.
func sizeHint(req Request) int {
	n := 256
	for _, m := range req.Messages {
		n += 64 + len(m.Content) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += 64 + len(c.ID) + len(c.Name) + len(c.Args)
		}
	}
	for _, t := range req.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n + n/8
}

// appendMessage appends m as a chat message: its role, and the fields that
// are set of content, tool calls and tool call ID (the name stays out).
func appendMessage(b []byte, m message.Message) []byte {
	b = append(b, `{"role":`...)
	b = appendString(b, role(m.Role))
	if m.Content != "" {
		b = append(b, `,"content":`...)
		b = appendString(b, m.Content)
	}
	if m.Role == message.AI && len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if c.ID != "" {
				b = append(b, `"id":`...)
				b = appendString(b, c.ID)
				b = append(b, ',')
			}
			b = append(b, `"type":"function","function":{`...)
			if c.Name != "" {
				b = append(b, `"name":`...)
				b = appendString(b, c.Name)
			}
			if c.Args != "" {
				if c.Name != "" {
					b = append(b, ',')
				}
				b = append(b, `"arguments":`...)
				b = appendString(b, c.Args)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if m.Role == message.Tool && m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = appendString(b, m.ToolCallID)
	}
	return append(b, '}')
}

// role is a message role's name in the chat protocol ("" for an unknown one).
func role(r message.Role) string {
	switch r {
	case message.System:
		return "system"
	case message.Human:
		return "user"
	case message.AI:
		return "assistant"
	case message.Tool:
		return "tool"
	}
	return ""
}

const hexDigits = "0123456789abcdef"

// plain are the ASCII bytes a JSON string holds as they are (encoding/json's
// HTML-safe set): not a control character, '"', '\\', '<', '>' or '&'.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string, escaped as encoding/json escapes
// it: HTML's <, > and &, U+2028 and U+2029 as \u escapes, invalid UTF-8 as
// U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = strconv.AppendInt(b, int64(r&0xf), 16)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

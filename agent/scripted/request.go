package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	openai "github.com/sashabaranov/go-openai"
)

// request is what the test double reads of a chat request: what picks the
// answer, and the prompt's token count. Requests of one conversation repeat
// the history, the system prompt and the tools of the one before, so a
// reader (one per server) remembers each message and tool by its JSON and
// decodes and counts only what is new: the test double's time and garbage
// then stay small next to the client it serves, often in the same process.
// Requests decodes go-openai's full request from the recorded body when a
// test asks.
type request struct {
	Messages     []*requestMessage
	Tokens       int  // the prompt's tokens, as CountTokens counts them
	IncludeUsage bool // stream_options.include_usage
	// ResponseFormat: the request has a response_format (structured output).
	ResponseFormat bool
}

// requestMessage is a chat message as request reads it. Text is its string
// content; Parts its list content (MultiContent in go-openai's terms).
type requestMessage struct {
	Role         string           `json:"role"`
	Content      json.RawMessage  `json:"content"`
	Name         string           `json:"name"`
	ToolCalls    []requestCall    `json:"tool_calls"`
	FunctionCall *requestFunction `json:"function_call"`
	ToolCallID   string           `json:"tool_call_id"`

	text   string
	parts  []requestPart
	tokens int // what the message adds to the prompt
}

type requestCall struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Function requestFunction `json:"function"`
}

type requestFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// requestPart is one part of a message's list content.
type requestPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// reader decodes requests, remembering messages and tools by their JSON.
type reader struct {
	tok func(string) int // counts a text's tokens

	mu       sync.Mutex
	messages map[string]*requestMessage // read-only once stored
	tools    map[string]int             // a tool's or function's tokens, TokensPerTool included
	size     int                        // bytes of the keys of messages and tools
}

// lenient is how a request is read: as encoding/json reads it into
// go-openai's types (field names matched without case, invalid UTF-8 and
// repeated names let through).
var lenient = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// read decodes a request body.
func (rd *reader) read(body []byte) (request, error) {
	var r request
	dec := jsontext.NewDecoder(bytes.NewReader(body), lenient)
	if tok, err := dec.ReadToken(); err != nil {
		return request{}, err
	} else if tok.Kind() != '{' {
		return request{}, fmt.Errorf("a request is a JSON object, not %s", tok.Kind())
	}
	r.Tokens = TokensReplyPriming
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return request{}, err
		}
		key := name.String() // name is valid only until the next read
		switch {
		case strings.EqualFold(key, "messages"):
			err = rd.list(dec, func(v jsontext.Value) error {
				m, err := rd.message(v)
				if err == nil {
					r.Messages = append(r.Messages, m)
					r.Tokens += m.tokens
				}
				return err
			})
		case strings.EqualFold(key, "tools"), strings.EqualFold(key, "functions"):
			function := strings.EqualFold(key, "functions")
			err = rd.list(dec, func(v jsontext.Value) error {
				n, err := rd.tool(v, function)
				r.Tokens += n
				return err
			})
		case strings.EqualFold(key, "model"):
			err = expect(dec, "a string", '"', 'n')
		case strings.EqualFold(key, "stream"):
			err = expect(dec, "true or false", 't', 'f', 'n')
		case strings.EqualFold(key, "stream_options"):
			var o *struct {
				IncludeUsage bool `json:"include_usage"`
			}
			if err = jsonv2.UnmarshalDecode(dec, &o); err == nil && o != nil {
				r.IncludeUsage = o.IncludeUsage
			}
		case strings.EqualFold(key, "response_format"):
			r.ResponseFormat = dec.PeekKind() != 'n'
			err = dec.SkipValue()
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return request{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return request{}, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return request{}, errors.New("more than one JSON value")
	}
	return r, nil
}

// expect reads a value of one of kinds (a JSON value's first byte; '0' for
// numbers), else fails with "want what".
func expect(dec *jsontext.Decoder, what string, kinds ...jsontext.Kind) error {
	v, err := dec.ReadValue()
	if err == nil && !slices.Contains(kinds, v.Kind()) {
		err = fmt.Errorf("want %s, not %s", what, v.Kind())
	}
	return err
}

// list calls each for every value of a JSON list (null is none).
func (rd *reader) list(dec *jsontext.Decoder, each func(jsontext.Value) error) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	if tok, err := dec.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '[' {
		return fmt.Errorf("want a list, not %s", tok.Kind())
	}
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if err := each(v); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// message returns the message v is, decoded and counted once per JSON text.
func (rd *reader) message(v jsontext.Value) (*requestMessage, error) {
	rd.mu.Lock()
	m, ok := rd.messages[string(v)]
	rd.mu.Unlock()
	if ok {
		return m, nil
	}
	m = new(requestMessage)
	if err := jsonv2.Unmarshal(v, m, lenient); err != nil {
		return nil, err
	}
	if err := m.decodeContent(); err != nil {
		return nil, err
	}
	m.tokens = m.count(rd.tok)
	rd.remember(func() { rd.messages[string(v)] = m }, len(v))
	return m, nil
}

// tool returns the tokens of the tool (or, with function, the deprecated
// function) definition v, counted once per JSON text.
func (rd *reader) tool(v jsontext.Value, function bool) (int, error) {
	rd.mu.Lock()
	n, ok := rd.tools[string(v)]
	rd.mu.Unlock()
	if ok {
		return n, nil
	}
	n = TokensPerTool
	if function {
		var f openai.FunctionDefinition
		if err := json.Unmarshal(v, &f); err != nil {
			return 0, err
		}
		n += toolTokens(f, rd.tok)
	} else {
		var t openai.Tool
		if err := json.Unmarshal(v, &t); err != nil {
			return 0, err
		}
		if t.Function != nil {
			n += toolTokens(*t.Function, rd.tok)
		}
	}
	rd.remember(func() { rd.tools[string(v)] = n }, len(v))
	return n, nil
}

// remember stores an entry of size bytes with store, forgetting everything
// first once maxMemo bytes are kept.
func (rd *reader) remember(store func(), size int) {
	if size > maxMemo {
		return
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.messages == nil || rd.size+size > maxMemo {
		rd.messages, rd.tools, rd.size = map[string]*requestMessage{}, map[string]int{}, 0
	}
	store()
	rd.size += size
}

// decodeContent sets text or parts from Content: a string, a list of parts,
// or null.
func (m *requestMessage) decodeContent() error {
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
		return nil
	case c[0] == '"':
		return jsonv2.Unmarshal(c, &m.text, lenient)
	case c[0] == '[':
		return jsonv2.Unmarshal(c, &m.parts, lenient)
	}
	return errors.New("message content must be a string or a list of parts")
}

// count returns the tokens m adds to a prompt, with tok counting a text's.
func (m *requestMessage) count(tok func(string) int) int {
	n := TokensPerMessage + tok(m.Role) + tok(m.text)
	for _, p := range m.parts {
		switch openai.ChatMessagePartType(p.Type) {
		case openai.ChatMessagePartTypeImageURL:
			n += TokensPerImage
		default:
			n += tok(p.Text)
		}
	}
	if m.Name != "" {
		n += tok(m.Name) + TokensPerName
	}
	for _, tc := range m.ToolCalls {
		n += tok(tc.Function.Name) + tok(tc.Function.Arguments)
	}
	if m.FunctionCall != nil {
		n += tok(m.FunctionCall.Name) + tok(m.FunctionCall.Arguments)
	}
	return n + tok(m.ToolCallID)
}

// firstUser returns the text of r's first user message (of a list
// content, its text parts).
func (r request) firstUser() string {
	for _, m := range r.Messages {
		if m.Role != openai.ChatMessageRoleUser {
			continue
		}
		if len(m.parts) == 0 {
			return m.text
		}
		var texts []string
		for _, p := range m.parts {
			if p.Type == string(openai.ChatMessagePartTypeText) {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

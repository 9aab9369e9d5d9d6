package model

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// chatRequest is the go-openai request of req for model: streamed, with the
// usage in the last chunk. A human message's images go with it as
// image_url parts (data URLs); a tool message cannot carry images, so the
// images of a turn's tool answers follow them in one user message.
func chatRequest(model string, req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Messages))
	var toolImages []openai.ChatMessagePart // of the tool answers since the last other message
	for _, m := range req.Messages {
		if m.Role != message.Tool && len(toolImages) > 0 {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: toolImages})
			toolImages = nil
		}
		msg := openai.ChatCompletionMessage{Role: role(m.Role), Content: m.Content}
		switch {
		case m.Role == message.AI && len(m.ToolCalls) > 0:
			msg.ToolCalls = make([]openai.ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				msg.ToolCalls[j] = openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: c.Name, Arguments: c.Args}}
			}
		case m.Role == message.Tool:
			msg.ToolCallID = m.ToolCallID
			if len(m.Images) > 0 {
				if len(toolImages) == 0 {
					toolImages = append(toolImages, textPart("The images the tools returned:"))
				}
				toolImages = append(toolImages, imageParts(m.Images, req.Images, "("+m.ToolCallID+") ")...)
			}
		case m.Role == message.Human && len(m.Images) > 0:
			msg.Content = ""
			if m.Content != "" {
				msg.MultiContent = []openai.ChatMessagePart{textPart(m.Content)}
			}
			msg.MultiContent = append(msg.MultiContent, imageParts(m.Images, req.Images, "")...)
		}
		msgs = append(msgs, msg)
	}
	if len(toolImages) > 0 {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: toolImages})
	}
	var tools []openai.Tool
	for _, t := range req.Tools {
		var params any // a nil RawMessage would encode as null anyway; a nil any is null
		if t.Parameters != nil {
			params = t.Parameters
		}
		tools = append(tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	creq := openai.ChatCompletionRequest{Model: model, Messages: msgs, Tools: tools, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}}
	if len(req.OutputSchema) > 0 {
		creq.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "output", Schema: req.OutputSchema}}
	}
	return creq
}

func textPart(text string) openai.ChatMessagePart {
	return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: text}
}

// imageParts are the parts of images: each named in a text part (after
// prefix), then the image as a data URL; one whose bytes the request lacks
// is named only.
func imageParts(refs []message.Image, data message.Images, prefix string) []openai.ChatMessagePart {
	var parts []openai.ChatMessagePart
	for _, ref := range refs {
		name := cmp.Or(ref.Name, "image")
		img, ok := data[ref.ID]
		if !ok {
			parts = append(parts, textPart(fmt.Sprintf("%s[%s: no longer available]", prefix, name)))
			continue
		}
		parts = append(parts, textPart(fmt.Sprintf("%s[%s, %d×%d]", prefix, name, ref.Width, ref.Height)),
			openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{
				URL: DataURL(img.MimeType, img.Data), Detail: openai.ImageURLDetailAuto}})
	}
	return parts
}

// DataURL is data as a data: URL of type mime.
func DataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// role is a message role's name in the chat protocol ("" for an unknown one).
func role(r message.Role) string {
	switch r {
	case message.System:
		return openai.ChatMessageRoleSystem
	case message.Human:
		return openai.ChatMessageRoleUser
	case message.AI:
		return openai.ChatMessageRoleAssistant
	case message.Tool:
		return openai.ChatMessageRoleTool
	}
	return ""
}

// errStreamCut is a stream that ended before the model finished.
var errStreamCut = errors.New("stream ended before the model finished")

// read reads a chat stream into a Response, streaming text to onDelta. A
// stream that ends without a finish reason was cut.
func read(stream *openai.ChatCompletionStream, onDelta func(string)) (Response, error) {
	var (
		resp     Response
		text     strings.Builder
		acc      callAccumulator
		finished bool
	)
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, err
		}
		if c.Usage != nil {
			resp.Usage = Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, TotalTokens: c.Usage.TotalTokens}
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				text.WriteString(ch.Delta.Content)
				if onDelta != nil {
					onDelta(ch.Delta.Content)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				acc.add(tc)
			}
			if ch.FinishReason != "" {
				finished = true
			}
		}
	}
	if !finished {
		return Response{}, errStreamCut
	}
	resp.Content = text.String()
	resp.ToolCalls = acc.calls
	return resp, nil
}

// maxErrorBody bounds how much of a refused request's body the note keeps,
// and maxErrorPass what of it go-openai gets to parse.
const (
	maxErrorBody = 64 << 10
	maxErrorPass = 1 << 20
)

// attemptNote is what one attempt's HTTP exchange showed that go-openai's
// errors do not carry: a refused request's status, its Retry-After header
// (a 429's wait) and its body's first bytes (the fields a context overflow
// is told by, llama.cpp's n_ctx for one: APIError keeps only code, message,
// param and type); and, for an accepted one, the stream's body, whose end is
// read on the side once the stream is done (streamEnds).
type attemptNote struct {
	status     int
	retryAfter time.Duration
	body       []byte
	stream     *streamBody
}

// client is a go-openai client whose requests note what they showed in
// note. It is made per attempt (a few words) over the model's transport,
// shared by attempts and calls, so they reuse connections.
func (m *OpenAI) client(note *attemptNote) *openai.Client {
	oc := m.oc
	oc.HTTPClient = &http.Client{Transport: notingTransport{base: m.transport, note: note}}
	return openai.NewClientWithConfig(oc)
}

// notingTransport records in note what go-openai's client will not report
// of a response, and hands the client the response otherwise unchanged.
type notingTransport struct {
	base http.RoundTripper
	note *attemptNote
}

func (t notingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode < http.StatusBadRequest {
		t.note.stream = &streamBody{ReadCloser: resp.Body}
		resp.Body = t.note.stream
		return resp, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorPass))
	resp.Body.Close()
	t.note.status = resp.StatusCode
	t.note.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	t.note.body = data[:min(len(data), maxErrorBody)]
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, err
}

// streamBody is a stream's body, which knows whether it was read to its end.
type streamBody struct {
	io.ReadCloser
	ended bool // a read returned io.EOF: nothing is left to read on the side
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.ended = true
	}
	return n, err
}

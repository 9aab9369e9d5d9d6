package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	openai "github.com/sashabaranov/go-openai"
)

// The chat call is made here rather than through go-openai's client, whose
// request marshaling (reflection, a MarshalJSON per message and the
// re-compaction of its output) and stream decoding (regular expressions per
// line, a large response type per chunk) cost 0.2–0.3 ms of the server's own
// time per tool turn once a session has 50 turns (BenchmarkRunOverhead). It
// keeps go-openai's wire behaviour: the same checks before sending (check),
// the same request bytes (appendRequest), the same headers, and its errors
// (*openai.APIError, *openai.RequestError) with the same texts.

// maxEmptyLines is how many lines that carry no data one chunk may be
// preceded by (go-openai's default EmptyMessagesLimit).
const maxEmptyLines = 300

// errTooManyEmptyLines is a stream that sends only lines without data.
var errTooManyEmptyLines = openai.ErrTooManyEmptyStreamMessages

// post sends a streamed chat request whose body is body and returns the
// response of a status in 200–399; a refused request is an error as go-openai
// makes it, and note records its status, Retry-After header and body start.
//
// The body is a bytes.Reader, which net/http knows to be in memory: it
// writes the headers and the body at once (any other reader has its headers
// flushed first, in a packet of their own).
func (m *OpenAI) post(ctx context.Context, body []byte, note *attemptNote) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.chatURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	req.Header.Set("Connection", "keep-alive")
	if m.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		return resp, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	note.status = resp.StatusCode
	note.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	note.body = data[:min(len(data), maxErrorBody)]
	if err != nil {
		return nil, fmt.Errorf("error, reading response body: %w", err)
	}
	return nil, refusal(resp, data)
}

// refusal is the error of a refused request, as go-openai makes it: the
// body's APIError with the status, or a RequestError holding the body when
// it is not one.
func refusal(resp *http.Response, body []byte) error {
	var er openai.ErrorResponse
	err := json.Unmarshal(body, &er)
	if err != nil || er.Error == nil {
		reqErr := &openai.RequestError{HTTPStatus: resp.Status, HTTPStatusCode: resp.StatusCode, Err: err, Body: body}
		if er.Error != nil {
			reqErr.Err = er.Error
		}
		return reqErr
	}
	er.Error.HTTPStatus = resp.Status
	er.Error.HTTPStatusCode = resp.StatusCode
	return er.Error
}

// chunk is what the stream's chunks carry that a Response needs.
type chunk struct {
	Choices []chunkChoice `json:"choices"`
	Usage   *chunkUsage   `json:"usage"`
}

type chunkChoice struct {
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string            `json:"content"`
	ToolCalls []openai.ToolCall `json:"tool_calls"`
}

type chunkUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// events reads a chat stream's server-sent events, as go-openai's stream
// reader does: each "data:" line is a chunk until "data: [DONE]"; other
// lines are kept, and when the stream ends (or a data line starts with
// {"error":) what was kept is read as an error answer.
type events struct {
	r    *bufio.Reader
	kept []byte // the lines that were not chunks
	long []byte // a line longer than r's buffer
	done bool
}

// next returns the next chunk's JSON, io.EOF after [DONE] (or at the end of
// a stream that holds no error answer), or the error the stream sent.
func (e *events) next() ([]byte, error) {
	if e.done {
		return nil, io.EOF
	}
	empty := 0
	isError := false
	for {
		line, err := e.r.ReadSlice('\n') // valid until the next read
		if errors.Is(err, bufio.ErrBufferFull) {
			e.long = append(e.long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = e.r.ReadSlice('\n')
				e.long = append(e.long, line...)
			}
			line = e.long
		}
		if err != nil || isError {
			var er openai.ErrorResponse
			if len(e.kept) > 0 && json.Unmarshal(e.kept, &er) == nil && er.Error != nil {
				return nil, fmt.Errorf("error, %w", er.Error)
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		data, isData := bytes.CutPrefix(line, []byte("data:"))
		if isData {
			data = bytes.TrimLeft(data, " \t\r\n\f")
			isError = bytes.HasPrefix(data, []byte(`{"error":`))
		}
		if !isData || isError {
			if isError {
				line = data
			}
			e.kept = append(e.kept, line...)
			if empty++; empty > maxEmptyLines {
				return nil, errTooManyEmptyLines
			}
			continue
		}
		if string(data) == "[DONE]" {
			e.done = true
			return nil, io.EOF
		}
		return data, nil
	}
}

// decodeChunkOrFull decodes a chunk with encoding/json's semantics: the
// common shapes by decodeChunk, the rest by the v2 engine.
func decodeChunkOrFull(data []byte) (chunk, error) {
	var c chunk
	if decodeChunk(data, &c) {
		return c, nil
	}
	c = chunk{}
	err := jsonv2.Unmarshal(data, &c, jsonv1.DefaultOptionsV1())
	return c, err
}

// errStreamCut is a stream that ended before the model finished.
var errStreamCut = errors.New("stream ended before the model finished")

// read reads a chat stream through br into a Response, streaming text to
// onDelta; done says the stream ended with [DONE], which leaves the end of
// the body (streamEnds) to read.
func read(br *bufio.Reader, onDelta func(string)) (resp Response, done bool, err error) {
	ev := events{r: br}
	var (
		text     []byte
		acc      callAccumulator
		finished bool
	)
	for {
		data, err := ev.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, false, err
		}
		c, err := decodeChunkOrFull(data)
		if err != nil {
			return Response{}, false, err
		}
		if c.Usage != nil {
			resp.Usage = Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, TotalTokens: c.Usage.TotalTokens}
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				text = append(text, ch.Delta.Content...)
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
		return Response{}, false, errStreamCut
	}
	resp.Content = string(text)
	resp.ToolCalls = acc.calls
	return resp, ev.done, nil
}

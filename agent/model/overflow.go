package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// OverflowError is a model call refused because the request is larger than the model's context.
//
// Chat returns it wrapped in an *Error; find it with errors.As. An overflow is
// never retried: the same request would be refused again, so the caller has to
// make it smaller (compact the conversation) first.
type OverflowError struct {
	Limit     int    // the context size in tokens, when the server said it (0: unknown)
	Requested int    // the request's size in tokens, when the server said it (0: unknown)
	Message   string // the server's message, cut to a sane length, key redacted
}

func (e *OverflowError) Error() string {
	var size string
	switch {
	case e.Limit > 0 && e.Requested > 0:
		size = fmt.Sprintf(" (%d tokens > %d)", e.Requested, e.Limit)
	case e.Limit > 0:
		size = fmt.Sprintf(" (%d tokens)", e.Limit)
	}
	msg := "the request is larger than the model's context" + size
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// maxOverflowMessage bounds OverflowError.Message, in bytes.
const maxOverflowMessage = 500

// overflowRule recognizes one way a server says a request overflows the
// model's context. Its pattern may name the groups "limit" (the context size)
// and "requested" (the request's size) when the text gives them.
type overflowRule struct {
	field func(*errorFields) string
	re    *regexp.Regexp
}

func byCode(f *errorFields) string    { return f.code }
func byType(f *errorFields) string    { return f.typ }
func byMessage(f *errorFields) string { return f.message }

// overflowRules are the known context-overflow answers of OpenAI-compatible
// servers (testdata/model/context-overflow.json has a sample of each). Every
// rule that matches contributes; the first to give a number wins.
var overflowRules = []overflowRule{
	// OpenAI, Groq, OpenRouter and others.
	{byCode, regexp.MustCompile(`^context_length_exceeded$`)},
	// llama.cpp; the sizes are in its n_ctx and n_prompt_tokens fields.
	{byType, regexp.MustCompile(`^exceed_context_size_error$`)},
	// OpenAI, vLLM, DeepSeek, OpenRouter.
	{byMessage, regexp.MustCompile(`(?i)maximum context length is (?P<limit>\d+) tokens(?:.*?(?:resulted in|requested(?: about)?|request has) (?P<requested>\d+)(?: input)? tokens)?`)},
	// OpenAI (Responses-style wording).
	{byMessage, regexp.MustCompile(`(?i)exceeds the context window`)},
	// llama.cpp.
	{byMessage, regexp.MustCompile(`(?i)exceeds the available context size`)},
	// Anthropic.
	{byMessage, regexp.MustCompile(`(?i)prompt is too long: (?P<requested>\d+) tokens > (?P<limit>\d+) maximum`)},
	// Mistral.
	{byMessage, regexp.MustCompile(`(?i)(?:contains (?P<requested>\d+) tokens.*?)?too large for model with (?P<limit>\d+) maximum context length`)},
	// Gemini.
	{byMessage, regexp.MustCompile(`(?i)input token count \((?P<requested>\d+)\) exceeds the maximum number of tokens allowed \((?P<limit>\d+)\)`)},
	// LM Studio. Its "first N tokens" is what it tried to keep, not the
	// request's size, so it is not taken as Requested.
	{byMessage, regexp.MustCompile(`(?i)context length of only (?P<limit>\d+) tokens`)},
	// Hugging Face TGI. The limit covers inputs and max_new_tokens; Requested
	// is the inputs alone, like the prompt size other servers report.
	{byMessage, regexp.MustCompile("(?i)`inputs` tokens \\+ `max_new_tokens` must be <= (?P<limit>\\d+)(?:\\. Given: (?P<requested>\\d+) `inputs` tokens)?")},
	// Ollama.
	{byMessage, regexp.MustCompile(`(?i)the input length exceeds the context length`)},
}

// classifyOverflow reports whether a refused request's answer (HTTP status
// and body) says the request is larger than the model's context, and what it
// says of the sizes. key, when not empty, is redacted from the message.
// A 429 is never an overflow: it is a rate limit, even one on tokens.
func classifyOverflow(status int, body, key string) (*OverflowError, bool) {
	if status == 429 || strings.TrimSpace(body) == "" {
		return nil, false
	}
	f := parseErrorBody(body)
	var ov OverflowError
	hit := false
	for _, r := range overflowRules {
		m := r.re.FindStringSubmatch(r.field(&f))
		if m == nil {
			continue
		}
		hit = true
		if ov.Limit == 0 {
			ov.Limit = submatchInt(r.re, m, "limit")
		}
		if ov.Requested == 0 {
			ov.Requested = submatchInt(r.re, m, "requested")
		}
	}
	if !hit {
		return nil, false
	}
	if ov.Limit == 0 {
		ov.Limit = f.nCtx
	}
	if ov.Requested == 0 {
		ov.Requested = f.nPromptTokens
	}
	msg := Redact(f.message, key)
	ov.Message = truncate(msg, maxOverflowMessage)
	return &ov, true
}

func submatchInt(re *regexp.Regexp, m []string, name string) int {
	i := re.SubexpIndex(name)
	if i < 0 || m[i] == "" {
		return 0
	}
	n, err := strconv.Atoi(m[i])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// errorFields are what an error body says, whichever shape it has.
type errorFields struct {
	message, code, typ  string
	nCtx, nPromptTokens int // llama.cpp's sizes
}

// parseErrorBody reads an error answer in any of the shapes servers use:
// {"error":{...}} (OpenAI, llama.cpp, Anthropic), a bare {"message":...}
// (vLLM, Mistral), [{"error":{...}}] (Gemini), {"error":"text"} (LM Studio,
// TGI), or plain text.
func parseErrorBody(body string) errorFields {
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return errorFields{message: strings.TrimSpace(body)}
	}
	if arr, ok := v.([]any); ok && len(arr) > 0 {
		v = arr[0]
	}
	obj, ok := v.(map[string]any)
	if !ok {
		if s, ok := v.(string); ok {
			return errorFields{message: s}
		}
		return errorFields{message: strings.TrimSpace(body)}
	}
	switch e := obj["error"].(type) {
	case map[string]any:
		obj = e
	case string:
		return errorFields{message: e}
	}
	return errorFields{
		message:       jsonText(obj["message"]),
		code:          jsonText(obj["code"]),
		typ:           jsonText(obj["type"]),
		nCtx:          jsonInt(obj["n_ctx"]),
		nPromptTokens: jsonInt(obj["n_prompt_tokens"]),
	}
}

// jsonText is a decoded JSON string or number as text; "" for anything else.
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// jsonInt is a decoded JSON number (or numeric string) as a non-negative int; 0 otherwise.
func jsonInt(v any) int {
	switch x := v.(type) {
	case float64:
		if x >= 0 && x <= 1<<31 {
			return int(x)
		}
	case string:
		if n, err := strconv.Atoi(x); err == nil && n >= 0 {
			return n
		}
	}
	return 0
}

// overflowOf reports whether a failed attempt was refused as a context
// overflow. It reads the body the transport captured, or, when there is none
// (an error sent inside the event stream), what go-openai kept of it.
func overflowOf(err error, seen *attemptNote, key string) (*OverflowError, bool) {
	status, body := seen.status, string(seen.body)
	if body == "" {
		var reqErr *openai.RequestError
		var apiErr *openai.APIError
		switch {
		case errors.As(err, &reqErr):
			status, body = reqErr.HTTPStatusCode, string(reqErr.Body)
		case errors.As(err, &apiErr):
			status = apiErr.HTTPStatusCode
			b, mErr := json.Marshal(openai.ErrorResponse{Error: apiErr})
			if mErr != nil {
				return nil, false
			}
			body = string(b)
		default:
			return nil, false
		}
	}
	return classifyOverflow(status, body, key)
}

package scripted

import (
	"encoding/json"
	"sync"

	openai "github.com/sashabaranov/go-openai"
	"github.com/tiktoken-go/tokenizer"
)

// Token overheads added by CountTokens, from OpenAI's documented way of
// counting chat tokens (the "How to count tokens with tiktoken" cookbook) and
// its function-calling notes.
const (
	// TokensPerMessage is the fixed cost of every message: the
	// <|start|>{role/name}\n{content}<|end|>\n framing.
	TokensPerMessage = 3
	// TokensPerName is the extra cost of a message that carries a name.
	TokensPerName = 1
	// TokensReplyPriming is added once per request: every reply is primed
	// with <|start|>assistant<|message|>.
	TokensReplyPriming = 3
	// TokensPerTool is the fixed cost of each tool definition, around its
	// JSON, for the framing the provider wraps the definitions in.
	TokensPerTool = 8
	// TokensPerImage is what an image part of a message costs: OpenAI's base
	// cost of a low-detail image. The scripted server never looks at images.
	TokensPerImage = 85
)

var (
	codecOnce sync.Once
	codec     tokenizer.Codec
)

// cl100k returns the cl100k_base codec, loaded on first use (about 20 ms).
// The codec is read-only after loading and safe for concurrent use.
func cl100k() tokenizer.Codec {
	codecOnce.Do(func() {
		c, err := tokenizer.Get(tokenizer.Cl100kBase)
		if err != nil {
			panic("scripted: cl100k_base tokenizer: " + err.Error()) // embedded; cannot fail
		}
		codec = c
	})
	return codec
}

// memo caches token counts by text for one server: every request of a
// conversation sends the same tool definitions, system prompt and history
// again, and counting them anew would be most of the test double's time
// (and garbage, which slows the client it serves in the same process).
type memo struct {
	mu     sync.Mutex
	counts map[string]int
	size   int // bytes of the texts in counts
}

// maxMemo bounds the bytes of text a memo keeps; past it, it starts over.
const maxMemo = 16 << 20

// tokens returns Tokens(s), counted once per text.
func (m *memo) tokens(s string) int {
	if s == "" {
		return 0
	}
	m.mu.Lock()
	n, ok := m.counts[s]
	m.mu.Unlock()
	if ok {
		return n
	}
	n = Tokens(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil || m.size+len(s) > maxMemo {
		m.counts, m.size = map[string]int{}, 0
	}
	if len(s) <= maxMemo {
		m.counts[s] = n
		m.size += len(s)
	}
	return n
}

// maxCounted is the most bytes Tokens counts exactly.
const maxCounted = 1 << 20

// Tokens returns the number of cl100k_base tokens of s (past maxCounted
// bytes, extrapolated).
func Tokens(s string) int {
	if s == "" {
		return 0
	}
	if len(s) > maxCounted {
		// Beyond a megabyte (a runaway model's arguments) the count is
		// extrapolated from the first megabyte: exact counting costs
		// seconds a megabyte under the race detector.
		return Tokens(s[:maxCounted]) * (len(s) / maxCounted)
	}
	n, err := cl100k().Count(s)
	if err != nil {
		// Only a strict error mode fails, and the codec keeps the default;
		// never undercount a request to zero.
		return len(s)/4 + 1
	}
	return n
}

// CountTokens counts a chat request's prompt tokens as a provider would,
// independently of the client's own estimate, with the cl100k_base tokenizer
// (tok(s) below):
//
//	total = Σ messages + TokensReplyPriming + Σ tools
//	message = TokensPerMessage + tok(role) + tok(content)
//	          + (tok(name) + TokensPerName, when a name is set)
//	          + Σ tool calls (tok(function name) + tok(arguments))
//	          + tok(tool_call_id)
//	tool = TokensPerTool + tok(JSON of {"name","description","parameters"})
//
// with TokensPerMessage = 3 and TokensReplyPriming = 3 (OpenAI's documented
// overheads) and TokensPerTool = 8. A message whose content is a list of parts
// counts the text of its text parts and TokensPerImage per image; the
// deprecated function_call of a message counts like a tool call, and the
// deprecated functions of a request like tools. The tools' parameters are
// counted as encoding/json writes them after decoding (sorted keys, no
// spaces), so the order a client wrote them in does not matter.
func CountTokens(req openai.ChatCompletionRequest) int {
	total := TokensReplyPriming
	for _, m := range req.Messages {
		rm := requestMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, text: m.Content}
		for _, p := range m.MultiContent {
			rm.parts = append(rm.parts, requestPart{Type: string(p.Type), Text: p.Text})
		}
		for _, tc := range m.ToolCalls {
			rm.ToolCalls = append(rm.ToolCalls, requestCall{ID: tc.ID, Function: requestFunction{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		if f := m.FunctionCall; f != nil {
			rm.FunctionCall = &requestFunction{Name: f.Name, Arguments: f.Arguments}
		}
		total += rm.count(Tokens)
	}
	for _, t := range req.Tools {
		total += TokensPerTool
		if t.Function != nil {
			total += toolTokens(*t.Function, Tokens)
		}
	}
	//lint:ignore SA1019 older clients still send functions instead of tools
	for _, f := range req.Functions {
		total += TokensPerTool + toolTokens(f, Tokens)
	}
	return total
}

// toolTokens counts, with tok, the JSON of a function definition: name,
// description and parameters.
func toolTokens(f openai.FunctionDefinition, tok func(string) int) int {
	b, err := json.Marshal(struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters,omitempty"`
	}{f.Name, f.Description, f.Parameters})
	if err != nil {
		return tok(f.Name) + tok(f.Description)
	}
	return tok(string(b))
}

// completionTokens counts, with tok, what a turn streams: its text plus each
// tool call's name and arguments, as sent.
func completionTokens(turn Turn, tok func(string) int) int {
	n := tok(turn.Text)
	for _, tc := range turn.ToolCalls {
		n += tok(tc.Name) + tok(toolArgs(tc))
	}
	return n
}

// toolArgs returns a tool call's arguments as streamed.
func toolArgs(tc ToolCall) string {
	if tc.ArgsRaw != nil {
		return *tc.ArgsRaw
	}
	return string(tc.Args)
}

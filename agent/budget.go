package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/tokens"
)

// Token costs a provider adds around what the messages and tools say: per
// message (role, separators) and per tool definition.
const (
	messageOverhead = 4
	toolOverhead    = 8
	replyPriming    = 3
)

// toolShare is the part of the budget tool definitions may take; the tools
// past it (least needed first) are withheld from the run.
const toolShare = 3 // a third

// DefaultContextTokens is the budget of a model the runtime knows nothing
// about: small enough for the local models most people serve.
const DefaultContextTokens = 8192

// knownContexts are the context sizes of well-known models, by name prefix
// (the longest matching prefix wins). A local server may serve a model with
// a smaller context than it supports (Ollama's num_ctx): set contextTokens.
var knownContexts = []struct {
	prefix string
	tokens int
}{
	{"gpt-3.5-turbo", 16385},
	{"gpt-4", 8192},
	{"gpt-4-turbo", 128000},
	{"gpt-4o", 128000},
	{"gpt-4.1", 1047576},
	{"gpt-5", 272000},
	{"o1", 200000},
	{"o3", 200000},
	{"o4-mini", 200000},
	{"claude", 200000},
	{"gemini", 1048576},
	{"deepseek", 65536},
	{"mistral-large", 131072},
	{"codestral", 262144},
}

// ContextTokensFor returns the context size the runtime assumes for a model
// name: a known model's, else DefaultContextTokens.
func ContextTokensFor(modelName string) int {
	best, n := 0, DefaultContextTokens
	name := strings.ToLower(modelName)
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:] // "openai/gpt-4o" on a router
	}
	for _, k := range knownContexts {
		if strings.HasPrefix(name, k.prefix) && len(k.prefix) > best {
			best, n = len(k.prefix), k.tokens
		}
	}
	return n
}

// budget is what a model's requests may cost, in tokens. One budget serves
// a runtime's endpoint and model; it learns from the provider: the usage it
// reports corrects the estimate, an overflow lowers the limit.
type budget struct {
	configured int // the contextTokens setting

	mu      sync.Mutex // guards learned, scale and last
	learned int        // a lower context size learned from an overflow; 0: none
	scale   float64    // provider tokens per estimated token, from reported usage
	// last is the ratio (reported over estimated) of the newest credible
	// report, which the next one must confirm before the scale moves; 0:
	// none yet.
	last float64
}

func newBudget(contextTokens int) *budget {
	return &budget{configured: contextTokens, scale: 1}
}

// limit is the model's context size as far as the runtime knows.
func (b *budget) limit() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.learned > 0 {
		return min(b.learned, b.configured)
	}
	return b.configured
}

// reserve is what stays free for the model's answer: an eighth of the
// context, at least 256 tokens and at most 4,096.
func reserve(limit int) int { return min(max(limit/8, 256), 4096) }

// prompt is how many estimated tokens a request may hold: the context less
// the reply's reserve, converted by the learned scale.
func (b *budget) prompt() int {
	l := b.limit()
	b.mu.Lock()
	scale := b.scale
	b.mu.Unlock()
	return int(float64(l-reserve(l)) / scale)
}

// credibleFloor: a provider's count of a request below its size in bytes
// over this is not believed. No tokenizer in use packs 8 bytes of text into
// one token; proxies and local servers that report a fixed number, or only
// the tokens a cache did not hold, do report that little.
const credibleFloor = 8

// agree is how far apart (relative to the larger) the ratios of two
// consecutive reports may be for the scale to follow them.
const agree = 0.25

// observe records the provider's count (reported) of a request the runtime
// estimated, whose text is size bytes. A count below size/credibleFloor, or
// none, is ignored. The scale moves only when two consecutive credible
// reports agree (their ratios to the estimate within 25% of each other):
// toward the newest pair, weighted toward it, with 5% to spare, kept within
// 0.5..3. A provider whose reports jump about leaves the scale where it is.
func (b *budget) observe(estimated, reported, size int) {
	if estimated <= 0 || reported <= 0 || reported < size/credibleFloor {
		return
	}
	r := float64(reported) / float64(estimated)
	b.mu.Lock()
	defer b.mu.Unlock()
	last := b.last
	b.last = r
	if last == 0 || max(r, last)-min(r, last) > agree*max(r, last) {
		return
	}
	b.scale = min(max(0.5*b.scale+0.5*(r+last)/2*1.05, 0.5), 3)
}

// requestBytes is the size of what a request sends as text: the messages'
// content, names and tool calls, and the tools' definitions.
func requestBytes(req model.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Name)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// overflow records a provider's refusal of a request of estimated tokens:
// the limit it names, or else a limit below what was sent; and a scale at
// least its count of the request over the estimate.
func (b *budget) overflow(e *model.OverflowError, estimated int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.Requested > 0 && estimated > 0 {
		b.scale = min(max(b.scale, float64(e.Requested)/float64(estimated)*1.05), 3)
	}
	switch {
	case e.Limit > 0:
		b.learned = e.Limit
	default:
		sent := int(float64(estimated) * b.scale)
		lower := sent * 3 / 4
		if b.learned == 0 || lower < b.learned {
			b.learned = max(lower, 1024)
		}
	}
}

// counter estimates messages and tools, caching each message's count by ID
// and size (a message's content only changes by being cut for the window).
type counter struct {
	mu    sync.Mutex // guards cache, built and history
	cache map[countKey]int
	// history are the counts of the last history counted by position
	// (messageAt): each request of a run counts the history of the one
	// before again, and a look at the same position is faster than one in
	// a large cache. Runs that interleave overwrite each other's entries.
	history []countedAt
	// built is the last message without an ID counted (the system prompt,
	// rebuilt for every request and most often the same text).
	built struct {
		content, name string
		n             int
	}
}

type countKey struct {
	id   string
	size int
}

type countedAt struct {
	k countKey
	n int
}

// keyOf is m's key in the cache: its ID and the size of what it holds.
func keyOf(m message.Message) countKey {
	k := countKey{m.ID, len(m.Content) + len(m.Images)<<40}
	for _, tc := range m.ToolCalls {
		k.size += len(tc.Args) << 20
	}
	return k
}

// messageAt returns message(m) for m at index i of a history.
func (c *counter) messageAt(i int, m message.Message) int {
	if m.ID == "" {
		return c.message(m)
	}
	k := keyOf(m)
	c.mu.Lock()
	if i < len(c.history) && c.history[i].k == k {
		n := c.history[i].n
		c.mu.Unlock()
		return n
	}
	c.mu.Unlock()
	n := c.message(m)
	c.mu.Lock()
	if i < maxCounted {
		if i >= len(c.history) {
			c.history = append(c.history, make([]countedAt, i+1-len(c.history))...)
		}
		c.history[i] = countedAt{k, n}
	}
	c.mu.Unlock()
	return n
}

// maxCounted bounds the cache (past it, it starts over) and the positions
// history keeps (past it, messages are looked up in the cache only).
const maxCounted = 200_000

// message returns m's estimated tokens as a provider counts them.
func (c *counter) message(m message.Message) int {
	k := keyOf(m)
	plain := m.ID == "" && len(m.ToolCalls) == 0 && m.ToolCallID == ""
	var (
		n  int
		ok bool
	)
	c.mu.Lock()
	if plain {
		n = c.built.n
		ok = n > 0 && c.built.content == m.Content && c.built.name == m.Name
	} else {
		n, ok = c.cache[k]
	}
	c.mu.Unlock()
	if ok {
		return n
	}
	n = messageOverhead + tokens.Estimate(m.Content) + tokens.Estimate(m.Name)
	for _, tc := range m.ToolCalls {
		n += messageOverhead + tokens.Estimate(tc.Name) + tokens.Estimate(tc.Args)
	}
	if m.ToolCallID != "" {
		n += 8
	}
	n += imageTokens(m)
	if plain {
		c.mu.Lock()
		c.built.content, c.built.name, c.built.n = m.Content, m.Name, n
		c.mu.Unlock()
		return n
	}
	if m.ID == "" {
		return n // not cached: a message built for one request
	}
	c.put(k, n)
	return n
}

// put caches n under k.
func (c *counter) put(k countKey, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil || len(c.cache) >= maxCounted {
		c.cache = map[countKey]int{}
	}
	c.cache[k] = n
}

// tool returns a tool definition's estimated tokens.
func toolTokens(t model.ToolSpec) int {
	b, _ := json.Marshal(t)
	return toolOverhead + tokens.Estimate(string(b))
}

// tool returns toolTokens(t), counted once per tool definition: every
// request of a run carries the same definitions.
func (c *counter) tool(t model.ToolSpec) int {
	k := countKey{"tool\x00" + t.Name, len(t.Description) + len(t.Parameters)<<20}
	c.mu.Lock()
	n, ok := c.cache[k]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = toolTokens(t)
	c.put(k, n)
	return n
}

// request returns a whole request's estimated tokens.
func (c *counter) request(req model.Request) int {
	n := replyPriming
	for _, m := range req.Messages {
		n += c.message(m)
	}
	for _, t := range req.Tools {
		n += c.tool(t)
	}
	return n
}

// toolPriority orders the tools from most to least needed: when their
// definitions take more than their share of the budget, the last go first.
var toolPriority = []string{"read_file", "edit_file", "search", "list_files", "create_file", "run_command",
	"todo_write", "call_subagent", "switch_project"}

// optionalTools are withheld first, before other programs' tools (MCP
// servers' the user chose): most runs do without them.
var optionalTools = []string{"read_image", "fetch_url"}

// toolRank is a tool's place in the order tools are kept in: toolPriority's
// first, then other programs' tools, then optionalTools.
func toolRank(name string) int {
	if i := slices.Index(toolPriority, name); i >= 0 {
		return i
	}
	if i := slices.Index(optionalTools, name); i >= 0 {
		return len(toolPriority) + 1 + i
	}
	return len(toolPriority)
}

// TooLargeError is a run that cannot start: what must be in every request
// (the system prompt, the tools and the prompt) does not fit the budget.
type TooLargeError struct {
	Need, Budget, ContextTokens int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the prompt does not fit the model's context: the system prompt, tools and prompt need about %d tokens, and requests may hold %d (contextTokens %d less room for the answer); shorten the prompt or the selection, or raise contextTokens",
		e.Need, e.Budget, e.ContextTokens)
}

package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// goOpenAIBody is the body go-openai sends for req: what appendRequest must
// write, byte for byte.
func goOpenAIBody(t testing.TB, model string, req Request) []byte {
	t.Helper()
	creq := openai.ChatCompletionRequest{Model: model, Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Messages: make([]openai.ChatCompletionMessage, 0, len(req.Messages))}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Content: m.Content}
		switch m.Role {
		case message.System:
			om.Role = openai.ChatMessageRoleSystem
		case message.Human:
			om.Role = openai.ChatMessageRoleUser
		case message.AI:
			om.Role = openai.ChatMessageRoleAssistant
			for _, c := range m.ToolCalls {
				om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: c.Name, Arguments: c.Args}})
			}
		case message.Tool:
			om.Role = openai.ChatMessageRoleTool
			om.ToolCallID = m.ToolCallID
		}
		creq.Messages = append(creq.Messages, om)
	}
	for _, tool := range req.Tools {
		creq.Tools = append(creq.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: tool.Name, Description: tool.Description, Parameters: tool.Parameters}})
	}
	b, err := json.Marshal(creq)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// awkward are strings every JSON escape applies to.
var awkward = []string{"", "plain", "quote \" and \\ backslash", "<b>&amp;</b>", "tab\tnew\nline\r\x00\x01\x1f\x7f\b\f",
	"你好, wörld 🎉", "bad \xff\xfe utf-8 \xe2\x82", "line\u2028para\u2029end", strings.Repeat("x", 5000) + "<"}

func TestRequestBodyAsGoOpenAIWritesIt(t *testing.T) {
	params := json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"p\": {\"type\": \"string\", \"description\": \"<a & b>\"}}\n}")
	var msgs []message.Message
	for i, s := range awkward {
		msgs = append(msgs,
			message.Message{ID: "s", Role: message.System, Content: s, Name: "sys"},
			message.Message{ID: "h", Role: message.Human, Content: s, Name: "human@p"},
			message.Message{ID: "a", Role: message.AI, Content: s, ToolCalls: []message.ToolCall{
				{ID: s, Name: "read_file", Args: s}, {Name: s}, {Args: s}, {ID: "only-id"}}},
			message.Message{ID: "a2", Role: message.AI},
			message.Message{ID: "t", Role: message.Tool, Content: s, ToolCallID: s},
			message.Message{ID: "x", Role: "unknown", Content: s, ToolCallID: "ignored", ToolCalls: []message.ToolCall{{ID: "ignored"}}},
			message.Message{ID: "h2", Role: message.Human, ToolCalls: []message.ToolCall{{ID: "ignored"}}},
		)
		if i%3 == 0 {
			msgs = append(msgs, message.Message{Role: message.Tool, Content: s})
		}
	}
	tests := []struct {
		name string
		req  Request
	}{
		{"empty", Request{}},
		{"one message", Request{Messages: []message.Message{message.NewHuman("hi")}}},
		{"awkward", Request{Messages: msgs, Tools: []ToolSpec{
			{Name: "read_file", Description: "Read a file. <path> & \"range\"\n", Parameters: params},
			{Name: "bare", Parameters: json.RawMessage(`{}`)},
			{Name: "no params"},
			{Name: awkward[4], Description: awkward[6], Parameters: json.RawMessage(` [1, "\u2028<", {"a":null}] `)},
		}}},
	}
	var cache paramCache     // shared: the second request of a tool reads it from the cache
	var encoded messageCache // and of a message
	for _, tt := range tests {
		for _, model := range []string{"gpt-4o", "", awkward[3]} {
			got, err := appendRequest(nil, model, tt.req, &cache, &encoded)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if want := goOpenAIBody(t, model, tt.req); string(got) != string(want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("%s, model %q: differs at byte %d:\n got …%.80s\nwant …%.80s", tt.name, model, i, got[max(0, i-20):], want[max(0, i-20):])
			}
		}
	}
}

// The tools' encoding is reused only for the list it was made of: a
// description changed, a tool left out or added, and parameters changed in
// the caller's own bytes are each encoded anew.
func TestToolListsFromCache(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	read := ToolSpec{Name: "read_file", Description: "Read <a> file.", Parameters: params}
	search := ToolSpec{Name: "search", Description: "Search & find.", Parameters: json.RawMessage(`{"type":"object"}`)}
	lists := [][]ToolSpec{
		{read, search},
		{read, search},
		{read, {Name: "search", Description: "Search, changed.", Parameters: search.Parameters}},
		{read},
		{read, search, {Name: "bare"}},
		{read, search, {Name: "bare", Parameters: json.RawMessage(`{}`)}},
	}
	var cache paramCache
	check := func(step string, tools []ToolSpec) {
		t.Helper()
		req := Request{Messages: []message.Message{message.NewHuman("hi")}, Tools: tools}
		got, err := appendRequest(nil, "m", req, &cache, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := goOpenAIBody(t, "m", req); string(got) != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", step, got, want)
		}
	}
	for i, tools := range lists {
		check(fmt.Sprintf("list %d", i), tools)
	}
	check("again", lists[0])
	copy(params[len(`{"type":"`):], "thing ") // the caller's bytes change under the same slice
	check("parameters changed in place", []ToolSpec{read, search})
}

func TestRequestBadToolParameters(t *testing.T) {
	_, err := appendRequest(nil, "m", Request{Tools: []ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}}, new(paramCache), nil)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err = %v, want one naming the tool", err)
	}
}

// A message is taken from the cache only as it was encoded: one cut to fit
// the window keeps its ID and is encoded anew, and so is one whose tool
// calls changed.
func TestMessageCacheComparesMessages(t *testing.T) {
	var c messageCache
	whole := message.Message{ID: "m1", Role: message.Tool, ToolCallID: "c1", Content: "line 1\nline 2\n"}
	cut := whole
	cut.Content = "line 1\n[cut]"
	ai := message.NewAI("", message.ToolCall{ID: "c1", Name: "read_file", Args: `{"path":"a"}`})
	other := ai
	other.ToolCalls = []message.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"b"}`}}
	for _, m := range []message.Message{whole, cut, whole, whole, ai, other, ai, cut} {
		if got, want := c.appendAll(nil, []message.Message{m}), appendMessage(nil, m); string(got) != string(want) {
			t.Fatalf("%s: %s, want %s", m.ID, got, want)
		}
	}
}

// Sessions that interleave, histories that grow, a message cut at its
// position, system prompts that change: every request is encoded as it
// would be without the cache.
func TestMessageCacheInterleaved(t *testing.T) {
	history := func(session string, n int, cut int) []message.Message {
		msgs := []message.Message{{Role: message.System, Content: "You are agent-lsp. Session " + session}}
		for i := range n {
			id := session + "-" + strconv.Itoa(i)
			ai := message.Message{ID: id + "a", Role: message.AI, ToolCalls: []message.ToolCall{{ID: "c" + id, Name: "read_file", Args: `{"path":"a"}`}}}
			tool := message.Message{ID: id + "t", Role: message.Tool, ToolCallID: "c" + id, Content: "line <1>\n" + id}
			if i == cut {
				tool.Content = "[cut]"
			}
			msgs = append(msgs, ai, tool)
		}
		return msgs
	}
	var c messageCache
	for n := range 20 {
		for _, msgs := range [][]message.Message{history("s1", n, -1), history("s2", n, n/2), history("s1", n, n-1), history("s2", n+1, -1)} {
			if got, want := c.appendAll(nil, msgs), (*messageCache)(nil).appendAll(nil, msgs); string(got) != string(want) {
				t.Fatalf("turn %d: %s\nwant %s", n, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// BenchmarkRequestBody encodes the request of a session's 50th tool turn.
func BenchmarkRequestBody(b *testing.B) {
	req := Request{Messages: []message.Message{message.NewSystem(strings.Repeat("You are a coding agent. ", 40)), message.NewHuman("read it 50 times")}}
	for i := range 50 {
		ai := message.NewAI("", message.ToolCall{ID: "call_" + string(rune('a'+i%26)), Name: "read_file", Args: `{"path":"greet.go"}`})
		req.Messages = append(req.Messages, ai, message.Message{ID: ai.ID + "-t0", Role: message.Tool, ToolCallID: ai.ToolCalls[0].ID,
			Content: "greet.go (5 lines)\n    1| package sample\n    2| \n    3| func Greet(name string) string {\n    4| \treturn \"Hello, \" + name\n    5| }\n"})
	}
	for i := range 9 {
		req.Tools = append(req.Tools, ToolSpec{Name: "tool" + string(rune('a'+i)), Description: strings.Repeat("Does things to files. ", 20),
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"A path, relative to the project."}},"required":["path"]}`)})
	}
	b.Run("appendRequest", func(b *testing.B) {
		var buf []byte
		var params paramCache
		for b.Loop() {
			buf, _ = appendRequest(buf[:0], "scripted", req, &params, nil)
		}
		b.SetBytes(int64(len(buf)))
	})
	// As a session sends it: the history from the cache.
	b.Run("appendRequest/cached", func(b *testing.B) {
		var buf []byte
		var params paramCache
		var msgs messageCache
		for b.Loop() {
			buf, _ = appendRequest(buf[:0], "scripted", req, &params, &msgs)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("go-openai", func(b *testing.B) {
		for b.Loop() {
			goOpenAIBody(b, "scripted", req)
		}
	})
}

// TestRefusedBeforeSending checks that what go-openai refused to send is
// refused without a request: a model that only completes text, and tools
// given to a GPT-6 reasoning model.
func TestRefusedBeforeSending(t *testing.T) {
	tools := []ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{}`)}}
	tests := []struct {
		model string
		tools []ToolSpec
		want  error
	}{
		{openai.GPT3TextDavinci003, nil, openai.ErrChatCompletionInvalidModel},
		{openai.GPT6Sol, tools, openai.ErrReasoningToolsRequireResponses},
		{openai.GPT6Sol, nil, nil},
		{"gpt-4o", tools, nil},
	}
	for _, tt := range tests {
		srv, m := serve(t, scripted.Turn{Text: "ok"})
		_, err := m.Chat(context.Background(), Request{Model: tt.model, Messages: []message.Message{message.NewHuman("hi")}, Tools: tt.tools}, nil)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (len(srv.Requests()) == 1) {
			t.Errorf("%s with %d tools: err %v after %d requests, want %v", tt.model, len(tt.tools), err, len(srv.Requests()), tt.want)
		}
	}
}

package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

func TestWireShapeRoundTrip(t *testing.T) {
	tests := []struct {
		ev   Event
		wire string
	}{
		{Event{Session: "s-1", Seq: 1, Data: RunStart{Project: "web", ContextTokens: 8192}}, `{"session":"s-1","seq":1,"type":"run.start","project":"web","contextTokens":8192}`},
		{Event{Session: "s-1", Seq: 1, Data: RunStart{Project: "web", ContextTokens: 3000, Withheld: []string{"switch_project"}}}, `{"session":"s-1","seq":1,"type":"run.start","project":"web","contextTokens":3000,"withheld":["switch_project"]}`},
		{Event{Session: "s-1", Seq: 2, Data: MessageDelta{Text: "hi"}}, `{"session":"s-1","seq":2,"type":"message.delta","text":"hi"}`},
		{Event{Session: "s-1", Seq: 3, Data: Message{Message: message.Message{ID: "m", Role: message.AI, Content: "x", ToolCalls: []message.ToolCall{{ID: "c", Name: "read_file", Args: "{}"}}}}},
			`{"session":"s-1","seq":3,"type":"message","message":{"id":"m","role":"ai","content":"x","toolCalls":[{"id":"c","name":"read_file","args":"{}"}]}}`},
		{Event{Session: "s-1", Seq: 3, Data: MessageQueued{Message: message.Message{ID: "q", Role: message.Human, Content: "also"}, Position: 1}},
			`{"session":"s-1","seq":3,"type":"message.queued","message":{"id":"q","role":"human","content":"also"},"position":1}`},
		{Event{Session: "s-1", Seq: 3, Data: ContextCompacted{Before: 9000, After: 2500, Messages: 6, Summarized: false, Reason: "budget", Error: "the summary failed"}},
			`{"session":"s-1","seq":3,"type":"context.compacted","before":9000,"after":2500,"messages":6,"summarized":false,"reason":"budget","error":"the summary failed"}`},
		{Event{Session: "s-1", Seq: 4, ContextID: "subagent-1", ParentID: "s-1", Data: ToolStart{Name: "search", Args: `{"pattern":"x"}`, CallID: "c"}},
			`{"session":"s-1","seq":4,"type":"tool.start","contextId":"subagent-1","parentId":"s-1","name":"search","args":"{\"pattern\":\"x\"}","callId":"c"}`},
		{Event{Session: "s-1", Seq: 5, Data: ToolEnd{CallID: "c", Name: "search", OK: false, Summary: "bad pattern"}},
			`{"session":"s-1","seq":5,"type":"tool.end","callId":"c","name":"search","ok":false,"summary":"bad pattern"}`},
		{Event{Session: "s-1", Seq: 5, Data: ToolEnd{CallID: "c", Name: "run_command", OK: false, Summary: "go vet: exit status 1", Output: "exit status 1\n$ go vet\nbad"}},
			`{"session":"s-1","seq":5,"type":"tool.end","callId":"c","name":"run_command","ok":false,"summary":"go vet: exit status 1","output":"exit status 1\n$ go vet\nbad"}`},
		{Event{Session: "s-1", Seq: 6, ContextID: "subagent-1", ParentID: "s-1", Data: SubagentStart{Task: "t"}}, `{"session":"s-1","seq":6,"type":"subagent.start","contextId":"subagent-1","parentId":"s-1","task":"t"}`},
		{Event{Session: "s-1", Seq: 7, ContextID: "subagent-1", ParentID: "s-1", Data: SubagentEnd{OK: true, Status: "done"}}, `{"session":"s-1","seq":7,"type":"subagent.end","contextId":"subagent-1","parentId":"s-1","ok":true,"status":"done"}`},
		{Event{Session: "s-1", Seq: 8, Data: Edit{URI: "file:///a.go", Applied: true}}, `{"session":"s-1","seq":8,"type":"edit","uri":"file:///a.go","applied":true}`},
		{Event{Session: "s-1", Seq: 8, Data: Usage{Model: "m", Prompt: 100, Completion: 20, Total: 120, ContextTokens: 8192, Cost: 0.5,
			Run: RunUsage{Prompt: 300, Completion: 50, Total: 350, Cost: 1.25}}},
			`{"session":"s-1","seq":8,"type":"usage","model":"m","prompt":100,"completion":20,"total":120,"contextTokens":8192,"cost":0.5,"run":{"prompt":300,"completion":50,"total":350,"cost":1.25}}`},
		{Event{Session: "s-1", Seq: 9, Data: RunEnd{Status: "failed", Error: "boom"}}, `{"session":"s-1","seq":9,"type":"run.end","status":"failed","error":"boom"}`},
		{Event{Session: "s-1", Seq: 40, Data: EventsDropped{Count: 31, FromSeq: 10, ToSeq: 40}}, `{"session":"s-1","seq":40,"type":"events.dropped","count":31,"fromSeq":10,"toSeq":40}`},
	}
	seen := map[Type]bool{}
	for _, tt := range tests {
		b, err := json.Marshal(tt.ev)
		if err != nil || string(b) != tt.wire {
			t.Fatalf("marshal %s:\n got %s %v\nwant %s", tt.ev.Type(), b, err, tt.wire)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tt.ev) {
			t.Fatalf("round trip of %s: %+v %v", tt.wire, back, err)
		}
		seen[tt.ev.Type()] = true
	}
	for _, typ := range Types() {
		if !seen[typ] {
			t.Errorf("kind %s has no wire test", typ)
		}
	}
}

func TestUnknownType(t *testing.T) {
	var e Event
	err := json.Unmarshal([]byte(`{"session":"s","seq":1,"type":"from.the.future","x":1}`), &e)
	var u *UnknownTypeError
	if !errors.As(err, &u) || u.Type != "from.the.future" {
		t.Fatalf("err = %v", err)
	}
	if _, err := json.Marshal(Event{Session: "s"}); err == nil {
		t.Fatal("an event without data marshalled")
	}
}

// The server sends MarshalJSON's bytes as they are: <, > and & stay plain
// (as jsonrpc2's codec wrote them before), and the object decodes to the
// same event as encoding/json's escaped form.
func TestMarshalJSONUnescaped(t *testing.T) {
	ev := Event{Session: "s-1", Seq: 2, Data: ToolEnd{CallID: "c", Name: "read_file", OK: true, Summary: "if a < b && c > d {"}}
	raw, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"session":"s-1","seq":2,"type":"tool.end","callId":"c","name":"read_file","ok":true,"summary":"if a < b && c > d {"}`
	if string(raw) != want {
		t.Fatalf("got  %s\nwant %s", raw, want)
	}
	var back Event
	if err := json.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back, ev) {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	if _, err := (Event{Session: "s-1"}).MarshalJSON(); err == nil {
		t.Fatal("an event without data encoded")
	}
}

func TestTail(t *testing.T) {
	var many strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	long := strings.Repeat("é", TailBytes) // 2 bytes a rune: a cut must not split one
	cases := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"short, trailing blank lines dropped", "exit status 1\n$ go test\nFAIL\n\n", "exit status 1\n$ go test\nFAIL"},
		{"the last lines", many.String(), strings.Join(strings.Split(strings.TrimSpace(many.String()), "\n")[10:], "\n")},
		{"whole lines within the bytes", "first\n" + strings.Repeat("x", TailBytes-1) + "\nend", "end"},
		{"one long line: its end", "a\n" + long, long[len(long)-TailBytes:]},
	}
	for _, c := range cases {
		got := Tail(c.in)
		if got != c.want {
			t.Errorf("%s: Tail = %q, want %q", c.name, got, c.want)
		}
		if len(got) > TailBytes || strings.Count(got, "\n") >= TailLines || !utf8.ValidString(got) {
			t.Errorf("%s: %d bytes, %d lines, valid %v", c.name, len(got), strings.Count(got, "\n")+1, utf8.ValidString(got))
		}
	}
}

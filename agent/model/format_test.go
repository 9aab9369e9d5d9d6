package model

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

const answerSchema = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`

func askJSON(t *testing.T, m *OpenAI) {
	t.Helper()
	if _, err := m.Chat(context.Background(), Request{Messages: []message.Message{message.NewHuman("hi")}, OutputSchema: json.RawMessage(answerSchema)}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestOutputSchemaAsResponseFormat: a request with an output schema sends it
// as response_format (json_schema); an endpoint that refuses the field (400)
// is asked once more without it, and never again with it.
func TestOutputSchemaAsResponseFormat(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		srv, err := scripted.Start("127.0.0.1:0", scripted.Script{RefuseResponseFormat: refuse, Turns: []scripted.Turn{{Text: `{"ok":true}`}, {Text: `{"ok":false}`}}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		m := NewOpenAI(Config{BaseURL: srv.URL, Model: "scripted", Backoff: 10 * time.Millisecond, Timeout: 5 * time.Second})
		askJSON(t, m)
		askJSON(t, m)
		reqs := srv.Requests()
		var formats []bool
		for _, r := range reqs {
			formats = append(formats, r.ResponseFormat != nil)
		}
		want := []bool{true, true}
		if refuse {
			want = []bool{true, false, false} // refused, once more without, then never with
		}
		if len(formats) != len(want) {
			t.Fatalf("refuse %v: requests with response_format %v, want %v", refuse, formats, want)
		}
		for i := range want {
			if formats[i] != want[i] {
				t.Fatalf("refuse %v: requests with response_format %v, want %v", refuse, formats, want)
			}
		}
		if f := reqs[0].ResponseFormat; f.Type != "json_schema" || f.JSONSchema == nil || f.JSONSchema.Name != "output" {
			t.Fatalf("response_format %+v", f)
		}
		b, _ := json.Marshal(reqs[0].ResponseFormat.JSONSchema.Schema)
		if string(b) != answerSchema {
			t.Fatalf("schema sent: %s", b)
		}
	}
}

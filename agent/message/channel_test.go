package message_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

func msg(id, content string) message.Message {
	return message.Message{ID: id, Role: message.Human, Content: content}
}

// run applies each step's writes through a one-node graph per step and
// returns the messages, as the kernel applies and stores them.
func run(t *testing.T, cp store.Checkpointer, steps ...[]func(message.Channel) graph.Write) ([]string, error) {
	t.Helper()
	s := graph.NewSchema()
	ch := message.NewChannel(s, "messages")
	var res graph.Result
	var err error
	for i, step := range steps {
		writes := make([]graph.Write, len(step))
		for j, w := range step {
			writes[j] = w(ch)
		}
		g, cerr := graph.New(s).Node("n", func(ctx context.Context, _ graph.State) (graph.Patch, error) {
			return graph.NewPatch(writes...), nil
		}).Edge(graph.Start, "n").Edge("n", graph.End).Compile()
		if cerr != nil {
			t.Fatal(cerr)
		}
		if res, err = g.Invoke(context.Background(), graph.Config{Thread: "t", Checkpointer: cp}, graph.NewPatch()); err != nil {
			return nil, err
		}
		_ = i
	}
	var got []string
	for _, m := range ch.Get(res.State) {
		got = append(got, m.ID+":"+m.Content)
	}
	return got, nil
}

func appendW(ms ...message.Message) func(message.Channel) graph.Write {
	return func(c message.Channel) graph.Write { return c.Append(ms...) }
}

func TestChannelAddMessagesSemantics(t *testing.T) {
	replace := func(ms ...message.Message) func(message.Channel) graph.Write {
		return func(c message.Channel) graph.Write { return c.Replace(ms...) }
	}
	remove := func(ids ...string) func(message.Channel) graph.Write {
		return func(c message.Channel) graph.Write { return c.Remove(ids...) }
	}
	type step = []func(message.Channel) graph.Write
	tests := []struct {
		name    string
		steps   []step
		want    []string
		wantErr string
	}{
		{"append", []step{{appendW(msg("a", "1"), msg("b", "2"))}}, []string{"a:1", "b:2"}, ""},
		{"same id replaces in place", []step{{appendW(msg("a", "1"), msg("b", "2"))}, {appendW(msg("a", "x"))}}, []string{"a:x", "b:2"}, ""},
		{"re-delivery is a no-op", []step{{appendW(msg("a", "1"))}, {appendW(msg("a", "1"))}, {appendW(msg("a", "1"))}}, []string{"a:1"}, ""},
		{"remove by id", []step{{appendW(msg("a", "1"), msg("b", "2"))}, {remove("a", "unknown")}}, []string{"b:2"}, ""},
		{"replace is remove-all then append", []step{{appendW(msg("a", "1"), msg("b", "2"))}, {replace(msg("c", "3"))}}, []string{"c:3"}, ""},
		{"replace with nothing empties", []step{{appendW(msg("a", "1"))}, {replace()}}, nil, ""},
		{"two appends in one step keep their order", []step{{appendW(msg("a", "1")), appendW(msg("b", "2"))}}, []string{"a:1", "b:2"}, ""},
		{"message without id", []step{{appendW(message.Message{Role: message.Human})}}, nil, "no id"},
		{"tool message without call id", []step{{appendW(message.Message{ID: "t", Role: message.Tool})}}, nil, "no tool_call_id"},
	}
	for _, tt := range tests {
		for name, cp := range map[string]store.Checkpointer{"memory": store.NewMemory(), "bbolt": openBolt(t)} {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				got, err := run(t, cp, tt.steps...)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("err = %v, want %q", err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("messages %v, want %v", got, tt.want)
				}
				// What was stored loads back to the same list.
				st, err := cp.Load(context.Background(), "t", "")
				if err != nil {
					t.Fatal(err)
				}
				var stored []string
				for _, it := range st.Lists["messages"] {
					var m message.Message
					json.Unmarshal(it.Body, &m)
					stored = append(stored, m.ID+":"+m.Content)
				}
				if !reflect.DeepEqual(stored, tt.want) {
					t.Fatalf("stored %v, want %v", stored, tt.want)
				}
			})
		}
	}
}

func openBolt(t *testing.T) *store.Bolt {
	db, err := store.Open(t.TempDir() + "/m.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

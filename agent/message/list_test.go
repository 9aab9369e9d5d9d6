package message

import (
	"encoding/json"
	"reflect"
	"testing"
)

func ids(l *List) []string {
	var out []string
	for _, m := range l.All() {
		out = append(out, m.ID)
	}
	return out
}

func TestListRules(t *testing.T) {
	m := func(id, content string) Message { return Message{ID: id, Role: Human, Content: content} }
	tests := []struct {
		name    string
		ops     func(l *List)
		want    []string
		content map[string]string
	}{
		{"append keeps order", func(l *List) { l.Upsert(m("a", "1")); l.Upsert(m("b", "2")) }, []string{"a", "b"}, nil},
		{"same id replaces in place", func(l *List) {
			l.Upsert(m("a", "1"))
			l.Upsert(m("b", "2"))
			l.Upsert(m("a", "new"))
		}, []string{"a", "b"}, map[string]string{"a": "new"}},
		{"remove by id", func(l *List) {
			l.Upsert(m("a", "1"))
			l.Upsert(m("b", "2"))
			l.Upsert(m("c", "3"))
			l.Remove("b", "unknown")
		}, []string{"a", "c"}, nil},
		{"remove all", func(l *List) { l.Upsert(m("a", "1")); l.RemoveAll() }, nil, nil},
		{"append after remove all", func(l *List) { l.Upsert(m("a", "1")); l.RemoveAll(); l.Upsert(m("b", "2")) }, []string{"b"}, nil},
		{"re-append after remove goes to the end", func(l *List) {
			l.Upsert(m("a", "1"))
			l.Upsert(m("b", "2"))
			l.Remove("a")
			l.Upsert(m("a", "again"))
		}, []string{"b", "a"}, map[string]string{"a": "again"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List
			tt.ops(&l)
			if got := ids(&l); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ids = %v, want %v", got, tt.want)
			}
			for _, msg := range l.All() {
				if want, ok := tt.content[msg.ID]; ok && msg.Content != want {
					t.Errorf("content of %s = %q, want %q", msg.ID, msg.Content, want)
				}
			}
		})
	}
}

func TestListCopyIsAView(t *testing.T) {
	var l List
	l.Upsert(Message{ID: "a", Role: Human})
	old := l
	l.Upsert(Message{ID: "b", Role: Human})
	if old.Len() != 1 || old.Has("b") {
		t.Fatalf("old view changed: len %d, has b %v", old.Len(), old.Has("b"))
	}
	l.Upsert(Message{ID: "a", Role: Human, Content: "x"})
	if old.All()[0].Content != "" {
		t.Fatal("replacement leaked into old view")
	}
}

func TestNewAssignsUniqueIDs(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewHuman("x").ID
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestJSONRoundTrip(t *testing.T) {
	msgs := []Message{
		NewSystem("sys"),
		NewHuman("hi ✓ 你好"),
		NewAI("", ToolCall{ID: "call_1", Name: "read_file", Args: `{"path":"a.go"}`}),
		NewTool("call_1", "contents"),
		{ID: "x", Role: AI, Name: "agent@web", Content: "done"},
	}
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Message
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m, back) {
			t.Errorf("round trip: %+v != %+v", back, m)
		}
		b2, _ := json.Marshal(back)
		if string(b) != string(b2) {
			t.Errorf("unstable JSON: %s vs %s", b, b2)
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []Message{{}, {ID: "a", Role: "robot"}, {ID: "a", Role: Tool}}
	for _, m := range bad {
		if m.Validate() == nil {
			t.Errorf("%+v: want error", m)
		}
	}
	if err := NewTool("c", "x").Validate(); err != nil {
		t.Error(err)
	}
}

// FuzzMessages applies random op sequences and checks that IDs stay unique and
// the survivors keep their first-insertion order.
func FuzzMessages(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 1, 1, 2, 3, 0, 0, 5})
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var l List
		var model []string // expected order of IDs
		for i := 0; i+1 < len(ops); i += 2 {
			id := string(rune('a' + ops[i+1]%8))
			switch ops[i] % 4 {
			case 0: // append/replace
				l.Upsert(Message{ID: id, Role: Human, Content: string(rune(i))})
				if !contains(model, id) {
					model = append(model, id)
				}
			case 1:
				l.Remove(id)
				model = without(model, id)
			case 2:
				if ops[i+1]%5 == 0 {
					l.RemoveAll()
					model = nil
				}
			case 3: // replace(all) = remove-all then append the given ones
				l.RemoveAll()
				model = nil
				l.Upsert(Message{ID: id, Role: Human})
				model = append(model, id)
			}
			got := ids(&l)
			if !reflect.DeepEqual(got, model) && !(len(got) == 0 && len(model) == 0) {
				t.Fatalf("after op %d: %v, want %v", i/2, got, model)
			}
			seen := map[string]bool{}
			for _, m := range l.All() {
				if seen[m.ID] {
					t.Fatalf("duplicate id %s", m.ID)
				}
				seen[m.ID] = true
				if !l.Has(m.ID) {
					t.Fatalf("Has(%s) false for present message", m.ID)
				}
			}
		}
	})
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func without(s []string, v string) []string {
	var out []string
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

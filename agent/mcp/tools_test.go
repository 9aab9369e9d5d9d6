package mcp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// validName is what OpenAI accepts as a tool name.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestAssignNames(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, c := range []struct {
		name string
		refs []ToolRef
		// want maps a ref's index to its exact name; refs not in want are
		// checked for validity and distinctness only.
		want map[int]string
		// hashed lists the refs whose names must end with a hash suffix.
		hashed []int
	}{
		{"plain", []ToolRef{{"github", "create_issue"}, {"fs", "read-file"}},
			map[int]string{0: "mcp__github__create_issue", 1: "mcp__fs__read-file"}, nil},
		{"sanitised", []ToolRef{{"my server", "tool.name/v2"}, {"ünï", "ok"}},
			map[int]string{0: "mcp__my_server__tool_name_v2", 1: "mcp___n___ok"}, nil},
		{"empty parts", []ToolRef{{"", ""}}, map[int]string{0: "mcp______"}, nil},
		{"collision by sanitising", []ToolRef{{"s", "a.b"}, {"s", "a_b"}, {"s", "c"}},
			map[int]string{2: "mcp__s__c"}, []int{0, 1}},
		{"collision by splitting", []ToolRef{{"a__b", "c"}, {"a", "b__c"}}, nil, []int{0, 1}},
		{"truncated", []ToolRef{{"srv", long}, {"srv", long + "y"}}, nil, []int{0, 1}},
		{"long server", []ToolRef{{long, "t"}}, nil, []int{0}},
		{"exactly 64", []ToolRef{{"s", strings.Repeat("t", 64-len("mcp__s__"))}},
			map[int]string{0: "mcp__s__" + strings.Repeat("t", 64-len("mcp__s__"))}, nil},
		{"collision with a suffixed name", []ToolRef{{"s", "a.b"}, {"s", "a_b"}, {"s", "a_b_" + hashOf(ToolRef{"s", "a.b"})}}, nil, []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			names := AssignNames(c.refs)
			seen := map[string]ToolRef{}
			for i, ref := range c.refs {
				name := names[ref]
				if !validName.MatchString(name) {
					t.Errorf("%v: invalid name %q", ref, name)
				}
				if other, dup := seen[name]; dup {
					t.Errorf("%v and %v are both %q", ref, other, name)
				}
				seen[name] = ref
				if want, ok := c.want[i]; ok && name != want {
					t.Errorf("%v: %q, want %q", ref, name, want)
				}
			}
			for _, i := range c.hashed {
				if name := names[c.refs[i]]; !regexp.MustCompile(`_[0-9a-f]{8,}$`).MatchString(name) {
					t.Errorf("%v: %q has no hash suffix", c.refs[i], name)
				}
			}
			// Deterministic: the order of the refs does not matter.
			shuffled := append([]ToolRef(nil), c.refs...)
			rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			again := AssignNames(shuffled)
			for _, ref := range c.refs {
				if again[ref] != names[ref] {
					t.Errorf("%v: %q, then %q in another order", ref, names[ref], again[ref])
				}
			}
		})
	}
}

// hashOf is the 8-digit suffix withSuffix gives ref.
func hashOf(ref ToolRef) string {
	name := withSuffix("", ref, 8)
	return name[1:]
}

func TestModelTools(t *testing.T) {
	tools := map[string][]*sdk.Tool{
		"b": {{Name: "t", Description: strings.Repeat("é", 600), InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}}},
		"a": {{Name: "t", Title: "A title"}, nil},
	}
	got := ModelTools(tools)
	if len(got) != 2 || got[0].Name != "mcp__a__t" || got[1].Name != "mcp__b__t" {
		t.Fatalf("tools %+v", got)
	}
	if got[0].Ref != (ToolRef{"a", "t"}) || got[0].Description != "A title" || string(got[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("a: %+v", got[0])
	}
	d := got[1].Description
	if len(d) > MaxDescriptionLen || !utf8.ValidString(d) || !strings.HasSuffix(d, "…") {
		t.Errorf("description of %d bytes, valid %v", len(d), utf8.ValidString(d))
	}
	if !strings.Contains(string(got[1].InputSchema), `"properties"`) {
		t.Errorf("schema %s", got[1].InputSchema)
	}
}

func TestInputSchema(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema any
		want   string
	}{
		{"missing", nil, `{"type":"object"}`},
		{"object", map[string]any{"type": "object", "required": []string{"a"}}, `{"required":["a"],"type":"object"}`},
		{"raw object", json.RawMessage(`{"type":"object","properties":{}}`), `{"type":"object","properties":{}}`},
		{"without type", map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`},
		{"not an object schema", map[string]any{"type": "string"}, `{"type":"object"}`},
		{"not an object", []int{1}, `{"type":"object"}`},
		{"null", json.RawMessage(`null`), `{"type":"object"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(InputSchema(c.schema)); got != c.want {
				t.Errorf("%s, want %s", got, c.want)
			}
		})
	}
}

func TestResultText(t *testing.T) {
	size := int64(10)
	for _, c := range []struct {
		name    string
		res     *sdk.CallToolResult
		want    string
		isError bool
	}{
		{"nil", nil, "(no result)", false},
		{"empty", &sdk.CallToolResult{}, "(no output)", false},
		{"text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, "a\nb", false},
		{"error", &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "bad"}}}, "bad", true},
		{"structured", &sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}}, `{"n":1}`, false},
		{"structured also as text", &sdk.CallToolResult{
			Content: []sdk.Content{&sdk.TextContent{Text: "{\n  \"n\": 1\n}"}}, StructuredContent: map[string]any{"n": 1}}, "{\n  \"n\": 1\n}", false},
		{"structured and other text", &sdk.CallToolResult{
			Content: []sdk.Content{&sdk.TextContent{Text: "done"}}, StructuredContent: []int{1, 2}}, "done\n[1,2]", false},
		{"resource link", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain", Size: &size}}},
			"[resource link: a.txt <file:///a.txt>, text/plain]", false},
		{"embedded text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", Text: "body"}}}},
			"[resource file:///b]\nbody", false},
		{"embedded blob", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///c", MIMEType: "application/zip", Blob: make([]byte, 99)}}}},
			"[resource file:///c: application/zip, 99 bytes of binary data, not shown]", false},
		{"image", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/jpeg", Data: make([]byte, 2048)}}},
			"[image: image/jpeg, 2048 bytes, not shown]", false},
		{"audio", &sdk.CallToolResult{Content: []sdk.Content{&sdk.AudioContent{Data: make([]byte, 7)}}},
			"[audio: unknown type, 7 bytes, not shown]", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, isError := ResultText(c.res, 0)
			if got != c.want || isError != c.isError {
				t.Errorf("%q (error %v), want %q (error %v)", got, isError, c.want, c.isError)
			}
		})
	}
	long := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "HEAD" + strings.Repeat("x", 10000) + "TAIL"}}}
	if got, _ := ResultText(long, 500); len(got) > 500 || !strings.HasPrefix(got, "HEAD") || !strings.HasSuffix(got, "TAIL") {
		t.Errorf("a long result cut to %d bytes: %q", len(got), got)
	}
}

func TestTruncate(t *testing.T) {
	text := strings.Repeat("aé€😀", 500) // 1, 2, 3 and 4 byte characters
	for _, limit := range []int{0, -1, 1, 5, 30, 60, 61, 100, 1000, len(text) - 1, len(text), len(text) + 1} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			got := Truncate(text, limit)
			if limit <= 0 || limit >= len(text) {
				if got != text {
					t.Errorf("cut though within the limit")
				}
				return
			}
			if len(got) > limit || !utf8.ValidString(got) {
				t.Errorf("%d bytes (limit %d), valid UTF-8 %v", len(got), limit, utf8.ValidString(got))
			}
			if limit >= 100 {
				var omitted int
				if _, err := fmt.Sscanf(got[strings.Index(got, "\n[... "):], "\n[... %d bytes", &omitted); err != nil {
					t.Fatalf("no note in %q", got)
				}
				if kept := len(got) - len(fmt.Sprintf("\n[... %d bytes of the result left out ...]\n", omitted)); kept+omitted != len(text) {
					t.Errorf("kept %d + omitted %d != %d", kept, omitted, len(text))
				}
				if !strings.HasPrefix(text, got[:10]) || !strings.HasSuffix(text, got[len(got)-10:]) {
					t.Errorf("head or tail lost: %q", got)
				}
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	var lines []string
	w := &lineWriter{log: func(l string) { lines = append(lines, l) }}
	for _, chunk := range []string{"one\ntw", "o\r\n", strings.Repeat("z", maxLogLine+10), "\nlast"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"one", "two", strings.Repeat("z", maxLogLine) + "…", strings.Repeat("z", 10)}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("lines %q", lines)
	}
}

func TestCommandEnv(t *testing.T) {
	got := commandEnv([]string{"PATH=/bin", "HOME=/h", "KEEP=1"}, map[string]string{"HOME": "/x", "NEW": "2"})
	if want := []string{"PATH=/bin", "KEEP=1", "HOME=/x", "NEW=2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%q, want %q", got, want)
	}
	if got := commandEnv(nil, nil); got == nil {
		t.Error("nil: a nil Env would inherit the process's environment")
	}
}

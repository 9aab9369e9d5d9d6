package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the model-facing view.
const (
	// MaxNameLen is the longest tool name OpenAI accepts (^[a-zA-Z0-9_-]{1,64}$).
	MaxNameLen = 64
	// MaxDescriptionLen caps a tool's description, in bytes.
	MaxDescriptionLen = 1024
	// namePrefix starts every MCP tool's model-facing name.
	namePrefix = "mcp__"
)

// ToolRef names a tool as its server knows it.
type ToolRef struct {
	Server string
	Tool   string
}

// ModelTool is one MCP tool as the model sees it.
type ModelTool struct {
	// Name is mcp__<server>__<tool>, sanitised (see AssignNames).
	Name string
	// Ref is the server and the tool's own name, for the call.
	Ref ToolRef
	// Description is the tool's description (its title when it has none),
	// capped at MaxDescriptionLen.
	Description string
	// InputSchema is the JSON schema of the arguments, always an object schema.
	InputSchema json.RawMessage
	// ReadOnly is the server's word that the tool changes nothing (its
	// annotation readOnlyHint): its calls record no intent.
	ReadOnly bool
}

// ModelTools builds the model's view of the tools of several servers, sorted
// by name, with names assigned across all of them (see AssignNames).
func ModelTools(byServer map[string][]*sdk.Tool) []ModelTool {
	var refs []ToolRef
	tools := map[ToolRef]*sdk.Tool{}
	for server, list := range byServer {
		for _, t := range list {
			if t == nil {
				continue
			}
			ref := ToolRef{server, t.Name}
			if _, dup := tools[ref]; dup {
				continue
			}
			refs = append(refs, ref)
			tools[ref] = t
		}
	}
	names := AssignNames(refs)
	out := make([]ModelTool, 0, len(refs))
	for _, ref := range refs {
		t := tools[ref]
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		out = append(out, ModelTool{
			Name:        names[ref],
			Ref:         ref,
			Description: CapDescription(desc),
			InputSchema: InputSchema(t.InputSchema),
			ReadOnly:    t.Annotations != nil && t.Annotations.ReadOnlyHint,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AssignNames gives each tool its model-facing name, mcp__<server>__<tool>,
// with every character outside [a-zA-Z0-9_-] replaced by '_'. The names are
// deterministic (they depend only on the set of refs, not their order) and
// distinct: a name longer than MaxNameLen is cut and given a suffix "_" plus a
// short hash of the server and tool, and when several refs arrive at the same
// name (as "a.b" and "a_b" do, or server "a__b" tool "c" and server "a" tool
// "b__c"), each of them gets that suffix.
func AssignNames(refs []ToolRef) map[ToolRef]string {
	names := make(map[ToolRef]string, len(refs))
	for _, ref := range refs {
		base := plainName(ref)
		if len(base) > MaxNameLen {
			base = withSuffix(base, ref, 8)
		}
		names[ref] = base
	}
	// Resolve collisions with longer hashes until none remain; a suffixed
	// name may itself collide with a tool literally named like one.
	for hashLen := 8; hashLen <= 64; hashLen += 8 {
		groups := map[string][]ToolRef{}
		for ref, name := range names {
			groups[name] = append(groups[name], ref)
		}
		collided := false
		for _, group := range groups {
			if len(group) < 2 {
				continue
			}
			collided = true
			for _, ref := range group {
				names[ref] = withSuffix(plainName(ref), ref, hashLen)
			}
		}
		if !collided {
			break
		}
	}
	return names
}

// plainName is mcp__<server>__<tool> sanitised, of any length.
func plainName(ref ToolRef) string {
	return namePrefix + sanitize(ref.Server) + "__" + sanitize(ref.Tool)
}

// sanitize replaces every character outside [a-zA-Z0-9_-] (and each invalid
// byte) with '_'; an empty name becomes "_".
func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// withSuffix cuts name so that "_" and hashLen hex digits of the ref's hash
// fit in MaxNameLen, and appends them.
func withSuffix(name string, ref ToolRef, hashLen int) string {
	sum := sha256.Sum256([]byte(ref.Server + "\x00" + ref.Tool))
	h := hex.EncodeToString(sum[:])[:hashLen]
	if limit := MaxNameLen - 1 - hashLen; len(name) > limit {
		name = name[:limit]
	}
	return name + "_" + h
}

// CapDescription cuts a description to MaxDescriptionLen bytes at a character
// boundary, ending it with "…" when cut.
func CapDescription(s string) string {
	if len(s) <= MaxDescriptionLen {
		return s
	}
	const ellipsis = "…"
	return cutUTF8(s, MaxDescriptionLen-len(ellipsis)) + ellipsis
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tailUTF8 returns the longest suffix of s of at most n bytes that does not
// split a character.
func tailUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// InputSchema returns a tool's input schema as JSON: an object schema, as the
// model's API requires. A missing schema, or one that is not an object schema,
// becomes {"type":"object"}; an object without "type" gets "type":"object".
func InputSchema(schema any) json.RawMessage {
	empty := json.RawMessage(`{"type":"object"}`)
	if schema == nil {
		return empty
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return empty
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return empty
	}
	switch t := m["type"]; t {
	case "object":
		return data
	case nil:
		m["type"] = "object"
		if data, err = json.Marshal(m); err != nil {
			return empty
		}
		return data
	default:
		return empty
	}
}

// ResultText converts a tool's result to text for the model, at most limit
// bytes (limit <= 0: no limit), and reports whether the server flagged it as
// an error. Text is kept as is; structured content is JSON (left out when a
// text part already holds the same JSON, as the protocol recommends servers
// do); a resource link is its name and URI; an embedded resource is its text,
// or a placeholder for a blob; images and audio are placeholders naming their
// type and size. Parts are separated by newlines. A longer text keeps its
// head and tail around a note of what was cut (see Truncate).
func ResultText(res *sdk.CallToolResult, limit int) (text string, isError bool) {
	if res == nil {
		return "(no result)", false
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil && !sameJSON(data, parts) {
			parts = append(parts, string(data))
		}
	}
	text = strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	return Truncate(text, limit), res.IsError
}

// contentText is one content part as text.
func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.ResourceLink:
		s := fmt.Sprintf("[resource link: %s <%s>", c.Name, c.URI)
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		if c.Description != "" {
			s += ": " + c.Description
		}
		return s + "]"
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[empty resource]"
		}
		if len(r.Blob) > 0 || r.Text == "" {
			return fmt.Sprintf("[resource %s: %s, %d bytes of binary data, not shown]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
		}
		return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
	case nil:
		return ""
	default:
		data, err := json.Marshal(c)
		if err != nil {
			return fmt.Sprintf("[%T content]", c)
		}
		return string(data)
	}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// sameJSON reports whether one of the text parts holds the JSON value data.
func sameJSON(data []byte, parts []string) bool {
	var want any
	if json.Unmarshal(data, &want) != nil {
		return false
	}
	for _, p := range parts {
		var got any
		if json.Unmarshal([]byte(p), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

// Truncate cuts s to at most limit bytes (limit <= 0: no limit), keeping its
// head (two thirds) and tail, split at character boundaries, around a note
// of how many bytes were left out.
func Truncate(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	note := func(omitted int) string {
		return fmt.Sprintf("\n[... %d bytes of the result left out ...]\n", omitted)
	}
	room := limit - len(note(len(s)))
	if room <= 0 {
		return cutUTF8(s, limit)
	}
	head := cutUTF8(s, room-room/3)
	tail := tailUTF8(s, room-len(head))
	return head + note(len(s)-len(head)-len(tail)) + tail
}

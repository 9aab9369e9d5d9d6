// Package message holds the chat messages an agent run exchanges with its model,
// and the add_messages list that keeps them unique by ID.
package message

import (
	"fmt"

	"github.com/oklog/ulid/v2"
)

// Role says who wrote a message.
type Role string

// The four message roles.
const (
	System Role = "system"
	Human  Role = "human"
	AI     Role = "ai"
	Tool   Role = "tool"
)

// Message is one entry of a conversation. Its ID is assigned when it is created,
// never when it is stored or loaded, so replays stay idempotent.
type Message struct {
	ID         string     `json:"id"`
	Role       Role       `json:"role"`
	Name       string     `json:"name,omitempty"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	// Images are the images the message shows the model: a human message's
	// attachments, a tool message's result (read_image). They are references:
	// an image's bytes are stored once per session (ImageChannel).
	Images []Image `json:"images,omitempty"`
}

// Image is a reference to an image of the session: what the message says of
// it, without its bytes.
type Image struct {
	// ID names the image by its bytes: "img-" and the first 32 hex digits
	// of their SHA-256, so an image attached twice is stored once.
	ID       string `json:"id"`
	MimeType string `json:"mimeType"` // image/png, image/jpeg, image/gif or image/webp
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	Size     int    `json:"size"`           // bytes of the stored image
	Name     string `json:"name,omitempty"` // where it came from: a file's path, "pasted image"
}

// ToolCall is a model's request to run one tool. Args is the raw JSON text the
// model produced; it may be invalid, and tools report that as an error.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// NewID returns a fresh, time-ordered message ID.
func NewID() string { return ulid.Make().String() }

// NewSystem returns a system message with a fresh ID.
func NewSystem(content string) Message {
	return Message{ID: NewID(), Role: System, Content: content}
}

// NewHuman returns a human message with a fresh ID.
func NewHuman(content string) Message {
	return Message{ID: NewID(), Role: Human, Content: content}
}

// NewAI returns an AI message with a fresh ID and the given tool calls.
func NewAI(content string, calls ...ToolCall) Message {
	return Message{ID: NewID(), Role: AI, Content: content, ToolCalls: calls}
}

// NewTool returns the answer to the tool call callID.
func NewTool(callID, content string) Message {
	return Message{ID: NewID(), Role: Tool, Content: content, ToolCallID: callID}
}

// Validate reports what is wrong with m, if anything.
func (m Message) Validate() error {
	if m.ID == "" {
		return fmt.Errorf("message has no id")
	}
	switch m.Role {
	case System, Human, AI:
	case Tool:
		if m.ToolCallID == "" {
			return fmt.Errorf("tool message %s has no tool_call_id", m.ID)
		}
	default:
		return fmt.Errorf("message %s has unknown role %q", m.ID, m.Role)
	}
	for _, img := range m.Images {
		if img.ID == "" || img.MimeType == "" {
			return fmt.Errorf("message %s has an image without an id or a type", m.ID)
		}
	}
	return nil
}

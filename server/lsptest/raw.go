package lsptest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Raw writes and reads frames by hand, to send what a well-behaved client
// cannot (bad JSON, a frame too large) and to read exactly what came back.
type Raw struct {
	w io.Writer
	r *bufio.Reader
}

// NewRaw frames to w and reads frames from r.
func NewRaw(r io.Reader, w io.Writer) *Raw {
	return &Raw{w: w, r: bufio.NewReaderSize(r, 1<<20)}
}

// Send writes body as one frame, whatever it holds.
func (r *Raw) Send(body string) error {
	_, err := fmt.Fprintf(r.w, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return err
}

// Next returns the next message, notifications included, decoded as a map
// (nil when its body is not a JSON object), or the error that ended the
// stream (io.EOF once the server closed it).
func (r *Raw) Next() (map[string]any, error) {
	n := 0
	for {
		line, err := r.r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			if n, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("frame header %q: %w", line, err)
			}
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.r, body); err != nil {
		return nil, err
	}
	var m map[string]any
	json.Unmarshal(body, &m)
	return m, nil
}

// Read returns the next message that is not a notification: a response,
// or a request of the server's.
func (r *Raw) Read() (map[string]any, error) {
	for {
		m, err := r.Next()
		if err != nil {
			return nil, err
		}
		if _, isNote := m["method"]; !isNote || m["id"] != nil {
			return m, nil
		}
	}
}

package lsptest

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// serve starts a fake server over pipes: it answers initialize and
// executeCommand with what the editor answered to its requests.
func serve(t *testing.T) (*Client, jsonrpc2.Conn) {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	srv := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(Stream(c2sR, s2cW)))
	srv.Go(context.Background(), func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		switch req.Method() {
		case "initialize":
			return map[string]any{"serverInfo": map[string]any{"name": "fake"}}, nil
		case "workspace/executeCommand":
			jsonrpc2.Async(ctx)
			srv.Notify(ctx, "agent/event", map[string]any{"type": "run.start", "seq": 1})
			var edit, ask json.RawMessage
			_, err := srv.Call(ctx, "workspace/applyEdit", map[string]any{"label": "x"}, &edit)
			if err != nil {
				return nil, err
			}
			if _, err := srv.Call(ctx, "window/showMessageRequest", map[string]any{"message": "allow?"}, &ask); err != nil {
				return map[string]any{"edit": edit, "ask": err.Error()}, nil
			}
			return map[string]any{"edit": edit, "ask": ask}, nil
		}
		return nil, nil
	})
	c := New(Stream(s2cR, c2sW))
	t.Cleanup(func() { c.Close(); srv.Close() })
	return c, srv
}

func TestClientAnswersAndKeeps(t *testing.T) {
	c, _ := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Initialize(ctx, []Folder{{"w", "/w"}}, nil, nil)
	if err != nil || res["serverInfo"] == nil {
		t.Fatalf("initialize: %v %v", res, err)
	}
	var out map[string]json.RawMessage
	if err := c.Command(ctx, "agent.run", map[string]any{}, &out); err != nil {
		t.Fatal(err)
	}
	if string(out["edit"]) != `{"applied":true}` || !strings.Contains(string(out["ask"]), "lsptest client: window/showMessageRequest") {
		t.Fatalf("the default answers: %s", out)
	}
	if ev := c.Events(); len(ev) != 1 || ev[0]["type"] != "run.start" {
		t.Fatalf("events kept: %v", ev)
	}
	if got := c.Messages("workspace/applyEdit"); len(got) != 1 || string(got[0]) != `{"label":"x"}` {
		t.Fatalf("requests kept: %s", got)
	}

	c.Handle("window/showMessageRequest", Reply(map[string]string{"title": "Allow once"}))
	c.Handle("workspace/applyEdit", func(_ context.Context, p json.RawMessage) (any, error) {
		return map[string]any{"applied": false, "failureReason": "saw " + string(p)}, nil
	})
	var taken []string
	c.Handle("agent/event", func(_ context.Context, p json.RawMessage) (any, error) {
		taken = append(taken, string(p)) // on the read loop: no other goroutine touches it
		return nil, nil
	})
	if err := c.Command(ctx, "agent.run", map[string]any{}, &out); err != nil {
		t.Fatal(err)
	}
	if string(out["ask"]) != `{"title":"Allow once"}` || !strings.Contains(string(out["edit"]), `saw {\"label\":\"x\"}`) {
		t.Fatalf("the handlers' answers: %s", out)
	}
	if len(c.Events()) != 1 || len(taken) != 1 {
		t.Fatalf("a notification a handler takes is not kept: %d kept, %d taken", len(c.Events()), len(taken))
	}
}

func TestRawFrames(t *testing.T) {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	r := NewRaw(s2cR, c2sW)
	srv := NewRaw(c2sR, s2cW)
	go func() {
		m, _ := srv.Next()
		srv.Send(`{"jsonrpc":"2.0","method":"window/logMessage","params":{}}`)
		srv.Send(`{"jsonrpc":"2.0","id":` + jsonString(m["id"]) + `,"result":"ok"}`)
	}()
	if err := r.Send(`{"jsonrpc":"2.0","id":7,"method":"x"}`); err != nil {
		t.Fatal(err)
	}
	m, err := r.Read()
	if err != nil || m["result"] != "ok" || m["id"] != 7.0 {
		t.Fatalf("read: %v %v", m, err)
	}
	s2cW.Close()
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the server closed: %v", err)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

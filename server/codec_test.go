//go:build unix

package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// sameJSON fails unless got and want are the same JSON value (objects'
// member order aside: LSP peers read objects, not text).
func sameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: the server sends invalid JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// The library's codec (its unexported lspCodec) passes a jsonrpc2.RawMessage
// verbatim but hands an encoding/json.RawMessage to protocol.Marshal, which
// validates and re-encodes it, although jsonrpc2.Codec's contract says both
// pass verbatim. The server's codec passes both, so an agent/event, encoded
// once, is written as it is.
func TestCodecPassesRawMessagesVerbatim(t *testing.T) {
	const raw = `{ "type" : "run.start",  "seq": 1 }`
	if b, err := protocol.Marshal(json.RawMessage(raw)); err != nil || string(b) == raw {
		t.Errorf("protocol.Marshal now passes an encoding/json.RawMessage verbatim (%s, %v): lspCodec's note on it is stale", b, err)
	}
	var c lspCodec
	for _, v := range []any{json.RawMessage(raw), jsonrpc2.RawMessage(raw)} {
		b, err := c.Marshal(v)
		if err != nil || string(b) != raw {
			t.Errorf("%T: %s, %v; want it verbatim", v, b, err)
		}
	}
	if b, _ := c.Marshal(json.RawMessage(nil)); string(b) != "null" {
		t.Errorf("a nil raw message encodes as %s, want null", b)
	}
	var got json.RawMessage
	src := []byte(raw)
	if err := c.Unmarshal(src, &got); err != nil || string(got) != raw {
		t.Fatalf("decoding into a raw message: %s, %v", got, err)
	}
	src[0] = 'x'
	if got[0] != '{' {
		t.Error("a decoded raw message shares the connection's read buffer")
	}
	// Everything else is the library's: its unions encode as their arm.
	b, err := c.Marshal(&protocol.ProgressParams{Token: protocol.Integer(7), Value: progressEnd("done")})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "$/progress", b, `{"token":7,"value":{"kind":"end","message":"done"}}`)
}

// A struct that embeds a protocol type and adds a field cannot be decoded
// by the library's codec (nor by encoding/json/v2): the embedded type's
// UnmarshalJSONFrom is promoted and decodes the whole object, so the added
// field stays empty. The headless client's note on an applied edit is such
// a field; decodeApplyEditResult decodes the two parts apart.
func TestApplyEditResultKeepsTheNote(t *testing.T) {
	const answer = `{"applied":true,"failureReason":"partly","note":"rewritten in place (2 hard links)"}`
	var embedded struct {
		protocol.ApplyWorkspaceEditResult
		Note string `json:"note"`
	}
	if err := protocol.Unmarshal([]byte(answer), &embedded); err != nil {
		t.Fatal(err)
	}
	if embedded.Note != "" || !embedded.Applied {
		t.Errorf("the library now decodes a field added to an embedded protocol type (%+v): decodeApplyEditResult can be one Unmarshal", embedded)
	}
	res, err := decodeApplyEditResult([]byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Applied || res.FailureReason == nil || *res.FailureReason != "partly" || res.Note != "rewritten in place (2 hard links)" {
		t.Errorf("decoded %+v (note %q)", res.ApplyWorkspaceEditResult, res.Note)
	}
	for _, empty := range []string{"", "null"} {
		if res, err := decodeApplyEditResult([]byte(empty)); err != nil || res.Applied {
			t.Errorf("answer %q: %+v, %v; want not applied, no error", empty, res, err)
		}
	}
	if _, err := decodeApplyEditResult([]byte(`{"applied":"yes"}`)); err == nil {
		t.Error("an answer whose applied is a string is accepted")
	}
}

// The edits the server sends are what the hand-typed WorkspaceEdit sent
// before the library's types carried them (the JSON below is that output),
// and they decode back to the same value with the library's codec.
func TestWorkspaceEditOnTheWire(t *testing.T) {
	rng := workspace.Range{Start: workspace.Position{Line: 1, Character: 2}, End: workspace.Position{Line: 1, Character: 5}}
	const u = "file:///work/sample/greet.go"
	const lspRange = `{"start":{"line":1,"character":2},"end":{"line":1,"character":5}}`
	cases := []struct {
		name string
		fe   tools.FileEdit
		why  string
		want string
	}{
		{"an open file, applied at once", tools.FileEdit{Path: "/work/sample/greet.go", Open: true, Version: 7, Label: "agent: edit greet.go",
			Edits: []tools.TextEdit{{Range: rng, NewText: "Hi"}}}, "",
			`{"label":"agent: edit greet.go","edit":{"documentChanges":[{"textDocument":{"uri":"` + u + `","version":7},"edits":[{"range":` + lspRange + `,"newText":"Hi"}]}]}}`},
		{"a file not open", tools.FileEdit{Path: "/work/sample/greet.go", Label: "l", Edits: []tools.TextEdit{{Range: rng, NewText: ""}}}, "",
			`{"label":"l","edit":{"documentChanges":[{"textDocument":{"uri":"` + u + `","version":null},"edits":[{"range":` + lspRange + `,"newText":""}]}]}}`},
		{"a new file to confirm", tools.FileEdit{Path: "/work/sample/greet.go", Create: true, Label: "agent: create greet.go",
			Edits: []tools.TextEdit{{NewText: "package main\n"}}}, "proposed by agent-lsp; accept or reject",
			`{"label":"agent: create greet.go","edit":{"documentChanges":[` +
				`{"kind":"create","uri":"` + u + `","options":{"overwrite":false,"ignoreIfExists":false},"annotationId":"agent-lsp.review"},` +
				`{"textDocument":{"uri":"` + u + `","version":null},"edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"newText":"package main\n","annotationId":"agent-lsp.review"}]}],` +
				`"changeAnnotations":{"agent-lsp.review":{"label":"agent: create greet.go","needsConfirmation":true,"description":"proposed by agent-lsp; accept or reject"}}}}`},
	}
	var c lspCodec
	for _, tc := range cases {
		params := (&editor{}).workspaceEdit(tc.fe, tc.why)
		b, err := c.Marshal(params)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sameJSON(t, tc.name, b, tc.want)
		var back protocol.ApplyWorkspaceEditParams
		if err := c.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: decoding it back: %v", tc.name, err)
		}
		again, _ := c.Marshal(&back)
		if !bytes.Equal(again, b) {
			t.Errorf("%s: does not round-trip:\n%s\n%s", tc.name, b, again)
		}
	}
}

// initialize's answer and the progress values say what the hand-typed maps
// said.
func TestInitializeResultAndProgressOnTheWire(t *testing.T) {
	var c lspCodec
	b, err := c.Marshal(initializeResult(workspace.UTF8))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cmd := range Commands {
		names = append(names, `"`+cmd.Name+`"`)
	}
	want := `{"capabilities":{"positionEncoding":"utf-8","textDocumentSync":{"openClose":true,"change":2,"save":{"includeText":false}},` +
		`"executeCommandProvider":{"commands":[` + join(names) + `],"workDoneProgress":true},` +
		`"workspace":{"workspaceFolders":{"supported":true,"changeNotifications":true}}},"serverInfo":{"name":"agent-lsp","version":"` + Version + `"}}`
	sameJSON(t, "initialize", b, want)
	for _, tc := range []struct {
		value protocol.LSPAny
		want  string
	}{
		{progressBegin("agent: run"), `{"kind":"begin","title":"agent: run","cancellable":true}`},
		{progressReport("read_file greet.go"), `{"kind":"report","message":"read_file greet.go"}`},
		{progressEnd(""), `{"kind":"end"}`},
		{progressEnd("status: done"), `{"kind":"end","message":"status: done"}`},
	} {
		sameJSON(t, "progress", tc.value, tc.want)
	}
}

func join(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}

// What editors send decodes into the library's types as the server reads
// them: both kinds of content change, tokens and request IDs of either
// kind, Neovim 0.7's empty removed folder, the experimental capabilities.
func TestClientParamsDecode(t *testing.T) {
	ch, err := decode[protocol.DidChangeTextDocumentParams]("textDocument/didChange", json.RawMessage(
		`{"textDocument":{"uri":"file:///a.go","version":3},"contentChanges":[{"range":{"start":{"line":0,"character":1},"end":{"line":0,"character":2}},"rangeLength":1,"text":"x"},{"text":"whole"}]}`))
	if err != nil || len(ch.ContentChanges) != 2 {
		t.Fatalf("%+v, %v", ch, err)
	}
	if p, ok := ch.ContentChanges[0].(*protocol.TextDocumentContentChangePartial); !ok || p.Range.End.Character != 2 {
		t.Errorf("the first change is %#v, want a partial one", ch.ContentChanges[0])
	}
	if w, ok := ch.ContentChanges[1].(*protocol.TextDocumentContentChangeWholeDocument); !ok || w.Text != "whole" {
		t.Errorf("the second change is %#v, want the whole document", ch.ContentChanges[1])
	}
	for raw, want := range map[string]protocol.ProgressToken{`"tok"`: protocol.String("tok"), `7`: protocol.Integer(7), `null`: nil} {
		p, err := decode[protocol.ExecuteCommandParams]("workspace/executeCommand", json.RawMessage(`{"command":"agent.run","workDoneToken":`+raw+`}`))
		if err != nil || p.WorkDoneToken != want {
			t.Errorf("workDoneToken %s: %#v, %v", raw, p.WorkDoneToken, err)
		}
	}
	if _, err := decode[protocol.ExecuteCommandParams]("workspace/executeCommand", json.RawMessage(`{"command":"agent.run","workDoneToken":{}}`)); err == nil {
		t.Error("an object as workDoneToken is accepted")
	}
	f, err := decode[protocol.DidChangeWorkspaceFoldersParams]("workspace/didChangeWorkspaceFolders", json.RawMessage(`{"event":{"added":[],"removed":[{}]}}`))
	if err != nil || len(f.Event.Removed) != 1 || f.Event.Removed[0].URI != "" {
		t.Errorf("Neovim 0.7's folder change: %+v, %v", f, err)
	}
	ip, err := decodeInitialize(json.RawMessage(`{"processId":12,"rootPath":"/work/sample","capabilities":{"general":{"positionEncodings":["utf-16","utf-8"]},` +
		`"window":{"workDoneProgress":true},"experimental":{"saveDocuments":true,"other":1}},"initializationOptions":{"edits":"review"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !ip.experimental.SaveDocuments || !ip.progress() || ip.encoding() != workspace.UTF8 || *ip.ProcessID != 12 || string(ip.InitializationOptions) != `{"edits":"review"}` {
		t.Errorf("initialize: %+v", ip)
	}
	if fs := ip.folders(); len(fs) != 1 || fs[0].Path != "/work/sample" {
		t.Errorf("the root path as the folder: %+v", fs)
	}
	if _, err := decodeInitialize(json.RawMessage(`{"capabilities":{"experimental":{"saveDocuments":"yes"}}}`)); err == nil {
		t.Error("saveDocuments of the wrong type is accepted")
	}
	if ip, err := decodeInitialize(json.RawMessage(`{"processId":null,"rootUri":null,"capabilities":{}}`)); err != nil || ip.progress() || ip.encoding() != workspace.UTF16 || len(ip.folders()) != 0 {
		t.Errorf("a bare initialize: %+v, %v", ip, err)
	}
}

// BenchmarkProgressEncoding is the cost of one $/progress report's params
// on the wire (a run sends one or two per tool turn): the library's types
// through the server's codec, against the reference, a hand-typed struct
// through jsonrpc2's default codec (what the server sent before issue 52).
// ratio is the first over the second.
func BenchmarkProgressEncoding(b *testing.B) {
	type handTyped struct {
		Token json.RawMessage `json:"token"`
		Value struct {
			Kind    string `json:"kind"`
			Message string `json:"message,omitempty"`
		} `json:"value"`
	}
	var ref handTyped
	ref.Token, ref.Value.Kind, ref.Value.Message = json.RawMessage(`"agent-lsp-1"`), "report", "read_file greet.go"
	measure := func(encode func() error) float64 {
		const n = 20000
		start := time.Now()
		for range n {
			if err := encode(); err != nil {
				b.Fatal(err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / n
	}
	var ours, theirs float64
	for b.Loop() {
		ours += measure(func() error {
			_, err := lspCodec{}.Marshal(&protocol.ProgressParams{Token: protocol.String("agent-lsp-1"), Value: progressReport("read_file greet.go")})
			return err
		})
		theirs += measure(func() error { _, err := jsonrpc2.DefaultCodec.Marshal(ref); return err })
	}
	b.ReportMetric(ours/float64(b.N), "ns/progress")
	b.ReportMetric(theirs/float64(b.N), "reference-ns/progress")
	b.ReportMetric(ours/theirs, "ratio")
}

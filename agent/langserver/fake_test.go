package langserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// fakeEnv names the case of testdata/hostile/language-servers.json the
// test binary plays when it is started as a language server.
const fakeEnv = "AGENT_LSP_FAKE_LANGSERVER"

// fakeCase is one case of the fixture.
type fakeCase struct {
	Initialize      string         `json:"initialize"`      // "answer" or "never"
	AfterInitialize string         `json:"afterInitialize"` // "stop reading"
	DidOpen         []fakeAction   `json:"didOpen"`
	Definition      []fakeLocation `json:"definition"`
}

type fakeAction struct {
	Exit    *int `json:"exit"`
	Publish *struct {
		URI   string `json:"uri"`
		Count int    `json:"count"`
	} `json:"publish"`
	PublishFiles int `json:"publishFiles"`
	Frame        int `json:"frame"`
}

type fakeLocation struct {
	URI  string `json:"uri"`
	Line int    `json:"line"`
}

func fakeCases() (map[string]fakeCase, error) {
	b, err := os.ReadFile(filepath.Join(fakeFixtureDir, "language-servers.json"))
	if err != nil {
		return nil, err
	}
	var f struct {
		Cases map[string]fakeCase `json:"cases"`
	}
	return f.Cases, json.Unmarshal(b, &f)
}

// fakeFixtureDir is where the fixture is, found from the test binary's
// working directory (the package's folder) or, for the fake server whose
// working directory is a project, from the environment.
var fakeFixtureDir = func() string {
	if d := os.Getenv("AGENT_LSP_FAKE_FIXTURES"); d != "" {
		return d
	}
	d, _ := filepath.Abs("../../testdata/hostile")
	return d
}()

// runFake plays a case as a language server on stdin and stdout.
func runFake(name string) int {
	cases, err := fakeCases()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake language server:", err)
		return 2
	}
	c, ok := cases[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "fake language server: no case", name)
		return 2
	}
	wd, _ := os.Getwd()
	root := "file://" + wd
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(out, "Content-Length: %d\r\n\r\n%s", len(b), b)
		out.Flush()
	}
	subst := func(s, doc string) string {
		return strings.NewReplacer("$ROOT", root, "$DOC", doc).Replace(s)
	}
	for {
		body, err := readFrame(in)
		if err != nil {
			return 0
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TextDocument struct {
					URI string `json:"uri"`
				} `json:"textDocument"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result}) }
		switch msg.Method {
		case "initialize":
			if c.Initialize == "never" {
				continue
			}
			reply(map[string]any{"capabilities": map[string]any{"textDocumentSync": 1, "definitionProvider": true, "referencesProvider": true,
				"hoverProvider": true, "documentSymbolProvider": true, "workspaceSymbolProvider": true, "implementationProvider": true}})
			if c.AfterInitialize == "stop reading" {
				time.Sleep(time.Hour)
			}
		case "textDocument/didOpen":
			if code, exited := didOpen(c, msg.Params.TextDocument.URI, root, out, send); exited {
				return code
			}
		case "textDocument/definition", "textDocument/references", "textDocument/implementation":
			var locs []map[string]any
			for _, l := range c.Definition {
				locs = append(locs, map[string]any{"uri": subst(l.URI, msg.Params.TextDocument.URI),
					"range": map[string]any{"start": map[string]int{"line": l.Line, "character": 0}, "end": map[string]int{"line": l.Line, "character": 1}}})
			}
			reply(locs)
		case "exit":
			return 0
		default:
			if len(msg.ID) > 0 {
				reply(nil)
			}
		}
	}
}

// didOpen plays the case's actions on a didOpen of doc; exited says the
// server exits with code.
func didOpen(c fakeCase, doc, root string, out *bufio.Writer, send func(any)) (code int, exited bool) {
	for _, a := range c.DidOpen {
		switch {
		case a.Exit != nil:
			out.Flush()
			return *a.Exit, true
		case a.Publish != nil:
			diags := make([]map[string]any, a.Publish.Count)
			for i := range diags {
				diags[i] = fakeDiagnostic(i)
			}
			send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
				"params": map[string]any{"uri": strings.NewReplacer("$ROOT", root, "$DOC", doc).Replace(a.Publish.URI), "diagnostics": diags}})
		case a.PublishFiles > 0:
			for i := range a.PublishFiles {
				send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
					"params": map[string]any{"uri": root + "/flood/f" + strconv.Itoa(i) + ".go", "diagnostics": []any{fakeDiagnostic(i)}}})
			}
		case a.Frame > 0:
			fmt.Fprintf(out, "Content-Length: %d\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"", a.Frame)
			out.Flush()
			time.Sleep(time.Hour)
		}
	}
	return 0, false
}

func fakeDiagnostic(i int) map[string]any {
	return map[string]any{"range": map[string]any{"start": map[string]int{"line": i % 50, "character": 0}, "end": map[string]int{"line": i % 50, "character": 1}},
		"severity": 1, "source": "fake", "message": "flood " + strconv.Itoa(i)}
}

func readFrame(in *bufio.Reader) ([]byte, error) {
	n := -1
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length:"); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if n < 0 {
		return nil, io.ErrUnexpectedEOF
	}
	body := make([]byte, n)
	_, err := io.ReadFull(in, body)
	return body, err
}

// Command testserver is a small Model Context Protocol server for the tests
// of agent/mcp, built with the same Go SDK as the client. It speaks stdio by
// default; -http ADDR serves streamable HTTP instead and prints
// "listening on http://HOST:PORT/" on its standard output once it accepts
// connections, and logs the first X-Test header it sees on stderr.
//
// Tools: echo (returns its text), peek (returns its text, marked readOnlyHint), fail (an error result), slow (sleeps its
// seconds, printing "slow: started" on stderr, and "slow: cancelled" when the
// call is cancelled), crash (exits the process mid-call), env (the value of a
// named variable), cwd (the working directory), add_tool (registers a new tool, which notifies
// tools/list_changed) and image (an image content).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("testserver: ")

	server := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	addTools(server)
	log.Printf("started, pid %d", os.Getpid())

	if *addr == "" {
		if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatalf("run: %v", err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	fmt.Printf("listening on http://%s/\n", ln.Addr())
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var once sync.Once
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("X-Test"); v != "" {
			once.Do(func() { log.Printf("header X-Test: %s", v) })
		}
		handler.ServeHTTP(w, r)
	})))
}

// schema returns an object schema with the given string or number properties.
func schema(props map[string]string) map[string]any {
	p := map[string]any{}
	for name, typ := range props {
		p[name] = map[string]any{"type": typ}
	}
	return map[string]any{"type": "object", "properties": p}
}

// args decodes a call's arguments.
func args(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func addTools(server *mcp.Server) {
	server.AddTool(&mcp.Tool{Name: "echo", Description: "Returns its text.", InputSchema: schema(map[string]string{"text": "string"})},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s, _ := args(req)["text"].(string)
			return text(s), nil
		})
	server.AddTool(&mcp.Tool{Name: "peek", Description: "Returns its text; changes nothing.", InputSchema: schema(map[string]string{"text": "string"}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s, _ := args(req)["text"].(string)
			return text("peeked: " + s), nil
		})
	server.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: schema(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("failed on purpose")
			r.IsError = true
			return r, nil
		})
	server.AddTool(&mcp.Tool{Name: "slow", Description: "Sleeps its seconds.", InputSchema: schema(map[string]string{"seconds": "number"})},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			secs, _ := args(req)["seconds"].(float64)
			log.Printf("slow: started")
			select {
			case <-time.After(time.Duration(secs * float64(time.Second))):
				return text("slept"), nil
			case <-ctx.Done():
				log.Printf("slow: cancelled")
				return nil, ctx.Err()
			}
		})
	server.AddTool(&mcp.Tool{Name: "crash", Description: "Exits the process mid-call.", InputSchema: schema(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			log.Printf("crashing")
			os.Exit(3)
			return nil, nil
		})
	server.AddTool(&mcp.Tool{Name: "env", Description: "Returns the value of a variable.", InputSchema: schema(map[string]string{"name": "string"})},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, _ := args(req)["name"].(string)
			v, ok := os.LookupEnv(name)
			if !ok {
				return text(name + " is not set"), nil
			}
			return text(name + "=" + v), nil
		})
	server.AddTool(&mcp.Tool{Name: "cwd", Description: "Returns the working directory.", InputSchema: schema(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			dir, err := os.Getwd()
			if err != nil {
				return nil, err
			}
			return text(dir), nil
		})
	server.AddTool(&mcp.Tool{Name: "add_tool", Description: "Registers a new tool that echoes.", InputSchema: schema(map[string]string{"name": "string"})},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, _ := args(req)["name"].(string)
			server.AddTool(&mcp.Tool{Name: name, Description: "Added at run time.", InputSchema: schema(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("I am " + name), nil
				})
			return text("added " + name), nil
		})
	server.AddTool(&mcp.Tool{Name: "image", Description: "Returns an image.", InputSchema: schema(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a picture:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
			}}, nil
		})
}

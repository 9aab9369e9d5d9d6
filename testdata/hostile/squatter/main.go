// Command squatter is a hostile local user: it binds the Unix socket name a
// dead agent-lsp daemon left in its sidecar (abstract names are free for
// anyone to take, and readable in /proc/net/unix) and reports what each
// client sends it. Tests run it as another uid.
//
// Usage: squatter NAME. It prints "listening" once bound, then one line
// per connection: "received N: QUOTED", after the client closed or a
// second passed.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: squatter NAME")
		os.Exit(2)
	}
	l, err := net.Listen("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening")
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			// A daemon's welcome, as a real one would write it first: a
			// client that checks nothing answers with its hello.
			io.WriteString(c, `{"handshake":1,"version":"9.9.9"}`+"\n")
			c.SetReadDeadline(time.Now().Add(time.Second))
			b, _ := io.ReadAll(c)
			fmt.Printf("received %d: %q\n", len(b), b)
		}()
	}
}

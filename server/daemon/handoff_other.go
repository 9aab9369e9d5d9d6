//go:build !linux

package daemon

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
)

// handoffs says that this daemon takes an editor's streams from its forwarder.
const handoffs = false

// handoffReady is false: only Linux passes the editor's streams to the
// daemon; elsewhere the forwarder copies them.
func handoffReady(io.Reader, io.Writer) (*os.File, *os.File, bool) { return nil, nil, false }

func sendStdio(net.Conn, *os.File, *os.File, []byte) error {
	return errors.New("handoff: not supported here")
}

func receiveStdio(net.Conn, *bufio.Reader) (io.ReadCloser, io.WriteCloser, error) {
	return nil, nil, errors.New("handoff: not supported here")
}

func keepModes(...*os.File) func() { return func() {} }

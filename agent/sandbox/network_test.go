//go:build unix

package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// listeners the test starts on loopback (the only places a test sends to):
// TCP, UDP, a pathname Unix socket outside the project (standing in for the
// editor's, the SSH agent's, /run/docker.sock) and an abstract one named as
// the daemon names its own. Each counts what reached it.
type listeners struct {
	tcp, udp, unix, abstract atomic.Int32
	tcpPort, udpPort         int
	unixPath, abstractName   string
}

func listen(t *testing.T, dir string) *listeners {
	l := &listeners{unixPath: filepath.Join(dir, "agent.sock"),
		abstractName: fmt.Sprintf("agent-lsp-%d-%d%s", os.Getuid(), os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))}
	accept := func(ln net.Listener, n *atomic.Int32) {
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				n.Add(1)
				c.Close()
			}
		}()
	}
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.tcpPort = tcp.Addr().(*net.TCPAddr).Port
	accept(tcp, &l.tcp)
	for _, u := range []struct {
		addr string
		n    *atomic.Int32
	}{{l.unixPath, &l.unix}, {"@" + l.abstractName, &l.abstract}} {
		ln, err := net.Listen("unix", u.addr)
		if err != nil {
			t.Fatal(err)
		}
		accept(ln, u.n)
	}
	os.Chmod(l.unixPath, 0o777)
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	l.udpPort = udp.LocalAddr().(*net.UDPAddr).Port
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			l.udp.Add(1)
		}
	}()
	return l
}

// Network and IPC, issue 39: with the project's network off a command
// reaches none of the test's listeners over TCP or UDP, opens no raw
// socket, reaches neither a pathname Unix socket outside the project nor
// the daemon's kind of abstract socket, and can neither signal nor trace
// the server (this process) nor read its environment. Where a mechanism
// cannot stop one (snapshot: UDP and pathname sockets at Landlock ABI 7),
// the report says so, and the test checks that it does reach: the report
// is not allowed to claim more than holds.
func TestNetworkAndIPC(t *testing.T) {
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			root, temp, outside := layout(t)
			l := listen(t, outside)
			p := policy(iso, root, temp)
			report := s.Describe(p)
			notEnforced := strings.Join(report.NotEnforced, "\n")
			py := func(code string) string { return `python3 -c "import socket, ctypes, os; ` + code + `"` }
			pid := os.Getpid()
			for _, c := range []struct {
				name, line string
				reached    *atomic.Int32
				open       string // what the report must list as not enforced when it does reach
			}{
				{"tcp", fmt.Sprintf("bash -c 'echo hi > /dev/tcp/127.0.0.1/%d'", l.tcpPort), &l.tcp, "TCP (needs"},
				{"udp", py(fmt.Sprintf("s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b'x', ('127.0.0.1', %d)) for i in range(3)]", l.udpPort)), &l.udp, "UDP (needs"},
				{"raw", py("socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)"), nil, ""},
				{"pathname socket", py(fmt.Sprintf("s = socket.socket(socket.AF_UNIX); s.connect('%s')", l.unixPath)), &l.unix, "pathname Unix sockets (needs"},
				{"abstract socket", py(fmt.Sprintf(`s = socket.socket(socket.AF_UNIX); s.connect('\0%s')`, l.abstractName)), &l.abstract, ""},
				{"signal", fmt.Sprintf("kill -0 %d", pid), nil, ""},
				{"ptrace", py(fmt.Sprintf("libc = ctypes.CDLL(None, use_errno=True); assert libc.ptrace(16, %d, 0, 0) == 0, os.strerror(ctypes.get_errno())", pid)), nil, ""},
				{"environ", fmt.Sprintf("cat /proc/%d/environ", pid), nil, ""},
			} {
				out, code, _ := run(t, s, p, c.line)
				time.Sleep(100 * time.Millisecond) // a datagram in flight
				got := code == 0 && (c.reached == nil || c.reached.Load() > 0)
				switch {
				case got && c.open != "" && strings.Contains(notEnforced, c.open):
					t.Logf("%s: reached, and the report says it is not enforced", c.name)
				case got:
					t.Errorf("%s: a sandboxed command got through: %s", c.name, out)
				case c.open != "" && strings.Contains(notEnforced, c.open) && c.reached.Load() == 0 && c.name != "tcp":
					t.Errorf("%s: the report says it is not enforced, yet it was stopped: the report is wrong (%s)", c.name, out)
				}
				if strings.Contains(out, "PATH=") {
					t.Errorf("%s: the server's environment leaked: %s", c.name, out)
				}
			}
			// The same listeners are reached unsandboxed: the test can fail.
			for _, line := range []string{fmt.Sprintf("bash -c 'echo hi > /dev/tcp/127.0.0.1/%d'", l.tcpPort),
				py(fmt.Sprintf("s = socket.socket(socket.AF_UNIX); s.connect('%s')", l.unixPath)),
				py(fmt.Sprintf(`s = socket.socket(socket.AF_UNIX); s.connect('\0%s')`, l.abstractName))} {
				if out, code, _ := run(t, s, Policy{Mode: Off, Root: root}, line); code != 0 {
					t.Fatalf("unsandboxed %q failed: %s", line, out)
				}
			}
		})
	})
}

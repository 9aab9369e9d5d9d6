package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// MaxMessageSize bounds one incoming JSON-RPC message.
const MaxMessageSize = 32 << 20

// maxHeaderLine bounds one header line; a longer one is a bad header.
const maxHeaderLine = 8 << 10

// guardedStream reads LSP base-protocol frames itself and writes through
// jsonrpc2's header stream, so that bad input never closes the connection
// (go.lsp.dev/jsonrpc2 v1 fails it on any framing or decoding error):
//   - a header without a valid Content-Length is answered with ParseError and
//     the reader resynchronizes at the next "Content-Length:";
//   - a Content-Length over the limit is refused before the body is read
//     (InvalidRequest, with the id when the body's start shows one), and the
//     body is discarded in chunks;
//   - invalid JSON (ParseError) and objects that are not JSON-RPC 2.0
//     messages (InvalidRequest) are answered, with the id when one can be read;
//   - a request whose id is already in flight is refused (InvalidRequest).
//
// Frames written while the stream is corked are held and written together
// when it is uncorked: a burst of notifications costs one write.
type guardedStream struct {
	inner jsonrpc2.Stream // writes frames, through sink
	in    *bufio.Reader   // read only by Read, on the connection's read loop
	out   io.Writer       // the connection's writer; written only by sink and uncork, under wmu
	limit int
	logf  func(format string, args ...any)

	wmu       sync.Mutex   // serializes writes (rejections from the read loop, the conn's others); guards corks, held, broken and rejecting
	corks     int          // corks not uncorked yet
	held      bytes.Buffer // frames written while corked
	broken    error        // the failure of a write of held frames: every later write fails with it
	rejecting bool         // the frame being written answers a rejected frame, not a request in flight

	pmu     sync.Mutex          // guards pending and idle
	pending map[string]struct{} // ids of requests read and not answered yet
	idle    chan struct{}       // closed once nothing is pending; nil: none waits

	ended   chan struct{} // closed when reading ends: the client is gone (or stopped sending)
	endOnce sync.Once

	// skipped is a bad header block that a later Content-Length line ended
	// (readHeaders): Read answers it, then delivers the frame that line
	// began. Owned by the read loop.
	skipped *frameError
}

func newGuardedStream(rw io.ReadWriteCloser, logf func(string, ...any)) *guardedStream {
	s := &guardedStream{in: bufio.NewReaderSize(rw, 64<<10), out: rw,
		limit: MaxMessageSize, logf: logf, pending: map[string]struct{}{}, ended: make(chan struct{})}
	s.inner = jsonrpc2.NewHeaderStream(struct {
		io.Reader
		io.Writer
		io.Closer
	}{rw, writerFunc(s.sink), rw})
	return s
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// maxHeld bounds the frames held while corked: past it they are written.
const maxHeld = 64 << 10

// sink writes one frame for inner, which is called only under wmu: it is
// held while the stream is corked.
func (s *guardedStream) sink(p []byte) (int, error) {
	if s.broken != nil {
		return 0, s.broken
	}
	if !s.rejecting {
		s.answer(p)
	}
	if s.corks == 0 {
		return s.out.Write(p)
	}
	s.held.Write(p)
	if s.held.Len() >= maxHeld {
		return len(p), s.writeHeld()
	}
	return len(p), nil
}

// writeHeld writes the frames held; wmu must be held. A failure is the
// connection's (a closed pipe), which jsonrpc2 did not see: every later
// write returns it, and jsonrpc2 then treats the writer as broken (it
// cancels the calls in progress, whose answers cannot be delivered).
func (s *guardedStream) writeHeld() error {
	_, err := s.out.Write(s.held.Bytes())
	s.held.Reset()
	if err != nil && s.broken == nil {
		s.broken = fmt.Errorf("write to the client: %w", err)
	}
	return err
}

// cork holds the frames written from now on, by any goroutine, until an
// uncork. Between the two its caller must not wait for the client: a
// request held is answered only once it is written.
func (s *guardedStream) cork() {
	s.wmu.Lock()
	s.corks++
	s.wmu.Unlock()
}

// uncork ends a cork and writes what was held, at once, even while another
// cork lasts (two runs' reporters): a frame is held no longer than the
// burst it came in.
func (s *guardedStream) uncork() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.corks == 0 {
		panic("agent-lsp: uncork without cork")
	}
	s.corks--
	if s.held.Len() == 0 {
		return nil
	}
	return s.writeHeld()
}

// Ended is closed when the stream can be read no more. The connection's
// done channel waits for requests in flight (a run) to end; this does not,
// so that the server can cancel them: their client is gone.
func (s *guardedStream) Ended() <-chan struct{} { return s.ended }

// frameError is a frame that cannot be delivered; the stream answers it,
// unless it reads as a notification (which is never answered).
type frameError struct {
	code         jsonrpc2.Code
	msg          string
	id           jsonrpc2.ID // the id the frame's body shows, if any
	notification bool
	resync       bool // a bad header: skip to the next Content-Length after answering
}

// Read implements jsonrpc2.Stream.
func (s *guardedStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		body, n, err := s.readFrame()
		if s.skipped != nil {
			s.reject(ctx, s.skipped)
			s.skipped = nil
		}
		var fe *frameError
		if errors.As(err, &fe) {
			s.reject(ctx, fe) // answered at once: the next frame may wait for the answer
			if fe.resync {
				if err := s.resync(); err != nil {
					s.endOnce.Do(func() { close(s.ended) })
					return nil, n, err
				}
			}
			continue
		}
		if err != nil {
			s.endOnce.Do(func() { close(s.ended) })
			return nil, n, err
		}
		msg, fe := s.decode(body)
		if fe != nil {
			s.reject(ctx, fe)
			continue
		}
		return msg, n, nil
	}
}

// readFrame reads the next frame's header block and body.
func (s *guardedStream) readFrame() ([]byte, int64, error) {
	length, hlen, err := s.readHeaders()
	if err != nil {
		return nil, int64(hlen), err
	}
	if length > s.limit {
		head := make([]byte, min(length, 1<<10))
		io.ReadFull(s.in, head)
		if _, err := io.CopyN(io.Discard, s.in, int64(length-len(head))); err != nil {
			return nil, int64(hlen), err
		}
		return nil, int64(hlen + length), &frameError{code: jsonrpc2.InvalidRequest, id: sniffID(head),
			msg: fmt.Sprintf("message of %d bytes is over the %d-byte limit", length, s.limit)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.in, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, int64(hlen), err
	}
	return body, int64(hlen + length), nil
}

// readHeaders reads one header block and returns its Content-Length. A block
// without a valid one is a frameError (ParseError) asking Read to skip to
// the next "Content-Length:" once it has answered. A Content-Length line
// after junk or a bad line starts a new block: the bad one is left in
// s.skipped for Read to answer, and the frame the line begins is read.
func (s *guardedStream) readHeaders() (length, n int, err error) {
	length = -1
	bad := ""
	for {
		line, err := s.headerLine()
		n += len(line)
		if err != nil {
			return 0, n, err
		}
		line = strings.TrimRight(line, "\r\n")
		if i := indexFold([]byte(line), contentLength); i > 0 {
			s.logf("dropped %d bytes of junk before a Content-Length header", i)
			line = line[i:] // junk with no newline before the next frame's header
			length = -1     // whatever came before the junk was not this frame's
		}
		if bad != "" && indexFold([]byte(line), contentLength) == 0 {
			s.skipped = &frameError{code: jsonrpc2.ParseError, msg: bad + "; read on from the Content-Length that followed"}
			bad, length = "", -1
		}
		if line == "" {
			if length < 0 && bad == "" && n <= 2 {
				continue // blank lines between frames
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			bad = fmt.Sprintf("invalid header line %q", clipText(line, 80))
			continue
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			v, perr := strconv.Atoi(strings.TrimSpace(value))
			if perr != nil || v <= 0 {
				bad = fmt.Sprintf("invalid Content-Length %q", clipText(strings.TrimSpace(value), 40))
				continue
			}
			if length >= 0 && v != length {
				bad = fmt.Sprintf("conflicting Content-Length headers %d and %d", length, v)
				continue
			}
			length = v
		}
	}
	if bad == "" && length < 0 {
		bad = "a header block without Content-Length"
	}
	if bad != "" {
		return 0, n, &frameError{code: jsonrpc2.ParseError, msg: bad + "; skipped to the next Content-Length", resync: true}
	}
	return length, n, nil
}

// headerLine reads one header line of at most maxHeaderLine bytes; a longer
// one is cut (its rest read and dropped) and comes back without its newline,
// so it never parses as a header.
func (s *guardedStream) headerLine() (string, error) {
	line, err := s.in.ReadSlice('\n')
	if err == nil || err != bufio.ErrBufferFull {
		return string(line), err
	}
	out := string(line[:min(len(line), maxHeaderLine)])
	for err == bufio.ErrBufferFull {
		_, err = s.in.ReadSlice('\n')
	}
	return strings.TrimRight(out, "\n") + " (cut)", err
}

var contentLength = []byte("content-length:")

// indexFold is the index of the lower-case ASCII needle in b, ignoring ASCII
// case only (bytes.ToLower would rewrite invalid UTF-8 and shift offsets).
func indexFold(b, needle []byte) int {
	for i := 0; i+len(needle) <= len(b); i++ {
		j := 0
		for ; j < len(needle); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != needle[j] {
				break
			}
		}
		if j == len(needle) {
			return i
		}
	}
	return -1
}

// resync discards input up to (not including) the next "Content-Length:",
// matched case-insensitively anywhere, even inside a body that had no valid
// length: the next frame starts there. It scans the reader's buffer in place.
func (s *guardedStream) resync() error {
	for {
		b, err := s.in.Peek(max(s.in.Buffered(), len(contentLength)))
		if i := indexFold(b, contentLength); i >= 0 {
			s.in.Discard(i)
			return nil
		}
		if err != nil {
			return err
		}
		s.in.Discard(len(b) - len(contentLength) + 1) // keep what may begin a match
	}
}

// decode turns a frame body into a message, or says why it is refused.
func (s *guardedStream) decode(body []byte) (jsonrpc2.Message, *frameError) {
	if !json.Valid(body) {
		return nil, &frameError{code: jsonrpc2.ParseError, msg: "invalid JSON", id: sniffID(body)}
	}
	view, err := jsonrpc2.NewFrameView(body)
	if err == nil {
		mv := view.MessageView()
		var msg jsonrpc2.Message
		if msg, err = mv.Owned(); err == nil {
			return s.track(msg)
		}
	}
	return nil, &frameError{code: jsonrpc2.InvalidRequest, msg: "not a JSON-RPC 2.0 message: " + err.Error(), id: sniffID(body),
		notification: isNotification(body)}
}

func (e *frameError) Error() string { return e.msg }

// isNotification reports whether a body reads as an object with a method and no id.
func isNotification(body []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	_, method := probe["method"]
	_, id := probe["id"]
	return method && !id
}

// idKey names an id in the table of requests in flight (1 and "1" differ).
func idKey(id jsonrpc2.ID) string {
	if n, ok := id.Number(); ok {
		return "n" + strconv.FormatInt(n, 10)
	}
	str, _ := id.StringValue()
	return "s" + str
}

// track records a request's id as in flight, refusing an id that already is.
func (s *guardedStream) track(msg jsonrpc2.Message) (jsonrpc2.Message, *frameError) {
	if call, ok := msg.(*jsonrpc2.Call); ok {
		key := idKey(call.ID())
		s.pmu.Lock()
		_, dup := s.pending[key]
		if !dup {
			s.pending[key] = struct{}{}
		}
		s.pmu.Unlock()
		if dup {
			return nil, &frameError{code: jsonrpc2.InvalidRequest, id: call.ID(),
				msg: fmt.Sprintf("request id %v is already in flight; use a new id for each request", call.ID())}
		}
	}
	return msg, nil
}

var idField = regexp.MustCompile(`"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")`)

// sniffID finds a request id in the start of a body that could not be
// decoded, so the error can be matched to the request; notifications and
// bodies without one get the null id.
func sniffID(body []byte) jsonrpc2.ID {
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	raw := []byte(nil)
	if json.Unmarshal(body, &probe) == nil {
		raw = probe.ID
	} else if m := idField.FindSubmatch(body[:min(len(body), 1<<10)]); m != nil {
		raw = m[1]
	}
	var num int64
	var str string
	switch {
	case json.Unmarshal(raw, &num) == nil:
		return jsonrpc2.NewNumberID(num)
	case json.Unmarshal(raw, &str) == nil:
		return jsonrpc2.NewStringID(str)
	}
	return jsonrpc2.ID{}
}

// reject answers a frame that cannot be delivered (not through Write: an
// answer to a duplicate id must not end the original request's time in
// flight). A notification gets no answer.
func (s *guardedStream) reject(ctx context.Context, fe *frameError) {
	s.logf("rejected incoming message: %s", fe.msg)
	if fe.notification {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.rejecting = true
	defer func() { s.rejecting = false }()
	s.inner.Write(ctx, jsonrpc2.NewResponse(fe.id, nil, jsonrpc2.NewError(fe.code, fe.msg)))
}

// Write implements jsonrpc2.Stream.
func (s *guardedStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.inner.Write(ctx, msg)
}

// answer ends the time in flight of the request a frame answers, if it is a
// response; wmu must be held (the frame is written in the same hold, so an
// answered waiter that then takes wmu finds it written or held). The id is
// read from the frame: jsonrpc2 hands the stream its own unexported
// response type, whose id it does not expose. The request leaves pending
// before its answer is written, as the client may reuse the id once it has
// the answer.
func (s *guardedStream) answer(frame []byte) {
	key, ok := responseKey(frame)
	if !ok {
		return
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	delete(s.pending, key)
	if s.idle != nil && len(s.pending) == 0 {
		close(s.idle)
		s.idle = nil
	}
}

// responseKey returns the idKey of the request a frame answers, and false
// for any other frame (a call, a notification, a batch, a null id).
// jsonrpc2 writes a response as {"jsonrpc":"2.0","id":ID,... after the
// header; the id is decoded by jsonrpc2 itself, as the request's was (a
// string id keeps invalid UTF-8 as it came).
func responseKey(frame []byte) (string, bool) {
	const head = `{"jsonrpc":"2.0","id":`
	i := bytes.Index(frame, []byte("\r\n\r\n"))
	if i < 0 || !bytes.HasPrefix(frame[i+4:], []byte(head)) {
		return "", false
	}
	rest := frame[i+4+len(head):]
	end := 0
	if len(rest) > 0 && rest[0] == '"' {
		for end = 1; end < len(rest) && rest[end] != '"'; end++ {
			if rest[end] == '\\' {
				end++
			}
		}
		end++
	} else {
		for end < len(rest) && (rest[end] == '-' || '0' <= rest[end] && rest[end] <= '9') {
			end++
		}
	}
	if end == 0 || end > len(rest) {
		return "", false
	}
	msg, err := jsonrpc2.DecodeMessage(append(append([]byte(head), rest[:end]...), `,"result":null}`...))
	r, ok := msg.(*jsonrpc2.Response)
	if err != nil || !ok || !r.ID().IsValid() {
		return "", false
	}
	return idKey(r.ID()), true
}

// answered returns once every request read so far is answered, its answer
// written (the frames held by a cork are written now), or when ctx ends:
// exit waits for it, so that a client that sends exit without waiting for
// shutdown's answer still gets it.
func (s *guardedStream) answered(ctx context.Context) {
	s.pmu.Lock()
	var idle chan struct{}
	if len(s.pending) > 0 {
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		idle = s.idle
	}
	s.pmu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return
		}
	}
	// A write stuck on a client that does not read holds wmu: the wait for
	// it ends with ctx too.
	written := make(chan struct{})
	go func() {
		defer close(written)
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if s.held.Len() > 0 && s.broken == nil {
			s.writeHeld()
		}
	}()
	select {
	case <-written:
	case <-ctx.Done():
	}
}

// Close implements jsonrpc2.Stream.
func (s *guardedStream) Close() error { return s.inner.Close() }

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

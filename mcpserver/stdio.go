package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execgate/execgate"
)

// MaxFrameBytes is the longest line, its newline not counted, that the
// transport of [StdioTransport] reads as one JSON-RPC message: four times
// the gate's input cap ([execgate.MaxInputSize]), so that a tool call whose
// arguments are over that cap still reaches the gate and is refused with
// a ValidationError that names the limit, with room to spare for the
// message around the arguments.
const MaxFrameBytes = 4 * execgate.MaxInputSize

// maxSafeID bounds the integer ids the transport accepts: the SDK holds a
// numeric id as a float64 on its way in, which holds every integer up to
// 2^53-1 exactly and no larger one alone (2^53+1 reads as 2^53).
const maxSafeID = 1<<53 - 1

// readChunk is the size of the transport's read buffer: a line longer
// than this is read in pieces of at most this size.
const readChunk = 64 << 10

// StdioTransport returns an mcp.Transport that exchanges newline-delimited
// JSON-RPC messages with one client over r (what the client writes, such
// as os.Stdin) and w (what it reads, such as os.Stdout), as MCP's stdio
// transport does, and that keeps the session going whatever the client
// writes:
//
//   - A line that is not JSON (not UTF-8, a NUL byte, a syntax error) is
//     answered with a JSON-RPC parse error (-32700) whose id is null.
//   - A line of JSON that is not one valid JSON-RPC 2.0 message (a
//     number, a string, {}, a message without "jsonrpc": "2.0", a request
//     whose method is not a string or whose params are neither an object
//     nor an array, a request whose id is null, a boolean, an object or a
//     number that is not an integer of at most 2^53 in magnitude, a
//     response with neither or both of result and error, a repeated
//     member) is answered with an invalid request error (-32600) that
//     carries the message's id when it is a string or a number, and null
//     otherwise.
//   - A batch (a JSON array, [] included) is answered with one invalid
//     request error whose id is null, and none of its messages is
//     handled: MCP 2025-06-18 removed JSON-RPC batching, and this
//     transport does not accept batches in any protocol version.
//   - A line longer than MaxFrameBytes is read to its end in bounded
//     pieces and dropped, never held whole, and answered with an invalid
//     request error that carries the message's id when a string or number
//     id is found among its top-level members, and null otherwise.
//   - A line that holds only white space is skipped.
//
// Only valid messages are handed to the MCP session, so a bad line never
// ends the session and never cancels a call in progress. The answers to
// bad lines and the session's own messages are written one whole line at
// a time, never interleaved. A response the SDK writes without an id is
// written with "id": null, as JSON-RPC requires of every response. The
// session ends when r reports io.EOF (a last line without a newline is
// still read) or another error, or when writing to w fails.
//
// Closing the connection closes r if it is an io.Closer, so that a read
// waiting on it can end; w is never closed. When closing r ends a read in
// progress (an *io.PipeReader, or a reader that takes read deadlines: an
// *os.File in Go's poller, such as a pipe set non-blocking, or a
// net.Conn), the session's own reader reads r, one line per message it
// asks for; any other r (a file read with blocking system calls, such as
// a blocking os.Stdin) is read by a goroutine of the transport's, which
// hands each message on, so that closing the connection ends the session
// whatever r does. The returned Transport connects once.
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	return &lineTransport{r: r, w: w}
}

// StdioTransport returns a transport like the package's [StdioTransport]
// that also records each line it refuses in the audit trail of the
// [Server]'s Executor, with execgate.Executor.RecordRefusal: an Event with
// Op "request", Route "mcp stdio", Error "request", the Server's
// principal, and the JSON-RPC error code as the reason. Nothing of the
// line itself is recorded.
func (s *Server) StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	return &lineTransport{r: r, w: w, onBad: func(code int, long bool) {
		reason := "invalid request"
		switch {
		case long:
			reason = "line too long"
		case code == jsonrpc.CodeParseError:
			reason = "parse error"
		}
		ctx := execgate.WithPrincipal(context.Background(), s.opts.Principal)
		ref := execgate.Refusal{Route: stdioRoute, Kind: execgate.ErrorKindRequest, Reason: fmt.Sprintf("%s (JSON-RPC %d)", reason, code)}
		if err := s.x.RecordRefusal(ctx, ref); err != nil {
			s.opts.Logger.Error("mcpserver: a refused line could not be recorded in the audit trail", "error", err)
		}
	}}
}

// stdioRoute is the Route of the audit record of a refused stdio line.
const stdioRoute = "mcp stdio"

// lineTransport is the Transport of [StdioTransport].
type lineTransport struct {
	r         io.Reader
	w         io.Writer
	onBad     func(code int, long bool) // nil: refused lines are not reported
	connected atomic.Bool
}

// Connect implements mcp.Transport. It starts reading r.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.connected.Swap(true) {
		return nil, errors.New("mcpserver: a StdioTransport connects once")
	}
	c := &lineConn{
		r:      t.r,
		w:      t.w,
		onBad:  t.onBad,
		closed: make(chan struct{}),
	}
	lr := &lineReader{br: bufio.NewReaderSize(t.r, readChunk), max: MaxFrameBytes}
	if interruptible(t.r) {
		c.lr = lr
	} else {
		c.frames = make(chan frameOrErr)
		go c.readLoop(lr)
	}
	return c, nil
}

// interruptible reports whether closing r ends a Read of r in progress:
// an io.PipeReader, and a reader that can be closed and has read
// deadlines that it takes (an
// *os.File in Go's poller, such as a pipe set non-blocking, or a
// net.Conn), as opposed to a file read with blocking system calls (a
// blocking standard input), which a Close does not interrupt. Asking
// clears a read deadline already set on r: the transport reads until the
// session ends, and sets none.
func interruptible(r io.Reader) bool {
	switch r := r.(type) {
	case *io.PipeReader:
		return true
	case interface {
		SetReadDeadline(time.Time) error
		io.Closer
	}:
		return r.SetReadDeadline(time.Time{}) == nil
	}
	return false
}

// frameOrErr is what the read loop hands to Read: a valid message, or the
// error that ended reading.
type frameOrErr struct {
	msg jsonrpc.Message
	err error
}

// lineConn is the mcp.Connection of a lineTransport. It reads r in one
// of two ways. When closing r ends a read in progress (see
// interruptible), Read reads r itself, from the session's own reader
// goroutine, under readMu, and lr and readErr are set; otherwise a
// goroutine of its own (readLoop) reads r and hands each message to Read
// on frames, so that Close can end a Read whatever r does. The first way
// saves a goroutine switch per message.
type lineConn struct {
	r     io.Reader
	onBad func(code int, long bool)

	writeMu sync.Mutex // one whole line at a time
	w       io.Writer

	readMu  sync.Mutex  // Read, when lr is set
	lr      *lineReader // nil: readLoop reads
	readErr error       // what ended reading, when lr is set

	frames chan frameOrErr // from readLoop, when lr is nil

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// readLoop reads lines until r fails or the connection closes, answers
// the bad ones, and hands the valid messages to Read.
func (c *lineConn) readLoop(lr *lineReader) {
	for {
		msg, err := c.readLine(lr)
		if msg != nil && !c.deliver(frameOrErr{msg: msg}) {
			return
		}
		if err != nil {
			c.deliver(frameOrErr{err: err})
			return
		}
	}
}

// readLine reads the next line, answers it if it is bad, and returns the
// message it holds if it is valid (nil otherwise), and the error that
// ended reading, if one did.
func (c *lineConn) readLine(lr *lineReader) (jsonrpc.Message, error) {
	line, long, err := lr.next()
	var (
		msg jsonrpc.Message
		bad *frameError
	)
	switch {
	case long != nil:
		bad = &frameError{code: jsonrpc.CodeInvalidRequest, id: long.id(),
			message: fmt.Sprintf("invalid request: the line is longer than %d bytes, the most this server reads as one message; it was dropped", lr.max)}
	case line != nil:
		msg, bad = parseFrame(line)
	}
	if bad != nil {
		if werr := c.writeLine(bad.encode()); werr != nil && err == nil {
			err = werr
		}
		if c.onBad != nil {
			c.onBad(bad.code, long != nil)
		}
	}
	return msg, err
}

// deliver hands v to Read, and reports false if the connection closed
// first.
func (c *lineConn) deliver(v frameOrErr) bool {
	select {
	case c.frames <- v:
		return true
	case <-c.closed:
		return false
	}
}

// Read implements mcp.Connection: it returns the next valid message.
// When it reads r itself, it returns once r has a valid message, fails or
// reaches its end, or the connection closes (which closes r): a ctx done
// while it waits is not noticed before then, which the SDK, whose reader
// passes a context that is never done, does not need.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.lr != nil {
		return c.readDirect()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-c.frames:
		return v.msg, v.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// readDirect is Read when the connection reads r itself.
func (c *lineConn) readDirect() (jsonrpc.Message, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for c.readErr == nil {
		msg, err := c.readLine(c.lr)
		if err != nil {
			c.readErr = err
			if c.isClosed() {
				c.readErr = io.EOF // r's error for the Close that ended the read
			}
		}
		if msg != nil {
			return msg, nil
		}
	}
	return nil, c.readErr
}

// isClosed reports whether Close was called.
func (c *lineConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// Write implements mcp.Connection: it writes msg as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var (
		data []byte
		err  error
	)
	resp, isResp := msg.(*jsonrpc.Response)
	switch {
	case isResp && !resp.ID.IsValid():
		data = unattributed(resp).encode()
	case isResp:
		if line := resultLine(resp); line != nil {
			return c.writeRaw(line)
		}
		fallthrough
	default:
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return fmt.Errorf("mcpserver: encoding a message: %w", err)
		}
	}
	return c.writeLine(data)
}

// resultLine returns the line of a successful response whose id is an
// integer or a string without characters JSON escapes, built around its
// result as it is, or nil for any other response. The line is byte for
// byte what jsonrpc.EncodeMessage writes, and a newline, for the compact
// result the SDK marshals (encoding it again would only compact it again
// and copy it twice); a result that is not valid JSON gets nil, and so
// the SDK's encoding error.
func resultLine(resp *jsonrpc.Response) []byte {
	// A newline in the result's white space would end the line early:
	// such a result, which the SDK does not make, is encoded by the SDK,
	// which compacts it.
	if resp.Error != nil || len(resp.Result) == 0 || bytes.IndexByte(resp.Result, '\n') >= 0 || !json.Valid(resp.Result) {
		return nil
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	var id []byte
	switch v := resp.ID.Raw().(type) {
	case int64:
		id = strconv.AppendInt(make([]byte, 0, 20), v, 10)
	case string:
		for i := 0; i < len(v); i++ {
			if b := v[i]; b < 0x20 || b >= 0x7f || b == '"' || b == '\\' {
				return nil
			}
		}
		id = append(append(append(make([]byte, 0, len(v)+2), '"'), v...), '"')
	default:
		return nil
	}
	line := make([]byte, 0, len(head)+len(id)+len(mid)+len(resp.Result)+2)
	line = append(append(append(append(line, head...), id...), mid...), resp.Result...)
	return append(line, '}', '\n')
}

// writeLine writes data and a newline with one Write, under writeMu.
func (c *lineConn) writeLine(data []byte) error {
	line := make([]byte, 0, len(data)+1)
	return c.writeRaw(append(append(line, data...), '\n'))
}

// writeRaw writes line, which ends with its newline, with one Write,
// under writeMu.
func (c *lineConn) writeRaw(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(line)
	return err
}

// Close implements mcp.Connection. It closes r if r is an io.Closer.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if rc, ok := c.r.(io.Closer); ok {
			c.closeErr = rc.Close()
		}
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: a stdio session has no ID.
func (c *lineConn) SessionID() string { return "" }

// unattributed is the error response for a Response the SDK writes
// without an id.
func unattributed(resp *jsonrpc.Response) *frameError {
	fe := &frameError{code: jsonrpc.CodeInternalError, message: "internal error"}
	var we *jsonrpc.Error
	if errors.As(resp.Error, &we) {
		fe.code, fe.data = int(we.Code), we.Data
	}
	if resp.Error != nil {
		fe.message = resp.Error.Error()
	}
	return fe
}

// frameError is the error response to a line that is not a valid
// message.
type frameError struct {
	code    int
	message string
	id      json.RawMessage // nil: null
	data    json.RawMessage
}

// encode returns the error response as one JSON-RPC message.
func (e *frameError) encode() []byte {
	type wireError struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	id := e.id
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{e.code, e.message, e.data}})
	if err != nil {
		// Only a malformed id or data can fail; answer without them.
		data, _ = json.Marshal(struct {
			JSONRPC string    `json:"jsonrpc"`
			ID      any       `json:"id"`
			Error   wireError `json:"error"`
		}{"2.0", nil, wireError{Code: e.code, Message: e.message}})
	}
	return data
}

// lineReader reads newline-delimited lines of at most max bytes.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// next returns the next line without its newline, or nil at the end of
// input. A line longer than max is not kept: next reads it to its end in
// pieces of at most the reader's buffer size and returns the idScanner
// that saw it instead. err is the error that ended the input (io.EOF
// included); a last line without a newline is returned with it.
func (lr *lineReader) next() (line []byte, long *idScanner, err error) {
	if cap(lr.buf) > readChunk {
		lr.buf = nil // do not keep a large line's memory for the session
	}
	lr.buf = lr.buf[:0]
	seen := false
	for {
		chunk, rerr := lr.br.ReadSlice('\n')
		last := rerr == nil
		if last {
			chunk = chunk[:len(chunk)-1]
		}
		seen = seen || len(chunk) > 0 || last
		switch {
		case long != nil:
			long.scan(chunk)
		case len(lr.buf)+len(chunk) > lr.max:
			long = &idScanner{}
			long.scan(lr.buf)
			long.scan(chunk)
			lr.buf = lr.buf[:0]
		default:
			lr.buf = appendDoubling(lr.buf, chunk)
		}
		switch {
		case last:
			return lr.lineOrNil(long), long, nil
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case !seen:
			return nil, nil, rerr
		default:
			return lr.lineOrNil(long), long, rerr
		}
	}
}

// appendDoubling appends p to buf, at least doubling buf's capacity when
// it must grow, so that a line costs about twice its length in
// allocations, not the five times of append's growth for large slices.
func appendDoubling(buf, p []byte) []byte {
	if need := len(buf) + len(p); need > cap(buf) {
		grown := make([]byte, len(buf), max(need, 2*cap(buf), readChunk))
		copy(grown, buf)
		buf = grown
	}
	return append(buf, p...)
}

func (lr *lineReader) lineOrNil(long *idScanner) []byte {
	if long != nil {
		return nil
	}
	return lr.buf
}

// parseFrame checks that line is one valid JSON-RPC 2.0 message and
// returns it, or the error response it gets. A line of white space
// returns neither. The message holds copies, never line's memory.
func parseFrame(line []byte) (jsonrpc.Message, *frameError) {
	line = bytes.Trim(line, " \t\r\n")
	if len(line) == 0 {
		return nil, nil
	}
	parseError := func(why string) (jsonrpc.Message, *frameError) {
		return nil, &frameError{code: jsonrpc.CodeParseError, message: "parse error: " + why}
	}
	switch {
	case bytes.IndexByte(line, 0) >= 0:
		return parseError("the line holds a NUL byte")
	case !utf8.Valid(line):
		return parseError("the line is not valid UTF-8")
	case !json.Valid(line):
		return parseError("the line is not valid JSON")
	case line[0] == '[':
		return nil, &frameError{code: jsonrpc.CodeInvalidRequest,
			message: "invalid request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them); send one message per line"}
	case line[0] != '{':
		return nil, invalid(nil, "a message must be a JSON object")
	}
	m, err := members(line)
	if err != nil {
		return nil, invalid(nil, "the message cannot be read")
	}
	if m.repeated != "" {
		_, _, echo := readID(m.id)
		if m.repeated == "id" {
			echo = nil
		}
		return nil, invalid(echo, fmt.Sprintf("the member %q appears more than once", m.repeated))
	}
	return m.message()
}

// invalid is an invalid request error with the given id (nil: null).
func invalid(id json.RawMessage, why string) *frameError {
	return &frameError{code: jsonrpc.CodeInvalidRequest, id: id, message: "invalid request: " + why}
}

// frameMembers are the members of a message object that JSON-RPC 2.0
// defines; nil means absent.
type frameMembers struct {
	jsonrpc, id, method, params, result, error json.RawMessage
	repeated                                   string // the first member that appears twice
}

// members reads the top-level members of the object obj, which is valid
// JSON, noting the first one that appears twice. Members JSON-RPC does not
// define are ignored.
func members(obj []byte) (*frameMembers, error) {
	var m frameMembers
	slots := map[string]*json.RawMessage{
		"jsonrpc": &m.jsonrpc, "id": &m.id, "method": &m.method,
		"params": &m.params, "result": &m.result, "error": &m.error,
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		slot, known := slots[key]
		switch {
		case !known:
		case *slot == nil:
			*slot = val
		case m.repeated == "":
			m.repeated = key
		}
	}
	return &m, nil
}

// message checks the members and builds the message they describe.
func (m *frameMembers) message() (jsonrpc.Message, *frameError) {
	id, idOK, echo := readID(m.id)
	if string(m.jsonrpc) != `"2.0"` {
		return nil, invalid(echo, `"jsonrpc" must be "2.0"`)
	}
	if m.method != nil {
		return m.request(id, idOK, echo)
	}
	return m.response(id, idOK, echo)
}

func (m *frameMembers) request(id jsonrpc.ID, idOK bool, echo json.RawMessage) (jsonrpc.Message, *frameError) {
	var method string
	if m.method[0] != '"' || json.Unmarshal(m.method, &method) != nil {
		return nil, invalid(echo, `"method" must be a string`)
	}
	if m.id != nil && !idOK {
		return nil, invalid(echo, `a request's "id" must be a string or an integer of at most 2^53 in magnitude`)
	}
	if m.result != nil || m.error != nil {
		return nil, invalid(echo, `a request has no "result" or "error"`)
	}
	params := m.params
	if isNull(params) {
		params = nil
	}
	if params != nil && params[0] != '{' && params[0] != '[' {
		return nil, invalid(echo, `"params" must be an object or an array`)
	}
	return &jsonrpc.Request{ID: id, Method: method, Params: params}, nil
}

func (m *frameMembers) response(id jsonrpc.ID, idOK bool, echo json.RawMessage) (jsonrpc.Message, *frameError) {
	if !idOK {
		return nil, invalid(echo, `a message without "method" must be a response with a string or integer "id"`)
	}
	if m.params != nil {
		return nil, invalid(echo, `a response has no "params"`)
	}
	hasError := m.error != nil && !isNull(m.error)
	if (m.result != nil) == hasError {
		return nil, invalid(echo, `a response has exactly one of "result" and "error"`)
	}
	resp := &jsonrpc.Response{ID: id, Result: m.result}
	if hasError {
		we, ok := readError(m.error)
		if !ok {
			return nil, invalid(echo, `"error" must be an object with an integer "code" and a string "message"`)
		}
		resp.Error = we
	}
	return resp, nil
}

// readID reads a message's id: the SDK's form of it, whether it is a
// valid MCP request id (a string, or an integer the SDK holds exactly),
// and the raw id to repeat in an error response (nil, meaning null,
// unless it is a string or a number).
func readID(raw json.RawMessage) (id jsonrpc.ID, ok bool, echo json.RawMessage) {
	if raw == nil {
		return jsonrpc.ID{}, false, nil
	}
	switch {
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false, nil
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil, raw
	case raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9':
		// Only an integer written as one: a fraction or an exponent
		// ("1.5", "9007199254740993e0") could be read as another
		// integer than the one the client meant.
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxSafeID || n < -maxSafeID {
			return jsonrpc.ID{}, false, raw
		}
		id, err := jsonrpc.MakeID(float64(n))
		return id, err == nil, raw
	}
	return jsonrpc.ID{}, false, nil
}

// readError reads a response's error object.
func readError(raw json.RawMessage) (*jsonrpc.Error, bool) {
	if raw[0] != '{' {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	code, err := strconv.ParseInt(string(m["code"]), 10, 64)
	if err != nil {
		return nil, false
	}
	var msg string
	if len(m["message"]) == 0 || m["message"][0] != '"' || json.Unmarshal(m["message"], &msg) != nil {
		return nil, false
	}
	return &jsonrpc.Error{Code: code, Message: msg, Data: m["data"]}, true
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// Bounds of what an idScanner keeps of a line.
const (
	maxScannedKey = len("id")
	maxScannedID  = 256
)

// idScanner looks for the top-level "id" member of a line too long to
// keep, one piece at a time, keeping at most maxScannedID bytes. It
// follows strings, escapes and nesting, but does not check the rest of
// the line: it only finds what to repeat in the error response. A key
// written with escapes is not recognized, and an id that appears twice
// is not used.
type idScanner struct {
	depth    int
	inString bool
	escaped  bool
	// At depth 1: whether the next string is a key, the key being read,
	// and whether the value that follows it is the id.
	wantKey  bool
	isKey    bool
	key      []byte
	keyLong  bool
	idNext   bool
	inValue  bool // reading the id's value
	value    []byte
	idCount  int
	tooLarge bool // the id's value was longer than maxScannedID
}

// scan reads the next piece of the line. Inside a string it keeps
// nothing of, it skips to the next quote or backslash at once.
func (s *idScanner) scan(p []byte) {
	for len(p) > 0 {
		if s.inString && !s.escaped && !s.isKey && !s.inValue {
			end := len(p)
			if i := bytes.IndexByte(p, '"'); i >= 0 {
				end = i
			}
			if i := bytes.IndexByte(p[:end], '\\'); i >= 0 {
				end = i
			}
			if p = p[end:]; len(p) == 0 {
				return
			}
		}
		s.step(p[0])
		p = p[1:]
	}
}

func (s *idScanner) step(b byte) {
	if s.inString {
		s.keep(b)
		switch {
		case s.escaped:
			s.escaped = false
		case b == '\\':
			s.escaped = true
		case b == '"':
			s.inString = false
			s.endString()
		}
		return
	}
	if s.inValue && s.depth == 1 && !isNumberByte(b) {
		s.inValue = false // the end of a number
	}
	switch b {
	case '"':
		s.inString = true
		s.startString()
		s.keep(b)
	case '{', '[':
		s.valueStarts() // an object or array id is counted, not used
		s.depth++
		s.wantKey = s.depth == 1
	case '}', ']':
		s.depth--
	case ',':
		s.wantKey = s.depth == 1
	case ':':
	case ' ', '\t', '\r', '\n':
	default:
		if s.valueStarts() && isNumberByte(b) {
			s.inValue = true
		}
		s.keep(b)
	}
}

// valueStarts notes that a value other than a string starts, and reports
// whether it is the id's.
func (s *idScanner) valueStarts() bool {
	if s.depth != 1 || !s.idNext {
		return false
	}
	s.idNext = false
	s.idCount++
	s.value = s.value[:0]
	return true
}

// startString notes the start of a string at depth 1: a key, or the id.
func (s *idScanner) startString() {
	if s.depth != 1 {
		return
	}
	switch {
	case s.wantKey:
		s.isKey, s.key, s.keyLong, s.wantKey = true, s.key[:0], false, false
	case s.valueStarts():
		s.inValue = true
	}
}

// endString notes the end of a string at depth 1.
func (s *idScanner) endString() {
	if s.depth != 1 {
		return
	}
	if s.isKey {
		s.isKey = false
		s.idNext = !s.keyLong && string(s.key) == `"id"`
		return
	}
	s.inValue = false
}

// keep keeps b when it is part of a key or of the id's value.
func (s *idScanner) keep(b byte) {
	switch {
	case s.isKey:
		if len(s.key) < maxScannedKey+2 {
			s.key = append(s.key, b)
		} else {
			s.keyLong = true
		}
	case s.inValue:
		if len(s.value) < maxScannedID {
			s.value = append(s.value, b)
		} else {
			s.tooLarge = true
		}
	}
}

func isNumberByte(b byte) bool {
	return '0' <= b && b <= '9' || b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E'
}

// id returns the id to repeat in the error response, nil for null.
func (s *idScanner) id() json.RawMessage {
	if s.idCount != 1 || s.tooLarge || !json.Valid(s.value) {
		return nil
	}
	if _, _, echo := readID(s.value); echo != nil {
		return bytes.Clone(echo)
	}
	return nil
}

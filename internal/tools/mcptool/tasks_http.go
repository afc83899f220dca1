package mcptool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
)

// Tasks over Streamable HTTP. The SDK's HTTP connection cannot be wrapped
// like the stdio one (taskConn): the session talks to it through hooks a
// wrapper would hide. So the rewrite happens one layer down, in the HTTP
// client: taskRewriter notes the JSON-RPC id of each tools/call POST and
// rewrites the answer with that id in the response body, a JSON object or
// an SSE stream, exactly as taskConn does (rewriteTaskAnswer). The SDK
// then reads an ordinary result whose _meta carries the task.

// taskRewriter is the http.RoundTripper that rewrites task answers.
type taskRewriter struct{ base http.RoundTripper }

// RoundTrip passes req on and, for a tools/call, wraps the response body.
func (t taskRewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	id := toolCallID(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil || id == nil || resp.StatusCode/100 != 2 || resp.Body == nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		resp.Body = &jsonRewriteBody{src: resp.Body, id: id}
	case "text/event-stream":
		resp.Body = &sseRewriteBody{src: resp.Body, r: bufio.NewReader(resp.Body), id: id}
	default:
		return resp, nil
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}

// CloseIdleConnections passes on to the base transport.
func (t taskRewriter) CloseIdleConnections() { closeIdle(t.base) }

// toolCallID returns the compact JSON id of a tools/call request in req's
// body, or nil. The body is read through GetBody, which the SDK's requests
// have, so the request itself is untouched.
func toolCallID(req *http.Request) []byte {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.NewDecoder(body).Decode(&msg) != nil || msg.Method != methodCallTool || len(msg.ID) == 0 {
		return nil
	}
	return compactJSON(msg.ID)
}

func compactJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return nil
	}
	return out.Bytes()
}

// rewriteMessage rewrites data when it is the JSON-RPC answer with id;
// anything else is returned as it is.
func rewriteMessage(data, id []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil {
		return data
	}
	res, ok := msg["result"]
	if !ok || !bytes.Equal(compactJSON(msg["id"]), id) {
		return data
	}
	nres := rewriteTaskAnswer(res)
	if bytes.Equal(nres, res) {
		return data
	}
	msg["result"] = nres
	out, err := json.Marshal(msg)
	if err != nil {
		return data
	}
	return out
}

// jsonRewriteBody reads a whole JSON answer, then serves it rewritten.
type jsonRewriteBody struct {
	src  io.ReadCloser
	id   []byte
	out  *bytes.Reader
	rerr error
}

func (b *jsonRewriteBody) Read(p []byte) (int, error) {
	if b.out == nil {
		data, err := io.ReadAll(b.src)
		if err != nil {
			b.rerr = err
			b.out = bytes.NewReader(data)
		} else {
			b.out = bytes.NewReader(rewriteMessage(data, b.id))
		}
	}
	n, err := b.out.Read(p)
	if err == io.EOF && b.rerr != nil {
		err = b.rerr
	}
	return n, err
}

func (b *jsonRewriteBody) Close() error { return b.src.Close() }

// sseRewriteBody passes an SSE stream through event by event, rewriting
// the data of the event that carries the answer with id. Other events,
// comments and fields go through byte for byte.
type sseRewriteBody struct {
	src   io.ReadCloser
	r     *bufio.Reader
	id    []byte
	event [][]byte // lines of the event being read
	out   bytes.Buffer
	err   error
}

func (b *sseRewriteBody) Read(p []byte) (int, error) {
	for b.out.Len() == 0 && b.err == nil {
		line, err := b.r.ReadBytes('\n')
		if len(line) > 0 {
			b.event = append(b.event, line)
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				b.flush()
			}
		}
		if err != nil {
			b.flush()
			b.err = err
		}
	}
	if b.out.Len() > 0 {
		return b.out.Read(p)
	}
	return 0, b.err
}

// flush writes the buffered event out, its data rewritten when it is the
// answer to the call.
func (b *sseRewriteBody) flush() {
	if len(b.event) == 0 {
		return
	}
	var data [][]byte
	for _, l := range b.event {
		if v, ok := bytes.CutPrefix(bytes.TrimRight(l, "\r\n"), []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	joined := bytes.Join(data, []byte("\n"))
	rewritten := rewriteMessage(joined, b.id)
	if len(data) == 0 || bytes.Equal(rewritten, joined) {
		for _, l := range b.event {
			b.out.Write(l)
		}
	} else {
		wrote := false
		for _, l := range b.event {
			if !bytes.HasPrefix(l, []byte("data:")) {
				b.out.Write(l)
				continue
			}
			if !wrote {
				b.out.WriteString("data: ")
				b.out.Write(rewritten)
				b.out.WriteString("\n")
				wrote = true
			}
		}
	}
	b.event = b.event[:0]
}

func (b *sseRewriteBody) Close() error { return b.src.Close() }

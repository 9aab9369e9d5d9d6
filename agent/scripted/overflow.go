package scripted

import (
	"net/http"
	"strconv"
	"strings"
)

// Overflow is the raw HTTP answer to a request larger than the script's
// ContextTokens, as a provider sends it. In Body, "{limit}" is replaced by
// ContextTokens and "{tokens}" by the request's CountTokens. testdata/model/
// context-overflow.json holds real providers' answers in this shape.
type Overflow struct {
	Status int    `json:"status"` // HTTP status; 0 means 400
	Body   string `json:"body"`   // "" means DefaultOverflowBody
}

// DefaultOverflowBody is OpenAI's answer (with status 400) to a request that
// exceeds the model's context, the answer when a script sets ContextTokens
// but no Overflow.
const DefaultOverflowBody = `{"error":{"message":"This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`

// render returns the status and body to send for a request of tokens tokens
// against a context of limit tokens.
func (o *Overflow) render(limit, tokens int) (int, string) {
	status, body := http.StatusBadRequest, DefaultOverflowBody
	if o != nil {
		if o.Status != 0 {
			status = o.Status
		}
		if o.Body != "" {
			body = o.Body
		}
	}
	body = strings.NewReplacer("{limit}", strconv.Itoa(limit), "{tokens}", strconv.Itoa(tokens)).Replace(body)
	return status, body
}

func writeOverflow(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write([]byte(body))
}

package scripted

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Exchange posts bodies, one after another, to the chat endpoint of the
// server whose URL is url (a Server's), reads each answer to its end, and
// returns the time it took. It decodes nothing: it is the HTTP exchange of a
// model call alone, the floor a benchmark subtracts from a client's time per
// call to see the client's own. It uses the transport a model client does
// (one connection, kept alive; a write buffer that holds a body whole). The
// server's script must have a turn for each body.
func Exchange(ctx context.Context, url string, bodies [][]byte) (time.Duration, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.WriteBufferSize = 64 << 10
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	start := time.Now()
	for i, body := range bodies {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-exchange")
		resp, err := client.Do(req)
		if err != nil {
			return 0, fmt.Errorf("exchange %d: %w", i, err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("exchange %d: %w", i, err)
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("exchange %d: %s", i, resp.Status)
		}
	}
	return time.Since(start), nil
}

// floorExchanges is about how many exchanges ExchangeFloor times.
const floorExchanges = 200

// ExchangeFloor measures the floor under the model calls of the last run a
// client made of turns: it replays the bodies of the last len(turns)
// requests, answered by turns again, through exchange (Exchange, in this
// process or another) until about 200 exchanges were made, and returns the
// time of one, less the server's own time answering it. A benchmark's time
// per model call less this is its client's own. It sets the script.
func (s *Server) ExchangeFloor(turns []Turn, exchange func(bodies [][]byte) (time.Duration, error)) (time.Duration, error) {
	bodies := s.Bodies()
	if len(turns) == 0 || len(bodies) < len(turns) {
		return 0, fmt.Errorf("exchange floor: %d requests recorded, %d turns to replay", len(bodies), len(turns))
	}
	run := bodies[len(bodies)-len(turns):]
	var all [][]byte
	var script []Turn
	for range max(1, (floorExchanges+len(run)-1)/len(run)) {
		all = append(all, run...)
		script = append(script, turns...)
	}
	s.SetScript(Script{Turns: script})
	served := s.Served()
	took, err := exchange(all)
	if err != nil {
		return 0, fmt.Errorf("exchange floor: %w", err)
	}
	return (took - (s.Served() - served)) / time.Duration(len(all)), nil
}

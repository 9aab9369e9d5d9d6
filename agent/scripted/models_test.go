package scripted

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestModelsEndpoint checks GET /v1/models: the default list, a scripted
// list, and the refusals real servers send.
func TestModelsEndpoint(t *testing.T) {
	cases := []struct {
		name       string
		script     Script
		key        string
		wantStatus int
		wantIDs    []string // for 200
		wantBody   string   // a substring, for errors
		notInBody  string
	}{
		{name: "default", wantStatus: 200, wantIDs: []string{"scripted"}},
		{name: "listed", script: Script{Models: []string{"b", "a"}}, wantStatus: 200, wantIDs: []string{"b", "a"}},
		{name: "empty list", script: Script{Models: []string{}}, wantStatus: 200, wantIDs: []string{}},
		{name: "no list", script: Script{ModelsStatus: 404}, wantStatus: 404, wantBody: "404 page not found"},
		{name: "no GET", script: Script{ModelsStatus: 405}, wantStatus: 405, wantBody: "405 method not allowed"},
		{name: "key refused", script: Script{ModelsStatus: 401}, key: "sk-abcdefgh-SECRET-wxyz", wantStatus: 401,
			wantBody: `"code":"invalid_api_key"`, notInBody: "SECRET"},
		{name: "no key", script: Script{ModelsStatus: 401}, wantStatus: 401, wantBody: "You didn't provide an API key"},
		{name: "server error", script: Script{ModelsStatus: 503}, wantStatus: 503, wantBody: `"message":"Service Unavailable"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Start("127.0.0.1:0", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			req, _ := http.NewRequest("GET", srv.URL+"/models", nil)
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != 200 {
				if !strings.Contains(string(body), tc.wantBody) || (tc.notInBody != "" && strings.Contains(string(body), tc.notInBody)) {
					t.Fatalf("body %q", body)
				}
				return
			}
			var list struct {
				Object string `json:"object"`
				Data   []struct {
					ID     string `json:"id"`
					Object string `json:"object"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &list); err != nil || list.Object != "list" || list.Data == nil {
				t.Fatalf("not a model list (%v): %s", err, body)
			}
			var ids []string
			for _, d := range list.Data {
				ids = append(ids, d.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.wantIDs, ",") {
				t.Fatalf("ids %v, want %v", ids, tc.wantIDs)
			}
		})
	}
}

// TestModelsFollowSetScript checks that SetScript replaces the model list.
func TestModelsFollowSetScript(t *testing.T) {
	srv, err := Start("127.0.0.1:0", Script{ModelsStatus: 404})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetScript(Script{Models: []string{"x"}})
	resp, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"id":"x"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

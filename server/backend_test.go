package server

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// TestReconfigureLosesNothing: a backend derived for new settings keeps
// the connection's parts (the same workspace, store and hub) and has every
// part the settings make, computed for the new settings. It fails when a
// field is added to Backend and with forgets it, and when the backend
// shares the caller's settings.
func TestReconfigureLosesNothing(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HOME": dir, "TMPDIR": dir}
	getenv := func(k string) string { return env[k] }
	s := config.Defaults(getenv)
	s.StorePath = filepath.Join(dir, "sessions.db")
	s.AllowEdit = []string{"go.sum"}
	s.Allow = []string{"go test *"}
	b, _, err := NewBackend(NewHub(nil, ""), s, workspace.UTF8, []Folder{{Path: dir}}, nil, getenv, func(string) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	changed := s.Clone()
	changed.Model = "another-model"
	changed.AllowEdit = []string{"go.mod", "go.sum"}
	nb, _, err := b.Reconfigure(changed)
	if err != nil {
		t.Fatal(err)
	}
	changed.AllowEdit[0] = "changed by the caller later"
	if nb.connection != b.connection {
		t.Error("the derived backend has another connection: the workspace, store and hub must carry over")
	}
	if nb.Settings.Model != "another-model" || !slices.Equal(nb.Settings.AllowEdit, []string{"go.mod", "go.sum"}) {
		t.Errorf("the derived backend's settings are not the new ones (or share the caller's lists): %+v", nb.Settings)
	}
	v, old := reflect.ValueOf(nb).Elem(), reflect.ValueOf(b).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "connection" {
			continue
		}
		if v.Field(i).IsZero() {
			t.Errorf("Backend.%s is zero after Reconfigure: with must compute it", name)
		}
		if old.Field(i).IsZero() {
			t.Errorf("Backend.%s is zero after NewBackend: with must compute it", name)
		}
	}
	if len(nb.AllowEdit) != 2 || nb.Runtime == b.Runtime {
		t.Errorf("the derived backend's parts are not made from the new settings: allowEdit %v, same runtime %v", nb.AllowEdit, nb.Runtime == b.Runtime)
	}
}

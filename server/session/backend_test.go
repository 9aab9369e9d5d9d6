package session

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// TestReconfigureLosesNothing: a backend derived for new settings keeps
// the connection's parts (the same workspace, store and hub), every option
// but the settings as they were, the new settings as given (not shared with
// the caller), and every part the options make, computed anew. It walks
// Backend and Options by reflection, so it fails when a field is added and
// NewBackend, build or Reconfigure forget it.
func TestReconfigureLosesNothing(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HOME": dir, "TMPDIR": dir}
	getenv := func(k string) string { return env[k] }
	s := config.Defaults(getenv)
	s.StorePath = filepath.Join(dir, "sessions.db")
	s.AllowEdit = []string{"go.sum"}
	s.Allow = []string{"go test *"}
	environ := []string{"HOME=" + dir, "PATH=/usr/bin"}
	o := Options{Settings: s, Environ: environ, Getenv: getenv, Warn: func(string) {}, Version: "9.9.9",
		Ask: func(context.Context, string, ...string) (string, error) { return "", nil }}
	b, _, err := NewBackend(NewHub(nil, ""), o, workspace.UTF8, []Folder{{Path: dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	environ[0] = "HOME=changed by the caller later"
	changed := s.Clone()
	changed.Model = "another-model"
	changed.AllowEdit = []string{"go.mod", "go.sum"}
	nb, _, err := b.Reconfigure(changed)
	if err != nil {
		t.Fatal(err)
	}
	want := changed.Clone()
	changed.AllowEdit[0] = "changed by the caller later"
	if nb.connection != b.connection {
		t.Error("the derived backend has another connection: the workspace, store and hub must carry over")
	}
	if !reflect.DeepEqual(nb.Settings, want) {
		t.Errorf("the derived backend's settings are not the new ones (or share the caller's lists): %+v", nb.Settings)
	}
	if b.Environ[0] != "HOME="+dir {
		t.Errorf("the backend shares the caller's environment: %v", b.Environ)
	}
	checkOptionsCarried(t, b.Options, nb.Options)
	checkPartsMade(t, b, nb)
	if len(nb.AllowEdit) != 2 || nb.Runtime == b.Runtime {
		t.Errorf("the derived backend's parts are not made from the new settings: allowEdit %v, same runtime %v", nb.AllowEdit, nb.Runtime == b.Runtime)
	}
}

// checkOptionsCarried fails for an option (but the settings) that was set
// in old and is not the same in derived.
func checkOptionsCarried(t *testing.T, old, derived Options) {
	t.Helper()
	ov, dv := reflect.ValueOf(old), reflect.ValueOf(derived)
	for i := range ov.NumField() {
		name := ov.Type().Field(i).Name
		f, g := ov.Field(i), dv.Field(i)
		switch {
		case name == "Settings":
		case f.IsZero():
			t.Errorf("Options.%s is zero after NewBackend: the test must set it", name)
		case f.Kind() == reflect.Func:
			if f.Pointer() != g.Pointer() {
				t.Errorf("Options.%s is another function after Reconfigure", name)
			}
		case !reflect.DeepEqual(f.Interface(), g.Interface()):
			t.Errorf("Options.%s is %v after Reconfigure, was %v", name, g, f)
		case f.Kind() == reflect.Slice && f.Pointer() == g.Pointer():
			t.Errorf("Options.%s is shared by the derived backend: Reconfigure must clone it", name)
		}
	}
}

// checkPartsMade fails for a part of Backend (beyond its connection and
// options) that NewBackend or Reconfigure left zero.
func checkPartsMade(t *testing.T, b, nb *Backend) {
	t.Helper()
	v, old := reflect.ValueOf(nb).Elem(), reflect.ValueOf(b).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "connection" || name == "Options" {
			continue
		}
		if v.Field(i).IsZero() {
			t.Errorf("Backend.%s is zero after Reconfigure: build must compute it", name)
		}
		if old.Field(i).IsZero() {
			t.Errorf("Backend.%s is zero after NewBackend: build must compute it", name)
		}
	}
}

// TestOptionsCloneSharesNothing: a change of a clone's lists never reaches
// the options it was cloned from.
func TestOptionsCloneSharesNothing(t *testing.T) {
	o := Options{Environ: []string{"A=1"}, Settings: config.Settings{Allow: []string{"go test *"}}}
	c := o.Clone()
	c.Environ[0], c.Settings.Allow[0] = "A=2", "rm *"
	if o.Environ[0] != "A=1" || !slices.Equal(o.Settings.Allow, []string{"go test *"}) {
		t.Errorf("the clone shares the options' lists: %+v", o)
	}
}

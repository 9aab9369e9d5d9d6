package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The sandbox's Go build caches are trimmed as Go trims its own: a
// project's cache unused for goCacheTrimAge is removed, checked at most
// every goCacheTrimEvery (Go itself trims the entries inside each).
const (
	goCacheTrimAge   = 5 * 24 * time.Hour
	goCacheTrimEvery = 24 * time.Hour
	goCacheUsed      = "agent-lsp-used" // a file whose mtime is the cache's last use (hourly)
)

// prepareGoCache makes the project's sandbox Go cache dir, marks it used,
// and starts a trim of the others when one is due.
func prepareGoCache(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now()
	used := filepath.Join(dir, goCacheUsed)
	if fi, err := os.Stat(used); err != nil || now.Sub(fi.ModTime()) > time.Hour {
		os.WriteFile(used, nil, 0o644)
		os.Chtimes(used, now, now)
	}
	parent := filepath.Dir(dir)
	stamp := filepath.Join(parent, "trim.txt")
	if fi, err := os.Stat(stamp); err == nil && now.Sub(fi.ModTime()) < goCacheTrimEvery {
		return nil
	}
	if err := os.WriteFile(stamp, []byte(strconv.FormatInt(now.Unix(), 10)+"\n"), 0o644); err != nil {
		return nil
	}
	go trimGoCaches(parent, dir, now)
	return nil
}

// trimGoCaches removes the caches under parent (but keep) unused since
// goCacheTrimAge before now.
func trimGoCaches(parent, keep string, now time.Time) {
	des, _ := os.ReadDir(parent)
	for _, de := range des {
		dir := filepath.Join(parent, de.Name())
		if !de.IsDir() || dir == keep {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, goCacheUsed))
		if err != nil {
			fi, err = os.Stat(dir)
		}
		if err == nil && now.Sub(fi.ModTime()) > goCacheTrimAge {
			os.RemoveAll(dir)
		}
	}
}

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Untrusted is the directory, inside a repository's .git, where the sandbox
// sets aside what a command wrote into a repository it created and that
// makes git run a program (its config, hooks, commondir, alternates,
// submodules' and worktrees' metadata): git never reads it, and nothing is
// lost. A new .git file is renamed to ".git" + UntrustedSuffix.
const (
	Untrusted       = "agent-lsp-untrusted"
	UntrustedSuffix = ".agent-lsp-untrusted"
)

// freshConfig is the config a repository set aside gets: what git init
// writes, which runs nothing.
const freshConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"

// gitData are the names at the top of a .git directory that hold git's own
// data (objects, refs, the index, state files) and run no program; the rest
// is set aside in a repository a command created. hooks/ keeps only its
// *.sample files, objects/ loses its info/alternates.
var gitData = []string{"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD",
	"COMMIT_EDITMSG", "MERGE_MSG", "description", "index", "packed-refs", "shallow", "objects", "refs", "logs",
	"info", "branches", "hooks", Untrusted}

// disarmRepo sets aside, in the repository a command created at rel (a .git
// directory, relative to r's root), everything through which git would run
// a program, and gives it a fresh config, so that the user's git (an
// editor's, run on its own) runs nothing of the command's. It follows no
// symlink. It returns what it set aside, relative to r's root.
func disarmRepo(r *os.Root, rel string) ([]string, error) {
	aside := path.Join(rel, Untrusted)
	if err := r.Mkdir(aside, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if fi, err := r.Lstat(aside); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", aside)
	}
	var moved []string
	move := func(name string) error {
		from := path.Join(rel, name)
		to := path.Join(aside, strings.ReplaceAll(name, "/", "_"))
		r.RemoveAll(to) // a command's own file under that name
		if err := r.Rename(from, to); err != nil {
			return err
		}
		moved = append(moved, from)
		return nil
	}
	names, err := readNames(r, rel)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if !slices.Contains(gitData, name) {
			if err := move(name); err != nil {
				return moved, err
			}
		}
	}
	for _, dir := range []string{"hooks", "objects/info"} {
		if fi, err := r.Lstat(path.Join(rel, dir)); err != nil || !fi.IsDir() {
			if err == nil {
				if err := move(dir); err != nil { // a link or a file where git looks for a directory
					return moved, err
				}
			}
			continue
		}
		names, err := readNames(r, path.Join(rel, dir))
		if err != nil {
			return moved, err
		}
		for _, name := range names {
			if dir == "hooks" && strings.HasSuffix(name, ".sample") || dir == "objects/info" && name == "packs" {
				continue
			}
			if err := move(dir + "/" + name); err != nil {
				return moved, err
			}
		}
	}
	return moved, writeFresh(r, path.Join(rel, "config"), freshConfig)
}

// readNames lists the names in the directory rel of r.
func readNames(r *os.Root, rel string) ([]string, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|oNoFollow|oDirectory, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// writeFresh creates rel in r with data; nothing may be there.
func writeFresh(r *os.Root, rel, data string) error {
	w, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	if err != nil {
		return err
	}
	_, err = w.WriteString(data)
	return errors.Join(err, w.Close())
}

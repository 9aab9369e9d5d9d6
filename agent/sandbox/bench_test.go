//go:build unix

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSandboxedTrue measures what the sandbox adds to starting a
// command: `true` through the sandbox (the helper, its namespaces or its
// reaper, the mounts, Landlock, the scan of the project and what follows
// the command) against `true` started directly, interleaved, in a small
// git project. It reports the ratios and the time added per command, in
// wall time and in CPU time.
func BenchmarkSandboxedTrue(b *testing.B) {
	s := newSandbox(b)
	for _, iso := range []Isolation{Namespaces, Snapshot} {
		b.Run(string(iso), func(b *testing.B) {
			if iso == Namespaces && s.Isolation(Policy{Mode: WorkspaceWrite}) != Namespaces {
				b.Skip("namespaces are refused here")
			}
			root := filepath.Join(b.TempDir(), "project")
			os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
			os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n"), 0o644)
			os.MkdirAll(filepath.Join(root, "src", "pkg"), 0o755)
			os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("x\n"), 0o644)
			p := policy(iso, root, b.TempDir())
			ctx := context.Background()
			var plain, boxed, plainCPU, boxedCPU time.Duration
			for b.Loop() {
				t0 := time.Now()
				cmd := exec.Command("true")
				cmd.Dir = root
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				plainCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				t1 := time.Now()
				cmd, r := s.Command(ctx, p, []string{"true"})
				cmd.Dir = root
				err := cmd.Run()
				r.Finish()
				if err != nil {
					b.Fatal(err)
				}
				boxed += time.Since(t1)
				boxedCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				plain += t1.Sub(t0)
			}
			b.ReportMetric(float64(boxed)/float64(plain), "x-unsandboxed")
			b.ReportMetric(float64(boxed-plain)/float64(b.N)/1e6, "ms-added/op")
			// CPU time (the helper's and what it waited for) holds still on
			// a loaded machine, where waiting for a core dominates wall time.
			b.ReportMetric(float64(boxedCPU)/float64(plainCPU), "x-cpu")
			b.ReportMetric(float64(boxedCPU-plainCPU)/float64(b.N)/1e6, "cpu-ms-added/op")
		})
	}
}

//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// probe finds whether commands can run in namespaces here: it runs the
// helper's namespace stage without a command (every mount, the loopback,
// dropping capabilities, Landlock). Some distributions refuse user
// namespaces (a sysctl, an AppArmor rule), and some containers refuse a
// fresh /proc.
func probe(helper string) (Isolation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := &opts{stage: stageProbe, root: "/", netns: true, tmpSize: 1 << 20}
	cmd := exec.CommandContext(ctx, helper, o.commandLine(helper)[1:]...)
	cmd.SysProcAttr = nsAttr(true)
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "agent-lsp sandbox: "))
		if msg == "" {
			msg = err.Error()
		}
		return Snapshot, fmt.Errorf("%s", msg)
	}
	return Namespaces, nil
}

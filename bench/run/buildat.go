package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// buildAt builds pkg of the module at git revision rev: the revision's
// files (git archive, not a worktree) are unpacked into dir/src and
// built there, with the same module cache. It returns the binary's path.
func buildAt(ctx context.Context, root, rev, dir, pkg string) (string, error) {
	src := filepath.Join(dir, "src")
	if err := os.RemoveAll(src); err != nil {
		return "", err
	}
	if err := os.MkdirAll(src, 0o750); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rev, src)
	if msg, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %v\n%s", rev, err, msg)
	}
	out := filepath.Join(dir, filepath.Base(pkg)+"-"+rev)
	build := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	build.Dir = src
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s at %s: %v\n%s", pkg, rev, err, msg)
	}
	logf("built %s at %s: %s", pkg, rev, out)
	return out, nil
}

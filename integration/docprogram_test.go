package integration

import (
	"bytes"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClientDocProgram builds the complete program that docs/client.md
// opens with, exactly as the page shows it (gofmt-clean), runs it against
// a taskd process started with make run's handler (the Makefile's
// RUN_EXEC) and compares what it prints with the output the page shows
// after it. Only the address changes: the page's 127.0.0.1:7420 becomes
// the test node's.
func TestClientDocProgram(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	page := readFile(t, filepath.Join(root, "docs", "client.md"))
	program, rest, ok := fenced(page, "```go\n")
	if !ok || !strings.HasPrefix(program, "package main\n") {
		t.Fatalf("docs/client.md does not open with a ```go block holding a main package")
	}
	if got, err := format.Source([]byte(program)); err != nil || !bytes.Equal(got, []byte(program)) {
		t.Fatalf("the program of docs/client.md is not gofmt-clean (%v)", err)
	}
	console, _, ok := fenced(rest, "```console\n")
	if !ok {
		t.Fatal("docs/client.md shows no ```console block after its program")
	}
	cmdLine, want, _ := strings.Cut(console, "\n")
	if !strings.HasPrefix(cmdLine, "$ go run") || want == "" {
		t.Fatalf("the console block after the program is not `$ go run` and its output: %q", console)
	}
	const pageAddr = `"127.0.0.1:7420"`
	if !strings.Contains(program, pageAddr) {
		t.Fatalf("the program of docs/client.md does not dial make run's node %s", pageAddr)
	}

	dir := t.TempDir()
	node := startNode(t, nodeOptions{name: "docs", dataDir: filepath.Join(dir, "data"), extra: []string{"--exec", makeRunExec(t, root)}})
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(strings.ReplaceAll(program, pageAddr, `"`+node.listen+`"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "quickstart")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Dir = root // the program's imports resolve in this module
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build the program of docs/client.md: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin)
	run.Env = childEnv()
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("the program of docs/client.md failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if stdout.String() != want {
		t.Fatalf("the program of docs/client.md printed\n%s\nthe page shows\n%s", stdout.String(), want)
	}
}

// fenced returns the body of the first code block of s that opens with
// open (such as "```go\n"), and what follows the block.
func fenced(s, open string) (body, rest string, ok bool) {
	_, after, ok := strings.Cut(s, open)
	if !ok {
		return "", "", false
	}
	body, rest, ok = strings.Cut(after, "```\n")
	return body, rest, ok
}

// makeRunExec is the --exec value make run gives taskd: the Makefile's
// RUN_EXEC handler, with make's $$ read as $.
func makeRunExec(t *testing.T, root string) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, filepath.Join(root, "Makefile")), "\n") {
		if !strings.HasPrefix(line, "RUN_EXEC = ") {
			continue
		}
		_, v, ok := strings.Cut(line, "--exec '")
		if i := strings.LastIndex(v, "'"); ok && i > 0 {
			return strings.ReplaceAll(v[:i], "$$", "$")
		}
	}
	t.Fatal("the Makefile has no RUN_EXEC = ...--exec '...' line")
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

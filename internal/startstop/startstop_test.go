package startstop_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/taskd/taskd/internal/startstop"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(panicChild) != "" {
		runPanickingLoop()
		return
	}
	goleak.VerifyTestMain(m)
}

// logBuffer is a logger's output that tests can read while loops write.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLog(out *logBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Debug})
}

// wait fails the test if ch is not closed within 10 s.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}

// Stop cancels every loop's context and returns only after each returned.
func TestStopCancelsEveryLoopAndWaits(t *testing.T) {
	g := startstop.New(context.Background(), hclog.NewNullLogger(), 0)
	var mu sync.Mutex
	returned := map[string]bool{}
	started := make(chan struct{}, 3)
	cancelled := make(chan struct{}, 3)
	release := make(chan struct{})
	for _, name := range []string{"a", "b", "c"} {
		g.Go(name, func(ctx context.Context) {
			started <- struct{}{}
			<-ctx.Done()
			cancelled <- struct{}{}
			<-release // held after the cancel: Stop must wait
			mu.Lock()
			returned[name] = true
			mu.Unlock()
		})
	}
	for range 3 {
		<-started
	}
	if got := g.Running(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("running %q, want a, b, c", got)
	}
	stopped := make(chan struct{})
	go func() { defer close(stopped); g.Stop() }()
	for range 3 {
		<-cancelled
	}
	select {
	case <-stopped:
		t.Fatal("Stop returned while its loops were held")
	case <-g.Done():
		t.Fatal("Done closed while loops were held")
	default:
	}
	close(release)
	wait(t, stopped, "Stop returned")
	mu.Lock()
	defer mu.Unlock()
	if len(returned) != 3 {
		t.Fatalf("Stop returned before every loop did; returned: %v", returned)
	}
	wait(t, g.Done(), "Done closed")
}

// Once stopped, a group starts nothing.
func TestGoAfterStopStartsNothing(t *testing.T) {
	g := startstop.New(context.Background(), hclog.NewNullLogger(), 0)
	g.Stop()
	hold := make(chan struct{})
	defer close(hold)
	// Had it started, the loop would stay running (it waits for hold), and
	// show in Running.
	if g.Go("late", func(context.Context) { <-hold }) {
		t.Fatal("Go reported a loop started after Stop")
	}
	if got := g.Running(); len(got) != 0 {
		t.Fatalf("running %q after Stop", got)
	}
}

// A loop can cancel its own group (it could not Stop it: it would wait for
// itself); Done is closed once the last loop returned.
func TestALoopCancelsItsOwnGroup(t *testing.T) {
	g := startstop.New(context.Background(), hclog.NewNullLogger(), 0)
	other := make(chan struct{})
	g.Go("other", func(ctx context.Context) { <-ctx.Done(); close(other) })
	g.Go("canceller", func(context.Context) { g.Cancel() })
	wait(t, other, "the other loop's context ended")
	wait(t, g.Done(), "Done closed")
}

// A loop that does not return within the slow-stop bound is named in the
// log, and Stop waits for it.
func TestSlowStopNamesTheLoop(t *testing.T) {
	var out logBuffer
	g := startstop.New(context.Background(), newLog(&out), 20*time.Millisecond)
	release := make(chan struct{})
	g.Go("stubborn", func(context.Context) { <-release })
	g.Go("prompt", func(ctx context.Context) { <-ctx.Done() })
	stopped := make(chan struct{})
	go func() { defer close(stopped); g.Stop() }()
	tst.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(out.String(), "loops still running after stop")
	}, "the slow-stop warning")
	select {
	case <-stopped:
		t.Fatal("Stop returned while a loop was running")
	default:
	}
	close(release)
	wait(t, stopped, "Stop returned")
	log := out.String()
	if !strings.Contains(log, "stubborn") || strings.Contains(log, "prompt") {
		t.Fatalf("log %q: want the stubborn loop named, and only it", log)
	}
}

const panicChild = "STARTSTOP_PANIC_CHILD"

// runPanickingLoop is the child process of TestPanicNamesTheLoop.
func runPanickingLoop() {
	g := startstop.New(context.Background(), hclog.New(&hclog.LoggerOptions{Output: os.Stderr}), 0)
	g.Go("exploding", func(context.Context) { panic("boom") })
	<-g.Done() // never: the panic ends the process
}

// A loop's panic is logged with the loop's name, then goes on (the process
// dies of it, as it would without the group).
func TestPanicNamesTheLoop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), panicChild+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child exited cleanly; output:\n%s", out)
	}
	s := string(out)
	if !strings.Contains(s, "loop panicked") || !strings.Contains(s, "loop=exploding") || !strings.Contains(s, "panic: boom") {
		t.Fatalf("output does not name the loop and its panic:\n%s", s)
	}
}

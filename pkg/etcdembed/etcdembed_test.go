package etcdembed_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskd/taskd/pkg/etcdembed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A second server on a data dir in use fails at once with a clear error,
// where etcd itself would block forever on bbolt's lock; the dir is usable
// again once the first server closes.
func TestDataDirLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if !errors.Is(err, etcdembed.ErrDirInUse) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second start: %v, want ErrDirInUse naming %s", err, dir)
	}
	if !strings.HasPrefix(first.ClientURL(), "http://127.0.0.1:") || strings.HasSuffix(first.ClientURL(), ":0") {
		t.Errorf("client URL %q: want the real port", first.ClientURL())
	}
	first.Close()
	first.Close() // idempotent
	again, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatalf("restart on the freed dir: %v", err)
	}
	again.Close()
}

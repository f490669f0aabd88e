package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// measureStartup starts the taskd binary on an empty data dir (embedded
// etcd) and returns the time from exec to its /healthz answering 200, which
// it does only once the node is RUNNING. It then stops it with SIGTERM.
func measureStartup(bin string) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "taskbench-startup-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	ports := make([]string, 3)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		ports[i] = l.Addr().String()
		l.Close()
	}
	cmd := exec.Command(bin, "--name", "startup", "--data-dir", filepath.Join(dir, "data"),
		"--listen", ports[0], "--http", ports[1], "--etcd-listen", "http://"+ports[2], "--log-level", "warn")
	cmd.Stderr = os.Stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", bin, err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	deadline := began.Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://" + ports[1] + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(began), nil
			}
		}
		time.Sleep(2 * time.Millisecond) // polling interval of the measurement
	}
	return 0, fmt.Errorf("%s not RUNNING within a minute", bin)
}

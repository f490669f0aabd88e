package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file starts and stops the stores the peers run on, each a real
// server process in a directory of its own: PostgreSQL for River, Redis for
// asynq, and the peer binary's etcd 3.5 for go-etcd-cron.

type postgres struct {
	bin, dir, dsn string
	asUser        []string // runuser prefix when running as root
}

// postgresBin finds the newest installed PostgreSQL's binaries.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL is not installed (no initdb; bench/peers/install-stores installs it)")
}

// startPostgres initialises a cluster in dir and starts it on a unix
// socket in dir, fsync on. As root it runs as the postgres user, since
// initdb refuses root.
func startPostgres(ctx context.Context, dir string) (*postgres, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	pg := &postgres{bin: bin, dir: dir}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		pg.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	data := filepath.Join(dir, "data")
	if out, err := pg.run(ctx, "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, tail(out))
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c max_connections=300 -c fsync=on -c synchronous_commit=on -c shared_buffers=256MB -c log_min_duration_statement=2000 -c log_lock_waits=on -c deadlock_timeout=1s", dir)
	if out, err := pg.run(ctx, "pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v: %s", err, tail(out))
	}
	pg.dsn = fmt.Sprintf("host=%s user=postgres dbname=postgres", dir)
	return pg, nil
}

func (pg *postgres) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	argv := append(append(append([]string(nil), pg.asUser...), filepath.Join(pg.bin, prog)), args...)
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = pg.dir
	return cmd.CombinedOutput()
}

func (pg *postgres) stop() {
	if out, err := pg.run(context.Background(), "pg_ctl", "-D", filepath.Join(pg.dir, "data"), "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		fmt.Fprintf(os.Stderr, "taskbench -peers: pg_ctl stop: %v: %s\n", err, tail(out))
	}
}

type redisServer struct {
	socket string
	cmd    *exec.Cmd
	done   chan error
}

// startRedis starts redis-server on a unix socket in dir with an
// append-only file fsynced as fsync says, and waits until it answers.
func startRedis(ctx context.Context, dir, fsync string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not installed (bench/peers/install-stores installs it)")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	rd := &redisServer{socket: filepath.Join(dir, "redis.sock"), done: make(chan error, 1)}
	rd.cmd = exec.Command(bin, "--port", "0", "--unixsocket", rd.socket, "--dir", dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", fsync, "--daemonize", "no", "--logfile", filepath.Join(dir, "log"))
	if err := rd.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { rd.done <- rd.cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if c, err := net.DialTimeout("unix", rd.socket, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, werr := c.Write([]byte("PING\r\n"))
			line, rerr := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if werr == nil && rerr == nil && strings.HasPrefix(line, "+PONG") {
				return rd, nil
			}
		}
		select {
		case <-tick.C:
		case err := <-rd.done:
			return nil, fmt.Errorf("redis-server exited: %v", err)
		case <-deadline:
			rd.stop()
			return nil, errors.New("redis-server not answering after 30 s")
		case <-ctx.Done():
			rd.stop()
			return nil, ctx.Err()
		}
	}
}

func (rd *redisServer) stop() { stopProcess(rd.cmd, rd.done) }

// stopProcess sends SIGTERM and waits (SIGKILL after 30 s).
func stopProcess(cmd *exec.Cmd, done chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// startEtcd35 runs the peer binary's etcd 3.5 server and waits for its
// "ready <URL>" line.
func startEtcd35(ctx context.Context, bin, dir string) (string, func(), error) {
	cmd := exec.Command(bin, "-serve", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- u
			}
		}
		close(ready)
	}()
	done := make(chan error, 1)
	stop := func() { stopProcess(cmd, done) }
	select {
	case u, ok := <-ready:
		go func() { done <- cmd.Wait() }()
		if !ok {
			<-done
			return "", nil, fmt.Errorf("etcd 3.5 exited: %s", tail(stderr.Bytes()))
		}
		return u, stop, nil
	case <-time.After(time.Minute):
		go func() { done <- cmd.Wait() }()
		stop()
		return "", nil, errors.New("etcd 3.5 not ready after a minute")
	case <-ctx.Done():
		go func() { done <- cmd.Wait() }()
		stop()
		return "", nil, ctx.Err()
	}
}

// Command etcd is the etcd server, built from the etcd server module pinned
// in go.mod (go.etcd.io/etcd/server/v3), so that the compose cluster and the
// tests run a real multi-member etcd of exactly the version taskd is built
// against, with etcd's own flags (--name, --initial-cluster, ...). It adds
// nothing: it is etcd's own entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

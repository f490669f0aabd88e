package taskservice_test

import (
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func clientWithPrefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }

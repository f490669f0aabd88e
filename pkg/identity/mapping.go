package identity

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/keyspace"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Owner is an identity's mapping as read at one revision.
type Owner struct {
	Identity    string
	Mapped      bool
	Node        string
	Incarnation string
	// Epoch is the mapping record's mod revision: it changes on every move.
	Epoch int64
}

// Map reads and changes mappings. Every call takes the caller's context,
// which must carry a deadline (etcd calls without one can block forever).
type Map struct {
	cli  *clientv3.Client
	keys keyspace.Keys
}

// NewMap returns a Map over cli under keys (their mapping, ownership index
// and status keys).
func NewMap(cli *clientv3.Client, keys keyspace.Keys) *Map { return &Map{cli: cli, keys: keys} }

// Keys returns the map's key layout.
func (m *Map) Keys() keyspace.Keys { return m.keys }

// Get reads id's owner.
func (m *Map) Get(ctx context.Context, id string) (Owner, error) {
	resp, err := m.cli.Get(ctx, m.keys.Mapping(id))
	if err != nil {
		return Owner{}, fmt.Errorf("read mapping of %q: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return Owner{Identity: id}, nil
	}
	return decodeOwner(id, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// OwnerFromResponse decodes the mapping of id from a Get response that a
// caller ran inside a larger Txn; ok is false when id is unmapped.
func OwnerFromResponse(id string, rr *clientv3.GetResponse) (Owner, error) {
	if rr == nil || len(rr.Kvs) == 0 {
		return Owner{Identity: id}, nil
	}
	return decodeOwner(id, rr.Kvs[0].Value, rr.Kvs[0].ModRevision)
}

func decodeOwner(id string, value []byte, modRev int64) (Owner, error) {
	var rec storev1.Mapping
	if err := proto.Unmarshal(value, &rec); err != nil {
		return Owner{}, fmt.Errorf("decode mapping of %q: %w", id, err)
	}
	return Owner{Identity: id, Mapped: true, Node: rec.Node, Incarnation: rec.Incarnation, Epoch: modRev}, nil
}

// Fence is the compare that holds only while id is still mapped with epoch.
// Put it in the same Txn as any write that must come from the owner.
func (m *Map) Fence(id string, epoch int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(m.keys.Mapping(id)), "=", epoch)
}

// Unmapped is the compare that holds only while id has no mapping.
func (m *Map) Unmapped(id string) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(m.keys.Mapping(id)), "=", 0)
}

// ListOwned returns the identities in node's ownership index. The index may
// name an identity that has since moved: callers confirm with Get.
func (m *Map) ListOwned(ctx context.Context, node string) ([]string, error) {
	prefix := m.keys.OwnedPrefix(node)
	var ids []string
	key := prefix
	end := clientv3.GetPrefixRangeEnd(prefix)
	for {
		resp, err := m.cli.Get(ctx, key, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1000))
		if err != nil {
			return nil, fmt.Errorf("list identities of node %s: %w", node, err)
		}
		for _, kv := range resp.Kvs {
			id, err := keyspace.Decode(strings.TrimPrefix(string(kv.Key), prefix))
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return ids, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// CountOwned counts the identities in node's ownership index.
func (m *Map) CountOwned(ctx context.Context, node string) (int64, error) {
	resp, err := m.cli.Get(ctx, m.keys.OwnedPrefix(node), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("count identities of node %s: %w", node, err)
	}
	return resp.Count, nil
}

package client

import (
	"context"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Nodes returns the cluster's registered nodes by name.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var nodes []Node
	err := c.call(ctx, "Nodes", idempotent, func(ctx context.Context, api taskdv1.TaskServiceClient) error {
		resp, err := api.ListNodes(ctx, &taskdv1.ListNodesRequest{})
		nodes = nodes[:0]
		for _, n := range resp.GetNodes() {
			nodes = append(nodes, nodeFromProto(n))
		}
		return err
	})
	return nodes, err
}

// Identity returns where an identity is mapped and how many tasks it has.
func (c *Client) Identity(ctx context.Context, identity string) (*Identity, error) {
	var id *Identity
	err := c.call(ctx, "Identity", idempotent, func(ctx context.Context, api taskdv1.TaskServiceClient) error {
		resp, err := api.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: identity})
		id = identityFromProto(resp.GetIdentity())
		return err
	})
	return id, err
}

// Move moves an identity to another RUNNING node and returns it with its
// new owner and epoch. Moving it where it already is changes nothing, so
// the call is retried safely.
func (c *Client) Move(ctx context.Context, identity, toNode string) (*Identity, error) {
	var id *Identity
	err := c.call(ctx, "Move", idempotent, func(ctx context.Context, api taskdv1.TaskServiceClient) error {
		resp, err := api.MoveIdentity(ctx, &taskdv1.MoveIdentityRequest{Identity: identity, ToNode: toNode})
		id = identityFromProto(resp.GetIdentity())
		return err
	})
	return id, err
}

// Drain asks a node to drain: it stops starting runs, waits for the runs
// in flight, hands its identities to other RUNNING nodes and stops. It
// returns the node as it stood when the request was recorded.
func (c *Client) Drain(ctx context.Context, node string) (*Node, error) {
	var n *Node
	err := c.call(ctx, "Drain", idempotent, func(ctx context.Context, api taskdv1.TaskServiceClient) error {
		resp, err := api.DrainNode(ctx, &taskdv1.DrainNodeRequest{Node: node})
		if err == nil {
			nn := nodeFromProto(resp.GetNode())
			n = &nn
		}
		return err
	})
	return n, err
}

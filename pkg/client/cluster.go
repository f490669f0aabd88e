package client

import (
	"context"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Nodes returns the cluster's registered nodes by name.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	return send(ctx, c, "Nodes", idempotent, taskdv1.TaskServiceClient.ListNodes, &taskdv1.ListNodesRequest{},
		func(resp *taskdv1.ListNodesResponse) []Node { return each(resp.GetNodes(), nodeFromProto) })
}

// Identity returns where an identity is mapped and how many tasks it has.
func (c *Client) Identity(ctx context.Context, identity string) (*Identity, error) {
	return send(ctx, c, "Identity", idempotent, taskdv1.TaskServiceClient.GetIdentity,
		&taskdv1.GetIdentityRequest{Identity: identity}, identityOf)
}

// Move moves an identity to another RUNNING node and returns it with its
// new owner and epoch. Moving it where it already is changes nothing, so
// the call is retried safely.
func (c *Client) Move(ctx context.Context, identity, toNode string) (*Identity, error) {
	return send(ctx, c, "Move", idempotent, taskdv1.TaskServiceClient.MoveIdentity,
		&taskdv1.MoveIdentityRequest{Identity: identity, ToNode: toNode}, identityOf)
}

// Drain asks a node to drain: it stops starting runs, waits for the runs
// in flight, hands its identities to other RUNNING nodes and stops. It
// returns the node as it stood when the request was recorded.
func (c *Client) Drain(ctx context.Context, node string) (*Node, error) {
	return send(ctx, c, "Drain", idempotent, taskdv1.TaskServiceClient.DrainNode, &taskdv1.DrainNodeRequest{Node: node},
		func(resp *taskdv1.DrainNodeResponse) *Node {
			if resp == nil {
				return nil
			}
			n := nodeFromProto(resp.GetNode())
			return &n
		})
}

// identityOf is the identity of a response that holds one.
func identityOf[R interface{ GetIdentity() *taskdv1.Identity }](r R) *Identity {
	return identityFromProto(r.GetIdentity())
}

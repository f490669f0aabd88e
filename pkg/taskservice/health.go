package taskservice

import (
	"fmt"
	"strings"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Health reports whether the node serves: it is RUNNING and not
// self-fenced, i.e. its last acknowledged lease renewal was sent within two
// thirds of the lease TTL, so it may start runs. While it does not serve,
// reason says why (the state, or when the last renewal was acknowledged);
// while it serves, reason is "RUNNING".
func (n *Node) Health() (serving bool, reason string) {
	n.d.Lock()
	state := n.d.Phase.State
	renewed, fresh := n.member.Renewal()
	n.d.Unlock()
	name := strings.TrimPrefix(state.String(), "NODE_STATE_")
	if state != taskdv1.NodeState_NODE_STATE_RUNNING {
		return false, name
	}
	if !fresh {
		return false, fmt.Sprintf("%s but self-fenced: the node lease (TTL %s) was last renewed %s ago (renewal sent at %s); "+
			"runs start again once etcd acknowledges a renewal",
			name, n.cfg.LeaseTTL, time.Since(renewed).Round(time.Millisecond), renewed.UTC().Format(time.RFC3339Nano))
	}
	return true, name
}

package render

import (
	"io"
	"strconv"
	"strings"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file renders what the cluster holds beside tasks: nodes,
// identities, pauses and tokens.

// WriteNodesTable writes nodes as a table: name (with "*" for the
// placement leader), state, address, incarnation, dispatch start, lease
// time left, identities owned, kinds (its handlers' and its workers').
func WriteNodesTable(w io.Writer, nodes []*taskdv1.Node) error {
	tw := newTable(w)
	row(tw, "NAME", "STATE", "ADDRESS", "INCARNATION", "DISPATCH START", "LEASE", "IDENTITIES", "KINDS")
	for _, n := range nodes {
		name, lease, kinds := n.GetName(), "-", "-"
		if n.GetLeader() {
			name += "*"
		}
		if n.GetLeaseRemaining() != nil {
			lease = n.GetLeaseRemaining().AsDuration().String()
		}
		if len(n.GetKinds()) > 0 {
			kinds = strings.Join(n.GetKinds(), ",")
		}
		row(tw, name, nodeStateName(n.GetState()), n.GetAddress(), n.GetIncarnation(),
			Time(n.GetDispatchStart()), lease, strconv.FormatInt(n.GetIdentitiesOwned(), 10), kinds)
	}
	return tw.Flush()
}

// WriteIdentityTable writes an identity as a one-row table: identity,
// mapped, node, epoch, tasks.
func WriteIdentityTable(w io.Writer, id *taskdv1.Identity) error {
	tw := newTable(w)
	row(tw, "IDENTITY", "MAPPED", "NODE", "EPOCH", "TASKS", "STATUS")
	status := "-"
	if id.GetStatusNode() != "" {
		status = "inactive"
		if id.GetActive() {
			status = "active"
		}
		status += "@" + id.GetStatusNode()
	}
	row(tw, id.GetIdentity(), yesNo(id.GetMapped()), id.GetNode(), strconv.FormatInt(id.GetEpoch(), 10),
		strconv.FormatInt(id.GetTaskCount(), 10), status)
	return tw.Flush()
}

// WritePausesTable writes identity and kind pauses as a table: what is
// paused (identity or kind), its name, since when.
func WritePausesTable(w io.Writer, pauses []*taskdv1.Pause) error {
	tw := newTable(w)
	row(tw, "PAUSED", "NAME", "SINCE")
	for _, p := range pauses {
		what, name := "identity", p.GetIdentity()
		if p.GetKind() != "" {
			what, name = "kind", p.GetKind()
		}
		row(tw, what, name, Time(p.GetSince()))
	}
	return tw.Flush()
}

// WriteTokensTable writes tokens as a table: id, source (etcd or file),
// verbs, identities ("*": all), created, by whom, description.
func WriteTokensTable(w io.Writer, toks []*taskdv1.Token) error {
	tw := newTable(w)
	row(tw, "ID", "SOURCE", "VERBS", "IDENTITIES", "CREATED", "BY", "DESCRIPTION")
	for _, t := range toks {
		ids := "*"
		if len(t.GetIdentities()) > 0 {
			ids = strings.Join(t.GetIdentities(), ",")
		}
		row(tw, t.GetId(), strings.ToLower(strings.TrimPrefix(t.GetSource().String(), "TOKEN_SOURCE_")),
			strings.Join(t.GetVerbs(), ","), ids, Time(t.GetCreatedAt()), t.GetCreatedBy(), t.GetDescription())
	}
	return tw.Flush()
}

package taskservice

import (
	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/localrefs"
	"github.com/taskd/taskd/internal/membership"
	"github.com/taskd/taskd/internal/ownership"
	"github.com/taskd/taskd/internal/startstop"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/pending"
)

// runPath is the node's run path, one type for the three scopes: the
// fenced start of a due entry the dispatcher hands it (start.go, through
// dispatch.Runner: nodeRuns), the handler's call and the commit of its
// result (run.go), the run markers of runs cut short (markers.go), an
// overlapping run's shadow (overlap.go), and each scope's writes behind one
// interface (scope.go). It tells the listeners what happened (emit).
//
// Lock: none of its own; what it changes in the node's entries it changes
// under the engine lock (the dispatcher's), never across an etcd call.
type runPath struct {
	cfg         Config
	log         hclog.Logger
	incarnation string
	d           *dispatch.Dispatcher
	member      *membership.Member
	writes      writepath.Path
	life        *startstop.Lifecycle
	followers   *followers
	own         *ownership.Holder
	keys        keyspace.Keys
	refs        *localrefs.Refs
	ids         *pending.IDSource
}

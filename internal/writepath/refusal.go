package writepath

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Refusal is what a fenced write whose compares failed read in its Else:
// each field is the read of one key the write compared, nil when the
// write's shape does not read it. The shape that built the Txn knows which
// Else response is which, so no caller counts Else indexes.
type Refusal struct {
	Mapping       *clientv3.GetResponse // the identity's mapping (its epoch)
	Task          *clientv3.GetResponse // the task's record
	Registration  *clientv3.GetResponse // this node's registration
	PauseIdentity *clientv3.GetResponse // the identity's pause
	PauseKind     *clientv3.GetResponse // the kind's pause
	Shared        *clientv3.GetResponse // an EVERY_NODE task's shared record
	Calendar      *clientv3.GetResponse // a calendar
	CalendarUser  *clientv3.GetResponse // one of a calendar's users (keys only)
}

// read names what one Else operation of a shape reads.
type read uint8

const (
	readMapping read = iota + 1
	readTask
	readRegistration
	readPauseIdentity
	readPauseKind
	readShared
	readCalendar
	readCalendarUser
)

// Refusal names the Else responses els of t.
func (t Txn) Refusal(els []*etcdserverpb.ResponseOp) Refusal {
	var r Refusal
	fields := r.fields()
	for i, what := range t.reads {
		if i >= len(els) {
			break
		}
		*fields[what] = (*clientv3.GetResponse)(els[i].GetResponseRange())
	}
	return r
}

// fields are r's fields by what they hold.
func (r *Refusal) fields() [readCalendarUser + 1]**clientv3.GetResponse {
	return [...]**clientv3.GetResponse{
		readMapping: &r.Mapping, readTask: &r.Task, readRegistration: &r.Registration,
		readPauseIdentity: &r.PauseIdentity, readPauseKind: &r.PauseKind, readShared: &r.Shared,
		readCalendar: &r.Calendar, readCalendarUser: &r.CalendarUser,
	}
}

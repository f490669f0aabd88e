package keyspace

import (
	"fmt"
	"strings"
)

// The keys every node follows: the pauses, the stored tokens, the calendars
// and their references.

// Pauses is the prefix of the identity and kind pauses in force: pause/
// (taskdv1.Pause values); every node follows it.
func (k Keys) Pauses() string { return k.prefix + "pause/" }

// PauseIdentity is the key whose presence pauses every task of an
// identity: pause/identity/<identity>. A start of one of its tasks
// compares that it is absent.
func (k Keys) PauseIdentity(id string) string {
	return k.prefix + "pause/identity/" + Encode(id)
}

// PauseKind is the key whose presence pauses every task of a kind:
// pause/kind/<kind>, the kind escaped as identities are.
func (k Keys) PauseKind(kind string) string { return k.prefix + "pause/kind/" + Encode(kind) }

// SplitPause parses a pause key: exactly one of id and kind is set.
func (k Keys) SplitPause(key string) (id, kind string, err error) {
	rest, ok := strings.CutPrefix(key, k.Pauses())
	if !ok {
		return "", "", fmt.Errorf("key %q is not a pause key", key)
	}
	if enc, ok := strings.CutPrefix(rest, "identity/"); ok {
		id, err = Decode(enc)
		return id, "", err
	}
	if enc, ok := strings.CutPrefix(rest, "kind/"); ok {
		kind, err = Decode(enc)
		return "", kind, err
	}
	return "", "", fmt.Errorf("key %q is not a pause key", key)
}

// Tokens is the prefix of the bearer tokens stored in etcd: token/
// (storev1.TokenRecord values); every node that checks tokens follows it.
func (k Keys) Tokens() string { return k.prefix + "token/" }

// Token is the key of the stored token id: token/<id> (ids are letters,
// digits, _ and -, so they need no encoding).
func (k Keys) Token(id string) string { return k.prefix + "token/" + id }

// Calendars is the prefix of the stored calendars: cal/ (taskdv1.Calendar
// values); every node follows it.
func (k Keys) Calendars() string { return k.prefix + "cal/" }

// Calendar is the key of one calendar: cal/<name>, the name escaped as
// identities are.
func (k Keys) Calendar(name string) string { return k.prefix + "cal/" + Encode(name) }

// SplitCalendar parses a calendar key into its name.
func (k Keys) SplitCalendar(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, k.Calendars())
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", fmt.Errorf("key %q is not a calendar key", key)
	}
	return Decode(rest)
}

// CalendarUsers is the prefix of the references to calendar name,
// calref/<name>/: one key per task that lists it (CalendarTaskRef, or
// CalendarLocalRef for a non-durable task) and per calendar based on it
// (CalendarBaseRef). A calendar is deleted only while it has none.
func (k Keys) CalendarUsers(name string) string {
	return k.prefix + "calref/" + Encode(name) + "/"
}

// CalendarTaskRef is the reference of task taskID of identity id to
// calendar name, written and removed with the task:
// calref/<name>/t/<identity>/<task-id> (empty).
func (k Keys) CalendarTaskRef(name, id, taskID string) string {
	return k.CalendarUsers(name) + "t/" + Encode(id) + "/" + taskID
}

// CalendarLocalRef is the reference of non-durable task taskID of
// identity id, held by node, to calendar name:
// calref/<name>/n/<node>/<identity>/<task-id> (empty). It is written under
// the node's lease, so it ends with the node if the task does not end
// first.
func (k Keys) CalendarLocalRef(name, node, id, taskID string) string {
	return k.CalendarUsers(name) + "n/" + node + "/" + Encode(id) + "/" + taskID
}

// CalendarBaseRef is the reference of calendar user to its base name:
// calref/<name>/c/<user> (empty).
func (k Keys) CalendarBaseRef(name, user string) string {
	return k.CalendarUsers(name) + "c/" + Encode(user)
}

// Package eventhub serves a node's WatchEvents streams: it derives the
// events of the client event stream from the writes of the task records
// themselves (derive.go, diff.go), reads them with the node's one etcd
// watch of its key prefix (the Hub), and gives each stream its bounded
// buffer (a subscriber), filled by the Hub or, for a stream that starts
// from an old cursor, by its own catch-up watch until it joins the Hub
// (catchup.go).
//
// Nothing here waits for a stream's reader: a stream whose reader falls
// more than its buffer behind is ended with the cursor to resume from
// (ErrReaderBehind), so etcd's client, which buffers a watch's responses
// without limit, holds next to nothing for a reader that stopped.
//
// Lock: Hub.mu guards the Hub's subscribers and its position; each
// subscriber's mu guards its buffers. Hub.mu is taken before a
// subscriber's mu, never the other way (the Hub offers and ends its
// subscribers under its own lock).
package eventhub

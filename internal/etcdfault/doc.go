// Package etcdfault injects faults into single calls of an etcd client, for
// tests: a chosen call can fail without reaching etcd, be delayed before or
// after it is applied, have its reply replaced by an error although it was
// applied (an ambiguous outcome), or block until its caller gives up. Watch
// events can be dropped or delayed, and a watch can be broken.
//
// A test owns an *clientv3.Client, calls Injector.Wrap on it (which replaces
// the client's KV, Lease and Watcher), and adds Rules that choose calls by
// operation, key prefix and count. Calls that no rule harms go to etcd
// unchanged. The package is for tests only: nothing in a server build uses
// it unless built with a fault-injection tag.
package etcdfault

// Package integration holds end-to-end tests of taskd: they build the taskd
// and taskctl binaries once, start real taskd processes (each with its own
// embedded etcd and data directory) on free loopback ports, talk to them over
// real gRPC, and crash them with SIGKILL. It has no non-test code.
//
// Run with:
//
//	go test ./integration/
package integration

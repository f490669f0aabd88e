// Package chaos is a seeded, bounded chaos suite over real processes: a
// three-member etcd cluster and several taskd processes, a workload through
// the gRPC API, faults by real signals (SIGKILL, SIGSTOP, SIGTERM) to taskd
// and etcd members, and a checker that reads the handlers' shared log and
// the run histories and counts what must never happen.
//
// Its test files carry the build tag chaos, so `go test ./...` does not
// build them. Run it with `make chaos-short` or `make chaos`, or
//
//	go test -tags chaos ./integration/chaos -run TestChaos -args -chaos.seed 7
//
// docs/testing.md says what it checks and how to read its report.
package chaos

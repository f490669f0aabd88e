// Package compose tests the docker-compose cluster of deploy/compose for
// real: it builds the images (make image), starts 3 etcd members, 3 taskd
// nodes and the demo handler, schedules periodic tasks across identities
// through two nodes, then kills, partitions and restarts nodes and stops an
// etcd member, and checks the run histories: nothing lost, no run number
// committed twice, no run started on a partitioned node after its lease.
//
// Its test files carry the build tag compose, so `go test ./...` does not
// build them. Run it with `make cluster-test`. Without a Docker engine that
// answers, it skips with the reason (and .ci/run fails if Docker is there
// and it skipped). It publishes the same host ports as `make cluster-up`:
// stop that cluster first.
package compose

# taskd: build, test, generate, lint, run, bench.
GO ?= go
export GOFLAGS ?= -buildvcs=false

# Docker: the classic builder works everywhere (BuildKit is optional).
DOCKER ?= docker
export DOCKER_BUILDKIT ?= 0
# docker-compose v1 where it is installed, else the compose plugin.
COMPOSE ?= $(shell command -v docker-compose >/dev/null 2>&1 && echo docker-compose || echo docker compose)
COMPOSE_PROJECT ?= taskd
COMPOSE_ARGS := -p $(COMPOSE_PROJECT) -f deploy/compose/docker-compose.yml

.PHONY: image cluster-certs cluster-up cluster-down cluster-test build certs test generate check-generated lint run bench bench-long bench-scale bench-peers bench-go chaos chaos-short fuzz fuzz-short clean

build: ## build taskd, taskctl, taskbench and etcd into bin/
	$(GO) build -o bin/ ./cmd/...

CERTS_DIR ?= deploy/certs

certs: ## a development CA and certificates for taskd nodes, etcd members and taskctl in $(CERTS_DIR) (Go's crypto, no openssl)
	$(GO) run ./deploy/certgen -out $(CERTS_DIR)

test: ## the whole test suite with the race detector (the README's test command)
	$(GO) test -race -count=1 ./...

generate: ## regenerate the protobuf code (buf with the pinned local plugins)
	$(GO) tool buf generate
	python/generate.sh

check-generated: generate ## fail if the committed generated code is not current
	git diff --exit-code -- proto/ python/

lint: ## buf lint, gofmt, go vet, staticcheck
	$(GO) tool buf lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-clean:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# make run's demo handler; any TASKD_EXEC or TASKD_EXEC_<NAME> variable in
# the environment replaces it (TASKD_EXEC='mykind=./handler.sh' make run).
RUN_EXEC = $(if $(filter TASKD_EXEC%,$(.VARIABLES)),,--exec 'demo=echo "hello $$TASKD_IDENTITY: run $$TASKD_RUN, fence $$TASKD_FENCE, payload $$(cat)"')

run: ## run one node on the embedded etcd, with a demo exec handler (or your TASKD_EXEC)
	$(GO) run ./cmd/taskd --data-dir ./taskd-data $(RUN_EXEC)

bench: ## short benchmark (about a minute on 2 cores), writes bench/results/latest.json
	$(GO) build -o bin/ ./cmd/taskd ./cmd/taskbench
	bin/taskbench -taskd bin/taskd -out bench/results/latest.json

bench-scale: ## 2, 5 and 10 in-process nodes sharing 100,000 identities; the busiest dies; writes bench/results/scale.json
	$(GO) build -o bin/ ./cmd/taskbench
	bin/taskbench -skip schedule,e2e,lag,memory,relocation -scale 2,5,10x100000 -out bench/results/scale.json

bench-long: ## the scale run: 1,000,000 pending tasks for 100,000 identities
	$(GO) build -o bin/ ./cmd/taskd ./cmd/taskbench
	bin/taskbench -taskd bin/taskd -long -out bench/results/long.json

bench-peers: ## taskd beside River, asynq and go-etcd-cron in one run (under 10 minutes), writes bench/results/peers.json
	bench/peers/install-stores
	$(GO) build -o bin/ ./cmd/taskbench
	bin/taskbench -peers -out bench/results/peers.json

bench-go: ## Go benchmarks of the hot paths
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

SEED ?= 0
DURATION ?= 10m
FAULTS ?= 240
TXNFAULTS ?=

chaos: ## the chaos suite: 3 etcd members, 4 taskd, $(FAULTS) faults over $(DURATION) (SEED=0: from the clock)
	$(GO) test -tags chaos -count=1 -timeout 0 -v -run '^TestChaos$$' ./integration/chaos \
		-args -chaos.seed $(SEED) -chaos.duration $(DURATION) -chaos.faults $(FAULTS) \
		-chaos.nodes 4 -chaos.identities 500 -chaos.settle 5m -chaos.txnfaults '$(TXNFAULTS)'

chaos-short: ## a seeded chaos run under two minutes: 3 taskd, 20 faults over 45 s
	$(GO) test -tags chaos -count=1 -timeout 5m -v -run '^(TestChecker.*|TestChaos)$$' ./integration/chaos \
		-args -chaos.seed $(if $(filter 0,$(SEED)),1,$(SEED)) -chaos.duration 45s -chaos.faults 20 \
		-chaos.nodes 3 -chaos.identities 300 -chaos.txnfaults '$(TXNFAULTS)'

FUZZTIME ?= 60s

fuzz-short: ## every fuzz target for 10s each (the list is in .ci/fuzz)
	.ci/fuzz 10s

fuzz: ## every fuzz target for FUZZTIME each (default 60s)
	.ci/fuzz $(FUZZTIME)

clean:
	rm -rf bin taskd-data

IMAGE_CONTEXT := bin/image

# Prometheus is built from its own module (deploy/prometheus/go.mod pins it),
# so that its dependencies never mix with taskd's.
image: ## build the images taskd:dev, taskd-etcd:dev, taskd-demo-handler:dev and taskd-prometheus:dev FROM scratch
	rm -rf $(IMAGE_CONTEXT)
	mkdir -p $(IMAGE_CONTEXT)/empty-dir
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags='-s -w' -o $(IMAGE_CONTEXT)/ \
		./cmd/taskd ./cmd/taskctl ./cmd/etcd ./deploy/compose/handler
	cd deploy/prometheus && CGO_ENABLED=0 GOOS=linux $(GO) build -tags remove_all_sd -trimpath -ldflags='-s -w' \
		-o ../../$(IMAGE_CONTEXT)/prometheus github.com/prometheus/prometheus/cmd/prometheus
	$(DOCKER) build -q -f deploy/images/taskd.Dockerfile -t taskd:dev $(IMAGE_CONTEXT)
	$(DOCKER) build -q -f deploy/images/etcd.Dockerfile -t taskd-etcd:dev $(IMAGE_CONTEXT)
	$(DOCKER) build -q -f deploy/images/handler.Dockerfile -t taskd-demo-handler:dev $(IMAGE_CONTEXT)
	$(DOCKER) build -q -f deploy/images/prometheus.Dockerfile -t taskd-prometheus:dev $(IMAGE_CONTEXT)
	@$(DOCKER) images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^taskd(-etcd|-demo-handler|-prometheus)?:dev '

# The compose file mounts deploy/certs (whatever CERTS_DIR says). The etcd and
# taskd keys are made readable by all (not the CA key): the containers run as
# a non-root user id that does not own the host's files, and these are
# development certificates.
cluster-certs: ## the development certificates the compose cluster mounts, written if missing
	test -f deploy/certs/ca.crt || $(MAKE) certs CERTS_DIR=deploy/certs
	chmod a+r deploy/certs/etcd-*.key deploy/certs/taskd-*.key

cluster-up: image cluster-certs ## start the compose cluster (3 etcd, 3 taskd, the demo handler) and wait until every taskd serves
	$(COMPOSE) $(COMPOSE_ARGS) up -d
	deploy/compose/wait-healthy $(COMPOSE) $(COMPOSE_ARGS)

cluster-down: ## stop the compose cluster and delete its volumes
	$(COMPOSE) $(COMPOSE_ARGS) down -v

cluster-test: cluster-certs ## the compose cluster test: faults on a real compose cluster (needs Docker; stop cluster-up's first)
	$(GO) test -tags compose -count=1 -timeout 10m -v -run '^TestCompose$$' ./integration/compose

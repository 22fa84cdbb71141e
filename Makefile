# computedomain-operator Makefile.
#
# Everything a target needs is installed into bin/ at pinned versions from the Go module proxy, so a fresh
# machine with Go 1.26 runs `make demo` and `make test` with nothing else installed.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := build

ROOT := $(abspath .)
BIN := $(ROOT)/bin
export GOBIN := $(BIN)
# go-nvml's cgo bindings use deprecated NVML declarations on purpose (they bind every API version).
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

# Pinned tool versions. kube-apiserver and etcd come from the e2e module's go.mod (tool directives), so the
# versions below only name the build stamps; bump them together with e2e/go.mod.
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION ?= v3.22.0
KIND_VERSION ?= v0.33.0
KUBE_VERSION ?= v1.37.2
ETCD_VERSION ?= v3.7.0
# Kueue's controller for the e2e/kueue suite, built from its own module (it pins other k8s.io versions than ours,
# so it is never a dependency of our modules); bump together with KueueVersion in e2e/simcluster/kueue.go.
KUEUE_VERSION ?= v0.17.0

CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
HELM := $(BIN)/helm
KIND := $(BIN)/kind
KUEUE := $(BIN)/kueue

# The operator image (make image, make kind-up) and the chart.
IMAGE ?= ghcr.io/computedomain-operator/computedomain-operator:dev
CHART := charts/computedomain-operator
KIND_CLUSTER ?= computedomain-operator

# Two cores on the reference machine: keep parallel test binaries low.
GO_TEST_P ?= 1
GO_TEST_FLAGS ?=
# envtest (controller-runtime) starts kube-apiserver and etcd from here.
export KUBEBUILDER_ASSETS := $(BIN)

# The e2e module links Helm's SDK, which links Go's plugin package; the Go linker then asks for immediate
# binding (-z now), and go-nvml's NVML symbols, resolved only when the driver is loaded, fail the binary at
# start ("undefined symbol: nvml..."). Lazy binding, as NVIDIA recommends for go-nvml, for every binary of
# the e2e module (go build and go test alike).
E2E_GOFLAGS := $(GOFLAGS) -ldflags=-extldflags=-Wl,-z,lazy

PRODUCT_BINARIES := $(patsubst cmd/%/main.go,%,$(wildcard cmd/*/main.go))

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build every product binary into bin/ (the kubectl plugin kubectl-computedomain included).
	go build -o $(BIN)/ ./cmd/...

.PHONY: image
image: ## Build the operator image (IMAGE=...) from the Dockerfile; starts Debian's dockerd when no engine answers (hack/docker-engine.sh).
	hack/docker-engine.sh run $(MAKE) --no-print-directory image-build

# BuildKit (the Dockerfile's cache mounts): `docker build` where the CLI has buildx, else Debian's docker.io CLI
# (20.10) with its engine's embedded BuildKit.
DOCKER ?= $(shell if docker buildx version >/dev/null 2>&1; then echo docker; elif [ -x /usr/bin/docker ]; then echo /usr/bin/docker; else echo docker; fi)

.PHONY: image-build
image-build:
	DOCKER_BUILDKIT=1 $(DOCKER) build -t $(IMAGE) .

.PHONY: offline-images
offline-images: ## Without a registry: the Dockerfile's base images and a kind node image built from Debian packages and Go sources (hack/offline-images.sh; cached).
	hack/docker-engine.sh run env DOCKER=$(DOCKER) BIN=$(BIN) KUBE_VERSION=$(KUBE_VERSION) KIND_VERSION=$(KIND_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/offline-images.sh all

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and CRD manifests.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=charts/computedomain-operator/crds

##@ Test

.PHONY: test
test: verify lint test-chart test-unit test-fuzz test-e2e ## Everything CI runs: verify, lint, chart, unit + envtest suites, brief fuzzing, e2e on the simulated cluster.

.PHONY: verify
verify: $(CONTROLLER_GEN) ## Fail when generated code, CRDs or go.mod files do not match their sources, or a Go file lacks the license header.
	hack/verify-generated.sh
	hack/verify-boilerplate.sh

.PHONY: test-unit
test-unit: testbins $(HELM) ## Unit tests and envtest suites of the product module (real kube-apiserver + etcd).
	go test -p $(GO_TEST_P) $(GO_TEST_FLAGS) ./...
	# The crash hook of the process-kill harness exists only in a -tags crashtest build.
	go test -p $(GO_TEST_P) $(GO_TEST_FLAGS) -tags crashtest -run ProcessCrashHook ./internal/draplugin/

.PHONY: test-e2e
test-e2e: testbins kueue ## Ginkgo e2e suites against the embedded simulated cluster (e2e/kueue runs bin/kueue).
	cd e2e && GOFLAGS="$(E2E_GOFLAGS)" go test -p $(GO_TEST_P) $(GO_TEST_FLAGS) -timeout 30m ./...

# Fuzz targets (package:Target) over every decoder of input we do not write ourselves; `make test` runs each
# for FUZZTIME, `make fuzz FUZZTIME=10m` for longer. A crash leaves its input under the package's
# testdata/fuzz/, to commit with the fix.
FUZZ_TARGETS := ./api/v1beta1:FuzzDecodeConfig ./internal/checkpoint:FuzzDecode ./internal/imex:FuzzParseConfig \
	./internal/imex:FuzzParsePeerTable ./internal/imex:FuzzReadNodesFile ./internal/nvml/mock:FuzzParseProfile \
	./internal/nvml/mock:FuzzParseFaults ./internal/hostroot:FuzzReaders
FUZZTIME ?= 5s

.PHONY: test-fuzz fuzz
test-fuzz fuzz: ## Run every fuzz target for FUZZTIME (5s in make test).
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
	  if ! go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg >/tmp/fuzz.$$$$.log 2>&1; then \
	    if grep -q 'Failing input written' /tmp/fuzz.$$$$.log || ! grep -q 'context deadline exceeded' /tmp/fuzz.$$$$.log; then \
	      cat /tmp/fuzz.$$$$.log; rm -f /tmp/fuzz.$$$$.log; exit 1; fi; \
	    echo "  (the fuzz engine missed its own deadline with a busy worker; no failing input: not a finding)"; \
	  fi; \
	done; rm -f /tmp/fuzz.$$$$.log

.PHONY: test-chart
test-chart: $(HELM) ## helm lint and helm template of the chart with each documented values file (charts/*/ci); the schema refuses a bad value.
	@for v in $(CHART)/ci/*-values.yaml; do \
	  echo "helm lint + template: $$v"; \
	  $(HELM) lint --strict --kube-version $(KUBE_VERSION) $(CHART) -f $$v >/dev/null || { $(HELM) lint --strict --kube-version $(KUBE_VERSION) $(CHART) -f $$v; exit 1; }; \
	  $(HELM) template cdo $(CHART) --kube-version $(KUBE_VERSION) -n computedomain-operator -f $$v >/dev/null; \
	done
	@out=$$($(HELM) template cdo $(CHART) --kube-version $(KUBE_VERSION) --set kubeletPlugin.nvml.mode=fake 2>&1) && { echo "schema accepted kubeletPlugin.nvml.mode=fake"; exit 1; } || \
	  { echo "$$out" | grep -q 'kubeletPlugin/nvml/mode' || { echo "schema error does not name the value: $$out"; exit 1; }; }
	@echo "values schema refuses kubeletPlugin.nvml.mode=fake, naming the value"

.PHONY: test-e2e-kind
test-e2e-kind: $(KIND) ## The same e2e suite against the kind cluster of make kind-up (or KUBECONFIG=... of another cluster with the chart installed).
	@kubeconfig="$(KUBECONFIG)"; if [ -z "$$kubeconfig" ]; then kubeconfig=$(BIN)/kind.kubeconfig; $(KIND) get kubeconfig --name $(KIND_CLUSTER) > $$kubeconfig; fi; \
	  cd e2e && E2E_KUBECONFIG=$$kubeconfig GOFLAGS="$(E2E_GOFLAGS)" go test -p 1 -timeout 60m ./suite/...

.PHONY: kind-up
kind-up: $(KIND) $(HELM) ## A kind cluster (hack/kind-config.yaml) with the image loaded and the chart installed (mock NVML); starts dockerd if none answers and leaves it for kind-down.
	hack/docker-engine.sh up
	$(MAKE) --no-print-directory offline-images image
	$(KIND) get clusters | grep -qx $(KIND_CLUSTER) || $(KIND) create cluster --name $(KIND_CLUSTER) --config hack/kind-config.yaml
	$(KIND) load docker-image --name $(KIND_CLUSTER) $(IMAGE)
	$(HELM) upgrade --install cdo $(CHART) -n computedomain-operator --create-namespace --wait \
	  -f $(CHART)/ci/kind-values.yaml --set image.repository=$(firstword $(subst :, ,$(IMAGE))) --set image.tag=$(lastword $(subst :, ,$(IMAGE)))

.PHONY: kind-down
kind-down: $(KIND) ## Delete the kind cluster of kind-up, and stop the dockerd that kind-up started (if it did).
	-$(KIND) delete cluster --name $(KIND_CLUSTER)
	hack/docker-engine.sh down

.PHONY: test-kind
test-kind: $(KIND) $(HELM) testbins ## Images, kind cluster, helm install, the e2e suite on kind, cluster deleted (hack/test-kind.sh; not part of make test).
	hack/docker-engine.sh run env DOCKER=$(DOCKER) BIN=$(BIN) KIND=$(KIND) HELM=$(HELM) IMAGE=$(IMAGE) KIND_CLUSTER=$(KIND_CLUSTER) \
	  KUBE_VERSION=$(KUBE_VERSION) KIND_VERSION=$(KIND_VERSION) ETCD_VERSION=$(ETCD_VERSION) E2E_GOFLAGS="$(E2E_GOFLAGS)" hack/test-kind.sh

.PHONY: bench
bench: testbins $(BIN)/bench $(BIN)/simcluster ## Every benchmark (about 70 minutes on 2 cores: 40, 22 for multi-rack placement, 5-6 for the 1,026-node simulator start; FORMATION_1024=1 adds the 1,024-node formation set, which does not finish on 2 cores): output under docs/bench/ (with date, machine, commit, command), the formation plot docs/bench/formation.png; docs/benchmarks.md reads them.
	hack/bench.sh

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint over both modules.
	$(GOLANGCI_LINT) run --allow-serial-runners ./...
	cd e2e && $(GOLANGCI_LINT) run --allow-serial-runners ./...

##@ Simulated cluster

.PHONY: demo
demo: $(BIN)/simcluster ## Start the embedded simulated GPU cluster, run the demo scenario, print the result and the racks picture (SVG: bin/demo-racks.svg).
	$(BIN)/simcluster demo

.PHONY: demo-tenants
demo-tenants: $(BIN)/simcluster kueue ## Two teams on a simulated cluster with Kueue: quotas, borrowing, the sharing policy, the metering bill.
	$(BIN)/simcluster demo-tenants

.PHONY: up
up: $(BIN)/simcluster ## A simulated multi-rack GB200 cluster until Ctrl-C; kubeconfig in bin/simcluster.kubeconfig.
	$(BIN)/simcluster up --kubeconfig $(BIN)/simcluster.kubeconfig

.PHONY: $(BIN)/simcluster
$(BIN)/simcluster:
	cd e2e && GOFLAGS="$(E2E_GOFLAGS)" go build -o $(BIN)/simcluster ./cmd/simcluster

.PHONY: $(BIN)/bench
$(BIN)/bench:
	cd e2e && GOFLAGS="$(E2E_GOFLAGS)" go build -o $(BIN)/bench ./cmd/bench

##@ Tools (pinned, installed into bin/)

.PHONY: testbins
testbins: ## Build kube-apiserver and etcd for envtest (once; cached by version stamp).
	KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/testbins.sh $(BIN)

$(CONTROLLER_GEN):
	go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(GOLANGCI_LINT):
	go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(HELM):
	go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(KIND):
	go install sigs.k8s.io/kind@$(KIND_VERSION)

# Rebuilt whenever bin/kueue is not KUEUE_VERSION (about 5 minutes cold on 2 cores).
.PHONY: kueue
kueue: ## Kueue's controller at KUEUE_VERSION into bin/kueue, for the e2e/kueue suite.
	@go version -m $(KUEUE) 2>/dev/null | grep -qE '^\s+mod\s+sigs\.k8s\.io/kueue\s+$(KUEUE_VERSION)\s' || \
	  { echo "go install sigs.k8s.io/kueue/cmd/kueue@$(KUEUE_VERSION)"; go install sigs.k8s.io/kueue/cmd/kueue@$(KUEUE_VERSION); }

.PHONY: clean
clean: ## Remove bin/ (tools included).
	rm -rf $(BIN)

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
KUBE_VERSION ?= v1.37.2
ETCD_VERSION ?= v3.7.0

CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint

# Two cores on the reference machine: keep parallel test binaries low.
GO_TEST_P ?= 1
GO_TEST_FLAGS ?=
# envtest (controller-runtime) starts kube-apiserver and etcd from here.
export KUBEBUILDER_ASSETS := $(BIN)

PRODUCT_BINARIES := $(patsubst cmd/%/main.go,%,$(wildcard cmd/*/main.go))

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build every product binary into bin/.
	go build -o $(BIN)/ ./cmd/...

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and CRD manifests.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=charts/computedomain-operator/crds

##@ Test

.PHONY: test
test: verify lint test-unit test-e2e ## Everything CI runs: verify, lint, unit + envtest suites, e2e on the simulated cluster.

.PHONY: verify
verify: $(CONTROLLER_GEN) ## Fail when generated code, CRDs or go.mod files do not match their sources.
	hack/verify-generated.sh

.PHONY: test-unit
test-unit: testbins ## Unit tests and envtest suites of the product module (real kube-apiserver + etcd).
	go test -p $(GO_TEST_P) $(GO_TEST_FLAGS) ./...

.PHONY: test-e2e
test-e2e: testbins ## Ginkgo e2e suite against the embedded simulated cluster.
	cd e2e && go test -p $(GO_TEST_P) $(GO_TEST_FLAGS) -timeout 30m ./...

.PHONY: test-e2e-kind
test-e2e-kind: ## The same e2e suite against an existing cluster: make test-e2e-kind KUBECONFIG=~/.kube/config
	@test -n "$(KUBECONFIG)" || { echo "set KUBECONFIG to a kind cluster with the operator installed"; exit 2; }
	cd e2e && E2E_KUBECONFIG=$(KUBECONFIG) go test -p 1 -timeout 60m ./suite/...

.PHONY: bench
bench: ## Go benchmarks of the product module (figures go into docs/benchmarks.md).
	go test -p 1 -run '^$$' -bench . -benchmem -count 5 ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint over both modules.
	$(GOLANGCI_LINT) run --allow-serial-runners ./...
	cd e2e && $(GOLANGCI_LINT) run --allow-serial-runners ./...

##@ Simulated cluster

.PHONY: demo
demo: $(BIN)/simcluster ## Start the embedded simulated GPU cluster, run the demo scenario, print the result.
	$(BIN)/simcluster demo

.PHONY: up
up: $(BIN)/simcluster ## A simulated multi-rack GB200 cluster until Ctrl-C; kubeconfig in bin/simcluster.kubeconfig.
	$(BIN)/simcluster up --kubeconfig $(BIN)/simcluster.kubeconfig

.PHONY: $(BIN)/simcluster
$(BIN)/simcluster:
	cd e2e && go build -o $(BIN)/simcluster ./cmd/simcluster

##@ Tools (pinned, installed into bin/)

.PHONY: testbins
testbins: ## Build kube-apiserver and etcd for envtest (once; cached by version stamp).
	KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/testbins.sh $(BIN)

$(CONTROLLER_GEN):
	go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(GOLANGCI_LINT):
	go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: clean
clean: ## Remove bin/ (tools included).
	rm -rf $(BIN)

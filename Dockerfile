# One image for every binary of the operator: the ComputeDomain controller, the two kubelet plugins, the IMEX
# daemon, the admission webhook, and the IMEX stand-in (a test tool for nodes without a real IMEX, e.g. kind with mock NVML).
#
#   make image IMAGE=ghcr.io/computedomain-operator/computedomain-operator:dev
#
# The build is pinned: the Go version below (the project's go.mod toolchain), the module graph (go.sum), and the
# base images by tag. Module downloads and the build cache are BuildKit cache mounts, so a rebuild after a
# source change does not download or recompile the dependencies.

ARG GO_VERSION=1.26.8
ARG BASE_IMAGE=gcr.io/distroless/base-debian12:nonroot

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Dependencies first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY daemon/ daemon/
COPY internal/ internal/
COPY kubeletplugin/ kubeletplugin/
COPY metering/ metering/
COPY webhook/ webhook/
ARG VERSION=dev
# cgo: go-nvml loads libnvidia-ml.so with dlopen at run time (nothing of the driver is linked in).
ENV CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/ \
      ./cmd/compute-domain-controller \
      ./cmd/compute-domain-daemon \
      ./cmd/compute-domain-kubelet-plugin \
      ./cmd/compute-domain-metering \
      ./cmd/compute-domain-webhook \
      ./cmd/gpu-kubelet-plugin \
      ./cmd/imex-standin \
      ./cmd/kubectl-computedomain \
      ./cmd/mps-control-standin

# distroless/base: glibc for dlopen of the host driver's libnvidia-ml, CA certificates, no shell, no package
# manager. Non-root by default (uid 65532); the kubelet-plugin DaemonSet and the IMEX daemon pods run as root
# because they create device nodes and talk to the driver (the chart and the controller set that).
FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.source="https://github.com/computedomain-operator/computedomain-operator" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.description="Kubernetes DRA drivers for NVIDIA GPUs and multi-node NVLink ComputeDomains"
COPY --from=build /out/compute-domain-controller /out/compute-domain-daemon /out/compute-domain-kubelet-plugin /out/compute-domain-metering /out/compute-domain-webhook /out/gpu-kubelet-plugin /out/imex-standin /out/kubectl-computedomain /out/mps-control-standin /usr/bin/
COPY LICENSE /licenses/LICENSE
USER 65532:65532
# The controller by default; any other binary by name (`docker run IMAGE gpu-kubelet-plugin --help`). The chart
# names each container's command.
CMD ["compute-domain-controller"]

// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// Package driverroot finds the user-space files of the NVIDIA driver that a
// GPU container needs (libcuda, libnvidia-ml, nvidia-smi, ... of the
// compute and utility capabilities) and turns them into CDI container edits:
// read-only bind mounts of the host's files.
//
// Why not NVIDIA's github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi:
// checked with v1.20.2, it resolves without changing our k8s.io modules but
// upgrades grpc (1.82 -> 1.83), golang.org/x/{sys,net,text,tools} and
// protobuf for both this module and e2e, and adds logrus, go-nvlib, runc's
// cgroups and moby/sys. More decisively, the specs it generates rely on
// createContainer hooks of its nvidia-cdi-hook binary (create-symlinks,
// update-ldcache, ...), which this project does not ship, and its discovery
// wants a real NVML, so it cannot run against the mock and the fake host
// root the tests and the simulated cluster use. The few dozen paths below
// are simple to find ourselves.
//
// Layout, in the plugin's view: Root is where the plugin sees the driver
// root ("/" for a driver installed on the host, the chart's /driver-root
// mount of /run/nvidia/driver for the GPU Operator's driver container) and
// HostPath is that directory's path on the host, which the CDI mounts name.
// A file at <Root>/usr/lib64/libcuda.so.580.95.05 becomes the mount of
// <HostPath>/usr/lib64/libcuda.so.580.95.05 at /usr/lib64/libcuda.so.580.95.05
// in the container: the path minus the driver root, as NVIDIA does.
//
// Without NVIDIA's hooks there are no symlinks and no ldcache update in the
// container. Instead every library is also mounted under its soname
// (libcuda.so.1 and libcuda.so, libnvidia-ml.so.1, ...: the real file under
// the name the loader looks for) next to the versioned file, and again in
// /usr/local/nvidia/lib64, which the CUDA base images put on
// LD_LIBRARY_PATH. No environment is set. So a container finds the driver
// when its loader searches the driver's library directory (same distribution
// family as the host) or when it is built from a CUDA image; others need
// LD_LIBRARY_PATH=/usr/local/nvidia/lib64 or an ldconfig of their own.
//
// Discovery runs once, when the plugin starts: the driver's files change only
// with a driver upgrade, which restarts the plugin's pod.
package driverroot

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

// Package mps runs NVIDIA's MPS control daemon (nvidia-cuda-mps-control) the
// way the GPU kubelet plugin needs it: one daemon per MPS-shared claim, each
// with its own directory <root>/<id> holding
//   - pipe: CUDA_MPS_PIPE_DIRECTORY, where the daemon creates its control
//     endpoint ("control") and the MPS clients find it (the CDI edits mount it
//     into the claim's containers at /tmp/nvidia-mps);
//   - log: CUDA_MPS_LOG_DIRECTORY (control.log);
//   - shm: the directory NVIDIA's driver gives the clients as /dev/shm.
//
// Exec is the real implementation: `<binary> -d` (plus -M for multi-user
// mode) with CUDA_VISIBLE_DEVICES and the two directories in its
// environment, then each setting as one control command on the stdin of
// `<binary>` (set_default_active_thread_percentage,
// set_default_device_pinned_mem_limit), and `quit` the same way to stop it.
// It finds a daemon's process by its environment (the pipe directory) in
// /proc, so it can stop a daemon an earlier run of the plugin started. The
// binary is nvidia-cuda-mps-control from the driver root on a GPU node;
// package mps/standin is a stand-in for nodes without one (the simulated
// cluster, kind, tests), with the same command line and directory contract.
package mps

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

package nodeagent

import (
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

// containerEnv is the environment the kubelet puts in a container spec: the
// container's env (literal values and the pod field references a node can
// resolve). $(VAR) references in command and args expand against it; the
// runtime then adds the CDI edits' variables (withCDIEnv).
func containerEnv(pod *corev1.Pod, c *corev1.Container, nodeIP, podIP string) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expansion.Expand(e.Value, expansion.MappingFuncFor(env))
		case e.ValueFrom.FieldRef != nil:
			v, err := podFieldValue(pod, e.ValueFrom.FieldRef.FieldPath, nodeIP, podIP)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			env[e.Name] = v
		default:
			return nil, fmt.Errorf("env %s: only values and fieldRef are supported in the simulated node runtime", e.Name)
		}
	}
	return env, nil
}

// withCDIEnv adds the CDI edits' variables, which a CDI-enabled runtime
// applies after the container spec's.
func withCDIEnv(env map[string]string, cdiEnv []string) map[string]string {
	out := make(map[string]string, len(env)+len(cdiEnv))
	for k, v := range env {
		out[k] = v
	}
	for _, kv := range cdiEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// podFieldValue resolves the downward-API field paths a node knows.
func podFieldValue(pod *corev1.Pod, path, nodeIP, podIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return podIP, nil
	case "status.hostIP":
		return nodeIP, nil
	}
	return "", fmt.Errorf("field path %q: allowed values are metadata.name, metadata.namespace, metadata.uid, spec.nodeName, spec.serviceAccountName, status.podIP, status.hostIP", path)
}

// containerArgs is command + args with $(VAR) references expanded, as the
// kubelet does.
func containerArgs(c *corev1.Container, env map[string]string) []string {
	mapping := expansion.MappingFuncFor(env)
	var args []string
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		args = append(args, expansion.Expand(a, mapping))
	}
	return args
}

// containerMounts maps the container's volume mounts onto the node's host
// root: a hostPath volume at <root>/<hostPath>, an emptyDir at a per-pod
// directory under the root. Other volume types are an error.
func containerMounts(pod *corev1.Pod, c *corev1.Container, root string) (map[string]string, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s: no such volume", m.Name)
		}
		var host string
		switch {
		case v.HostPath != nil:
			host = filepath.Join(root, v.HostPath.Path)
		case v.EmptyDir != nil:
			host = filepath.Join(root, "var/lib/kubelet/pods", string(pod.UID), "volumes/empty-dir", v.Name)
		case v.Secret != nil:
			host = secretVolumeDir(root, pod, v.Name)
		default:
			return nil, fmt.Errorf("volume %s: only hostPath, emptyDir and secret volumes are supported in the simulated node runtime", v.Name)
		}
		mounts[m.MountPath] = filepath.Join(host, m.SubPath)
	}
	return mounts, nil
}

// mapPath rewrites a container path to the host path of the longest mount
// that contains it; a path outside every mount is returned unchanged.
func mapPath(mounts map[string]string, path string) string {
	var targets []string
	for target := range mounts {
		targets = append(targets, target)
	}
	sort.Slice(targets, func(i, j int) bool { return len(targets[i]) > len(targets[j]) })
	for _, target := range targets {
		if path == target {
			return mounts[target]
		}
		if strings.HasPrefix(path, strings.TrimSuffix(target, "/")+"/") {
			return filepath.Join(mounts[target], strings.TrimPrefix(path, strings.TrimSuffix(target, "/")+"/"))
		}
	}
	return mountParent(mounts, path)
}

// mountParent maps a directory that is no mount itself but holds mounts that
// all come from one host directory the same way (/host with /host/dev,
// /host/proc and /host/sys from the host's /dev, /proc and /sys): the
// container sees that host directory's layout there, so it maps to it.
// Anything else is left as is.
func mountParent(mounts map[string]string, path string) string {
	prefix := strings.TrimSuffix(path, "/") + "/"
	parent := ""
	for target, host := range mounts {
		rel, ok := strings.CutPrefix(target, prefix)
		if !ok || path == "/" {
			continue
		}
		base, ok := strings.CutSuffix(filepath.Clean(host), "/"+filepath.Clean(rel))
		if !ok || (parent != "" && parent != base) {
			return path
		}
		parent = base
	}
	if parent == "" {
		return path
	}
	return parent
}

// mapArgs rewrites the absolute paths in "--flag=/path" and "/path"
// arguments through the mounts, so an in-process binary sees the node's
// host root where its container would see its volumes.
func mapArgs(mounts map[string]string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") && strings.HasPrefix(value, "/") {
			out[i] = name + "=" + mapPath(mounts, value)
			continue
		}
		if strings.HasPrefix(a, "/") {
			out[i] = mapPath(mounts, a)
			continue
		}
		out[i] = a
	}
	return out
}

// mapEnv rewrites variables whose value is an absolute path under a mount.
// bindPodIP gives listen addresses without a host (--metrics-address=:9090)
// the pod's IP: a real pod listens in its own network namespace, in-process
// containers of many pods share the host's, where ":9090" would collide.
func bindPodIP(args []string, podIP string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") && isPortOnly(value) {
			out[i] = name + "=" + net.JoinHostPort(podIP, value[1:])
		}
	}
	return out
}

func isPortOnly(address string) bool {
	port, ok := strings.CutPrefix(address, ":")
	if !ok || port == "" {
		return false
	}
	_, err := strconv.ParseUint(port, 10, 16)
	return err == nil
}

func mapEnv(mounts map[string]string, env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		if strings.HasPrefix(v, "/") {
			v = mapPath(mounts, v)
		}
		out[k] = v
	}
	return out
}

{{/* The operator image: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "cdo.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels every object of the chart carries. */}}
{{- define "cdo.labels" -}}
app.kubernetes.io/part-of: computedomain-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The kubelet plugins' service account. */}}
{{- define "cdo.pluginServiceAccount" -}}
compute-domain-kubelet-plugin
{{- end }}

{{/* The mock NVML flags of a kubelet plugin container (nvml.mode=mock only). */}}
{{- define "cdo.nvmlArgs" -}}
- --nvml={{ .Values.kubeletPlugin.nvml.mode }}
{{- if eq .Values.kubeletPlugin.nvml.mode "mock" }}
{{- with .Values.kubeletPlugin.nvml.mock.machineFile }}
- --nvml-mock-machine-file={{ . }}
{{- else }}
- --nvml-mock-profile={{ .Values.kubeletPlugin.nvml.mock.profile }}
- --nvml-mock-cluster={{ .Values.kubeletPlugin.nvml.mock.cluster }}
- --nvml-mock-rack={{ .Values.kubeletPlugin.nvml.mock.rack }}
{{- end }}
{{- else }}
- --nvml-nvidia-smi-path=/driver-root/usr/bin/nvidia-smi
{{- end }}
{{- end }}

{{/* The environment of a kubelet plugin container: its node, and in real mode where the driver's libraries are
(libnvidia-ml is loaded from the driver root, whatever the distribution's library directory). */}}
{{- define "cdo.pluginEnv" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- if eq .Values.kubeletPlugin.nvml.mode "real" }}
- name: LD_LIBRARY_PATH
  value: /driver-root/usr/lib64:/driver-root/usr/lib/x86_64-linux-gnu:/driver-root/usr/lib/aarch64-linux-gnu:/driver-root/lib64
{{- end }}
{{- end }}

{{/* The host directories a kubelet plugin container sees. */}}
{{- define "cdo.pluginMounts" -}}
- name: plugins-registry
  mountPath: {{ .Values.kubeletPlugin.kubeletDir }}/plugins_registry
- name: plugins
  mountPath: {{ .Values.kubeletPlugin.kubeletDir }}/plugins
  mountPropagation: Bidirectional
- name: cdi
  mountPath: /var/run/cdi
- name: host-dev
  mountPath: /host/dev
- name: host-proc
  mountPath: /host/proc
  readOnly: true
- name: host-sys
  mountPath: /host/sys
  readOnly: true
- name: driver-root
  mountPath: /driver-root
  readOnly: true
  mountPropagation: HostToContainer
{{- end }}

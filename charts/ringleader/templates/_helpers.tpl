{{/* Names and labels shared by every template. */}}

{{- define "ringleader.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ringleader.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "ringleader.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "ringleader.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "ringleader.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ringleader.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "ringleader.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "ringleader.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: ringleader
{{- end }}

{{- define "ringleader.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ringleader.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ringleader.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "ringleader.sidecarImage" -}}
{{- printf "%s:%s" .Values.operator.sidecarImage.repository (default .Chart.AppVersion .Values.operator.sidecarImage.tag) }}
{{- end }}

{{/*
What the operator does to TrainingJobs and their children, derived from operator/runtime: the
informers list and watch TrainingJobs, Pods, Services and Secrets; the applier creates the
children (reading one back when its name is taken) and deletes Pods (a gang restart, a suspended
or finished job) and a suspended job's Service (it names the ports the job gave back), writes
status through /status with PUT, deletes a finished job after its TTL and records Events.
Secrets go with their job through garbage collection, so the operator never deletes them.
tests/e2e/chart_install_test checks each grant is used.
*/}}
{{- define "ringleader.jobRules" -}}
- apiGroups: [ringleader.dev]
  resources: [trainingjobs]
  verbs: [list, watch, delete]
- apiGroups: [ringleader.dev]
  resources: [trainingjobs/status]
  verbs: [update]
{{- /* Children carry blockOwnerDeletion; where OwnerReferencesPermissionEnforcement runs, the API server admits that only for who may update the owner's finalizers. */}}
- apiGroups: [ringleader.dev]
  resources: [trainingjobs/finalizers]
  verbs: [update]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, delete]
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, watch, create, delete]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch, create]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- /* The job's NetworkPolicy, like its Service: deleted when a suspended job gives its ports back.
Missing after `helm upgrade --reuse-values` over an older release: the operator's default (on). */}}
{{- if dig "enabled" true (.Values.networkPolicy | default dict) }}
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch, create, delete]
{{- end }}
{{- /* A job's PodGroup: created before its Pods, read and brought to the job's spec when it exists.
gangScheduling may be missing altogether: `helm upgrade --reuse-values` over a release of a chart
that had no such value keeps that release's values without this chart's defaults. */}}
{{- $gang := .Values.gangScheduling | default dict }}
{{- if dig "coscheduling" "enabled" false $gang }}
- apiGroups: [scheduling.x-k8s.io]
  resources: [podgroups]
  verbs: [get, create, update]
{{- end }}
{{- if dig "volcano" "enabled" false $gang }}
- apiGroups: [scheduling.volcano.sh]
  resources: [podgroups]
  verbs: [get, create, update]
{{- end }}
{{- /* The attempt's Workload, read while its Pods wait gated, for why Kueue holds them. */}}
{{- if dig "kueue" "enabled" false $gang }}
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [get]
{{- end }}
{{- /* One PodGroup per attempt, never changed: no update. */}}
{{- if dig "kubernetes" "enabled" false $gang }}
- apiGroups: [scheduling.k8s.io]
  resources: [podgroups]
  verbs: [get, create]
{{- end }}
{{- end }}

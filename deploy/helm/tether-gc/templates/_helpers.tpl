{{/* Full name of every object: the release name, plus the chart name unless it already contains it. */}}
{{- define "tether-gc.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tether-gc.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Not app.kubernetes.io/managed-by=tether: that label marks objects the cleaner may delete. */}}
{{- define "tether-gc.labels" -}}
{{ include "tether-gc.selectorLabels" . }}
app.kubernetes.io/component: gc
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tether-gc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tether-gc.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The namespaces to clean, as a JSON list (default: the release namespace). */}}
{{- define "tether-gc.namespaces" -}}
{{- if and .Values.allNamespaces .Values.namespaces -}}
{{- fail "allNamespaces and namespaces exclude each other: set one" -}}
{{- end -}}
{{- if .Values.namespaces -}}
{{- toJson .Values.namespaces -}}
{{- else -}}
{{- toJson (list .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{/* Least-privilege RBAC rules for the resources value. */}}
{{- define "tether-gc.rules" -}}
{{- if has "pods" .Values.resources }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "delete"]
{{- end }}
{{- $owned := list }}
{{- range .Values.resources }}{{ if ne . "pods" }}{{ $owned = append $owned . }}{{ end }}{{ end }}
{{- if $owned }}
{{- if not (has "pods" .Values.resources) }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get"]
{{- end }}
- apiGroups: [""]
  resources: {{ toJson $owned }}
  verbs: ["list", "delete"]
{{- end }}
{{- end -}}

{{/* Checks the values the schema cannot express. */}}
{{- define "tether-gc.validate" -}}
{{- if and .Values.allNamespaces .Values.namespaces -}}
{{- fail "allNamespaces and namespaces exclude each other: set one" -}}
{{- end -}}
{{- if and (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) -}}
{{- fail "serviceAccount.name is required when serviceAccount.create is false" -}}
{{- end -}}
{{- end -}}

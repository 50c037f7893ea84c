{{/* Full name of every object: the release name, plus the chart name unless it already contains it. */}}
{{- define "tether-pool.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tether-pool.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Not app.kubernetes.io/managed-by=tether: that label marks objects the cleaner may delete. */}}
{{- define "tether-pool.labels" -}}
{{ include "tether-pool.selectorLabels" . }}
app.kubernetes.io/component: pool-controller
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tether-pool.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tether-pool.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The pools file. */}}
{{- define "tether-pool.config" -}}
{{- if not .Values.pools -}}
{{- fail "pools: give at least one pool (name, image, size, max-idle, …)" -}}
{{- end -}}
{{- toYaml (dict "pools" .Values.pools) -}}
{{- end -}}

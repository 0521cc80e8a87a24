{{/* Names and labels, as `helm create` makes them. */}}
{{- define "idp-proxy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "idp-proxy.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "idp-proxy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "idp-proxy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "idp-proxy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "idp-proxy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret holding the client and session secrets. */}}
{{- define "idp-proxy.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "idp-proxy.fullname" .)) }}
{{- end }}

{{/* "true" when the proxy gets a client secret file. */}}
{{- define "idp-proxy.hasClientSecret" -}}
{{- if .Values.secrets.existingSecret }}{{ if .Values.secrets.clientSecretKey }}true{{ end }}
{{- else if .Values.secrets.clientSecret }}true{{ end }}
{{- end }}

{{/* Whether the proxy signs assertions (config.assertion.issuer_url): the
signing key then comes from the Secret (assertion-keys), one for every
replica. */}}
{{- define "idp-proxy.usesAssertion" -}}
{{- if and .Values.config.assertion .Values.config.assertion.issuer_url }}true{{ end }}
{{- end }}

{{- define "idp-proxy.secretDir" -}}/etc/idp-proxy/secrets{{- end }}

{{/*
The config.yaml idp-proxy reads: config, with the listeners and the secret
files this chart provides.
*/}}
{{- define "idp-proxy.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int .Values.containerPorts.http)) }}
{{- $_ = set $cfg "metrics_listen" (printf "0.0.0.0:%d" (int .Values.containerPorts.ops)) }}
{{- $idp := deepCopy (default (dict) $cfg.idp) }}
{{- if include "idp-proxy.hasClientSecret" . }}
{{- $_ = set $idp "client_secret_file" (printf "%s/client-secret" (include "idp-proxy.secretDir" .)) }}
{{- end }}
{{- $_ = set $idp "session_secret_file" (printf "%s/session-secret" (include "idp-proxy.secretDir" .)) }}
{{- $_ = set $cfg "idp" $idp }}
{{- if include "idp-proxy.usesAssertion" . }}
{{- $a := deepCopy $cfg.assertion }}
{{- $_ = set $a "key_file" (printf "%s/assertion-keys" (include "idp-proxy.secretDir" .)) }}
{{- $_ = set $cfg "assertion" $a }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* The Secret and key of the Redis URL, when there is one. */}}
{{- define "idp-proxy.redisSecretName" -}}
{{- .Values.redis.existingSecret | default (printf "%s-redis" (include "idp-proxy.fullname" .)) }}
{{- end }}
{{- define "idp-proxy.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}redis-url{{ end }}
{{- end }}

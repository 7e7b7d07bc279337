{{/* Chart name. */}}
{{- define "durable-worker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name (release-chart, unless the release name already contains the chart name). */}}
{{- define "durable-worker.fullname" -}}
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

{{- define "durable-worker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "durable-worker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "durable-worker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "durable-worker.labels" -}}
helm.sh/chart: {{ include "durable-worker.chart" . }}
{{ include "durable-worker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "durable-worker.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "durable-worker.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the client secret / API key, or "" when none is configured. */}}
{{- define "durable-worker.secretName" -}}
{{- if .Values.credentials.existingSecret }}
{{- .Values.credentials.existingSecret }}
{{- else if .Values.credentials.create }}
{{- printf "%s-credentials" (include "durable-worker.fullname" .) }}
{{- end }}
{{- end }}

{{/* An image reference: repository@digest when a digest is given, else repository:tag. Call with (dict "image" <values> "defaultTag" <tag>). */}}
{{- define "durable-worker.imageRef" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (.image.tag | default .defaultTag) }}
{{- end }}
{{- end }}

{{/* The handlers ConfigMap name (existing or created). */}}
{{- define "durable-worker.handlersConfigMapName" -}}
{{- default (printf "%s-handlers" (include "durable-worker.fullname" .)) .Values.handlers.configMap.name }}
{{- end }}

{{/* Seconds between SIGTERM... : preStop sleep + drain + margin, unless overridden (validated below). */}}
{{- define "durable-worker.terminationGracePeriodSeconds" -}}
{{- $l := .Values.lifecycle }}
{{- if kindIs "invalid" $l.terminationGracePeriodSeconds }}
{{- add (int .Values.worker.shutdownTimeoutSeconds) (int $l.preStopSleepSeconds) (int $l.terminationMarginSeconds) }}
{{- else }}
{{- int $l.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/* The forwarding target of the worker in the chart's own Deployment ("" = no forwarding). */}}
{{- define "durable-worker.forwardUrl" -}}
{{- if .Values.forward.url }}
{{- .Values.forward.url }}
{{- else if eq .Values.mode "sidecar" }}
{{- printf "http://127.0.0.1:%d%s" (int .Values.sidecar.app.port) .Values.forward.path }}
{{- end }}
{{- end }}

{{/* True ("true") when more than one pod may run the same consumer at once. */}}
{{- define "durable-worker.multiReplica" -}}
{{- if .Values.keda.enabled }}
{{- if gt (int .Values.keda.maxReplicaCount) 1 }}true{{ end }}
{{- else if gt (int .Values.replicaCount) 1 }}true{{ end }}
{{- end }}

{{/* True ("true") when a store or sink URL is a server every pod reaches (redis://, postgres://). */}}
{{- define "durable-worker.isShared" -}}
{{- if regexMatch "^(rediss?|postgres(ql)?)://" (toString .) }}true{{ end }}
{{- end }}

{{/* The --dead-letter URL: worker.deadLetter, else a shared worker.idempotency, else a file under stateDir. */}}
{{- define "durable-worker.deadLetter" -}}
{{- $w := .Values.worker }}
{{- if $w.deadLetter }}
{{- $w.deadLetter }}
{{- else if include "durable-worker.isShared" $w.idempotency }}
{{- $w.idempotency }}
{{- else }}
{{- printf "file:%s/dead-letter.jsonl" (trimSuffix "/" $w.stateDir) }}
{{- end }}
{{- end }}

{{/* True ("true") when the worker keeps state on its own disk: a sqlite: store, or a file: or sqlite: dead-letter sink. */}}
{{- define "durable-worker.keepsLocalState" -}}
{{- if or (hasPrefix "sqlite:" (toString .Values.worker.idempotency)) (regexMatch "^(file|sqlite):" (include "durable-worker.deadLetter" .)) }}true{{ end }}
{{- end }}

{{/* True ("true") when worker.stateDir is on a PersistentVolumeClaim (persistence.enabled: auto, true or false). */}}
{{- define "durable-worker.persistent" -}}
{{- $enabled := toString .Values.persistence.enabled }}
{{- if eq $enabled "true" }}true
{{- else if eq $enabled "auto" }}{{ include "durable-worker.keepsLocalState" . }}
{{- end }}
{{- end }}

{{/* The claim of the state folder: persistence.existingClaim or the chart's own. */}}
{{- define "durable-worker.stateClaimName" -}}
{{- .Values.persistence.existingClaim | default (printf "%s-state" (include "durable-worker.fullname" .)) }}
{{- end }}

{{/* The worker's extra pod volumes: worker.extraVolumes, then the deprecated top-level extraVolumes. */}}
{{- define "durable-worker.extraVolumes" -}}
{{- $volumes := concat (.Values.worker.extraVolumes | default list) (.Values.extraVolumes | default list) }}
{{- with $volumes }}{{ toYaml . }}{{ end }}
{{- end }}

{{/* A sqlite: store on an emptyDir would lose done marks, attempt counts and deferred runs with the pod. */}}
{{- define "durable-worker.validateState" -}}
{{- $v := .Values }}
{{- if and (hasPrefix "sqlite:" (toString $v.worker.idempotency)) (not (include "durable-worker.persistent" .)) (not $v.worker.allowEphemeralState) }}
{{- fail (printf "durable-worker: worker.idempotency %q on an emptyDir (persistence.enabled=false) would lose its done marks, attempt counts and deferred runs at every rollout or eviction. Set persistence.enabled to auto or true (a PersistentVolumeClaim for worker.stateDir), use a redis:// or postgres:// store, or set worker.allowEphemeralState=true to accept the loss." (toString $v.worker.idempotency)) }}
{{- end }}
{{- end }}

{{/*
Cross-field rules the schema cannot say clearly. Each failure names the values to change.
*/}}
{{- define "durable-worker.validate" -}}
{{- $v := .Values }}
{{- $store := toString $v.worker.idempotency }}
{{- if and (include "durable-worker.multiReplica" .) (or (eq $store "memory") (hasPrefix "sqlite:" $store)) }}
{{- $n := ternary (printf "keda.maxReplicaCount=%d" (int $v.keda.maxReplicaCount)) (printf "replicaCount=%d" (int $v.replicaCount)) (eq (toString $v.keda.enabled) "true") }}
{{- fail (printf "durable-worker: %s needs a shared idempotency store: worker.idempotency is %q, which each pod keeps for itself, so two pods would apply the same event twice. Set worker.idempotency to redis://... or postgres://..., or run one replica." $n $store) }}
{{- end }}
{{- $sink := include "durable-worker.deadLetter" . }}
{{- if and (include "durable-worker.multiReplica" .) (not (include "durable-worker.isShared" $sink)) }}
{{- $n := ternary (printf "keda.maxReplicaCount=%d" (int $v.keda.maxReplicaCount)) (printf "replicaCount=%d" (int $v.replicaCount)) (eq (toString $v.keda.enabled) "true") }}
{{- fail (printf "durable-worker: %s needs a shared dead-letter sink: worker.deadLetter is %q, on the pod's emptyDir, so each pod's dead letters would be scattered over pods and deleted with them. Set worker.deadLetter to redis://... or postgres://..., or leave it empty to follow a redis:// or postgres:// worker.idempotency." $n $sink) }}
{{- end }}
{{- $grace := int (include "durable-worker.terminationGracePeriodSeconds" .) }}
{{- $needed := add (int $v.worker.shutdownTimeoutSeconds) (int $v.lifecycle.preStopSleepSeconds) }}
{{- if le $grace $needed }}
{{- fail (printf "durable-worker: lifecycle.terminationGracePeriodSeconds (%d) must be greater than worker.shutdownTimeoutSeconds + lifecycle.preStopSleepSeconds (%d): Kubernetes would kill the worker before it drains." $grace $needed) }}
{{- end }}
{{- include "durable-worker.validateCredentials" . }}
{{- include "durable-worker.validateState" . }}
{{- if and (eq $v.mode "sidecar") (not $v.sidecar.app.image.repository) }}
{{- fail "durable-worker: mode sidecar needs sidecar.app.image.repository (your app's image)." }}
{{- end }}
{{- if and (eq $v.mode "sidecar") (not $v.sidecar.app.image.tag) (not $v.sidecar.app.image.digest) }}
{{- fail "durable-worker: mode sidecar needs sidecar.app.image.tag or sidecar.app.image.digest (your app's version; there is no latest default)." }}
{{- end }}
{{- if and (eq $v.mode "standalone") (eq $v.handlers.source "none") (not $v.forward.url) }}
{{- fail "durable-worker: mode standalone with handlers.source none needs forward.url: the worker would have nothing to run." }}
{{- end }}
{{- if and (eq $v.handlers.source "configMap") (not $v.handlers.configMap.name) (not $v.handlers.configMap.files) }}
{{- fail "durable-worker: handlers.source configMap needs handlers.configMap.files or an existing handlers.configMap.name." }}
{{- end }}
{{- end }}

{{/* Credential rules; also checked by durable-worker.sidecarContainer when embedded in another chart. */}}
{{- define "durable-worker.validateCredentials" -}}
{{- $v := .Values }}
{{- $c := $v.credentials }}
{{- if and (not $c.useApiKey) (not $c.clientId) }}
{{- fail "durable-worker: credentials are required (the worker exits 2 without): set credentials.clientId with credentials.existingSecret (or credentials.create and credentials.clientSecret), or credentials.useApiKey with credentials.existingSecret." }}
{{- end }}
{{- if not $v.worker.baseUrl }}
{{- fail "durable-worker: worker.baseUrl is required: the platform API's base URL, e.g. https://api.example.com." }}
{{- end }}
{{- if not $v.worker.destination }}
{{- fail "durable-worker: worker.destination is required: the id of the durable consumer to run." }}
{{- end }}
{{- if not $v.image.repository }}
{{- fail "durable-worker: image.repository is required: the fully qualified name of the image you pushed, e.g. registry.example.com/team/durable-worker (docs/kubernetes.md)." }}
{{- end }}
{{- if and $c.create $c.existingSecret }}
{{- fail "durable-worker: set either credentials.existingSecret or credentials.create, not both." }}
{{- end }}
{{- if $c.useApiKey }}
{{- if not (include "durable-worker.secretName" .) }}
{{- fail "durable-worker: credentials.useApiKey needs credentials.existingSecret, or credentials.create with credentials.apiKey." }}
{{- end }}
{{- if and $c.create (not $c.apiKey) }}
{{- fail "durable-worker: credentials.create with credentials.useApiKey needs credentials.apiKey." }}
{{- end }}
{{- else if $c.clientId }}
{{- if not (include "durable-worker.secretName" .) }}
{{- fail "durable-worker: credentials.clientId needs the client secret: set credentials.existingSecret, or credentials.create with credentials.clientSecret." }}
{{- end }}
{{- if and $c.create (not $c.clientSecret) }}
{{- fail "durable-worker: credentials.create needs credentials.clientSecret." }}
{{- end }}
{{- if not $v.worker.tenant }}
{{- fail "durable-worker: client credentials need worker.tenant (the token audience)." }}
{{- end }}
{{- end }}
{{- end }}

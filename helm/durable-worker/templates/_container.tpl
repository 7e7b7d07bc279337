{{/*
The worker container. Call with (dict "root" $ "forwardUrl" "<url or empty>").
Only --handlers, --base-url, --destination and --forward-url go in args; every other option goes in by env
(DURABLE_WORKER_<UPPER_SNAKE>), and secrets only from the Secret (secretKeyRef or a mounted file).
*/}}
{{- define "durable-worker.workerContainer" -}}
{{- $root := .root }}
{{- $v := $root.Values }}
{{- $w := $v.worker }}
{{- $c := $v.credentials }}
{{- $secretName := include "durable-worker.secretName" $root -}}
- name: durable-worker
  image: {{ include "durable-worker.imageRef" (dict "image" $v.image "defaultTag" $root.Chart.AppVersion) | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- with $v.image.command }}
  command:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  args:
    - run
    {{- if ne $v.handlers.source "none" }}
    - --handlers
    - {{ $v.handlers.path | quote }}
    {{- end }}
    - --base-url
    - {{ $w.baseUrl | quote }}
    - --destination
    - {{ $w.destination | quote }}
    {{- with .forwardUrl }}
    - --forward-url
    - {{ . | quote }}
    {{- end }}
    {{- range $w.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    # Stable workerIds <pod name>-<index>: the platform's lease owner survives restarts of the process.
    - name: DURABLE_WORKER_WORKER_ID_PREFIX
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    {{- with $w.authUrl }}
    - name: DURABLE_WORKER_AUTH_URL
      value: {{ . | quote }}
    {{- end }}
    {{- with $w.tenant }}
    - name: DURABLE_WORKER_TENANT
      value: {{ . | quote }}
    {{- end }}
    - name: DURABLE_WORKER_WORKERS
      value: {{ $w.workers | quote }}
    - name: DURABLE_WORKER_LIMIT
      value: {{ $w.limit | quote }}
    - name: DURABLE_WORKER_VISIBILITY
      value: {{ $w.visibilitySeconds | quote }}
    - name: DURABLE_WORKER_CONCURRENCY
      value: {{ $w.concurrency | quote }}
    - name: DURABLE_WORKER_MAX_ATTEMPTS
      value: {{ $w.maxAttempts | quote }}
    - name: DURABLE_WORKER_RETRY_BACKOFF_MIN
      value: {{ $w.retryBackoffMin | quote }}
    - name: DURABLE_WORKER_RETRY_BACKOFF_MAX
      value: {{ $w.retryBackoffMax | quote }}
    - name: DURABLE_WORKER_BREAKER
      value: {{ $w.breaker.enabled | quote }}
    - name: DURABLE_WORKER_BREAKER_FAILURE_RATIO
      value: {{ $w.breaker.failureRatio | quote }}
    - name: DURABLE_WORKER_BREAKER_WINDOW
      value: {{ $w.breaker.window | quote }}
    - name: DURABLE_WORKER_BREAKER_COOLDOWN
      value: {{ $w.breaker.cooldown | quote }}
    - name: DURABLE_WORKER_IDEMPOTENCY
      value: {{ $w.idempotency | quote }}
    {{- with $w.idempotencyPrefix }}
    - name: DURABLE_WORKER_IDEMPOTENCY_PREFIX
      value: {{ . | quote }}
    {{- end }}
    - name: DURABLE_WORKER_DEAD_LETTER
      value: {{ include "durable-worker.deadLetter" $root | quote }}
    - name: DURABLE_WORKER_METRICS_PORT
      value: {{ $w.metricsPort | quote }}
    - name: DURABLE_WORKER_METRICS_HOST
      value: "0.0.0.0"
    - name: DURABLE_WORKER_LOG_LEVEL
      value: {{ $w.logLevel | quote }}
    - name: DURABLE_WORKER_ISOLATION
      value: {{ $w.isolation | quote }}
    - name: DURABLE_WORKER_SHUTDOWN_TIMEOUT
      value: {{ $w.shutdownTimeoutSeconds | quote }}
    {{- if and .forwardUrl (ne $v.forward.mode "binary") }}
    - name: DURABLE_WORKER_FORWARD_MODE
      value: {{ $v.forward.mode | quote }}
    {{- end }}
    {{- if and .forwardUrl $v.forward.rate }}
    - name: DURABLE_WORKER_FORWARD_RATE
      value: {{ $v.forward.rate | quote }}
    {{- end }}
    {{- if and .forwardUrl $v.forward.concurrency }}
    - name: DURABLE_WORKER_FORWARD_CONCURRENCY
      value: {{ $v.forward.concurrency | quote }}
    {{- end }}
    {{- if $c.useApiKey }}
    - name: DURABLE_WORKER_API_KEY
      valueFrom:
        secretKeyRef:
          name: {{ $secretName }}
          key: {{ $c.apiKeyKey }}
    {{- else if $c.clientId }}
    - name: DURABLE_WORKER_CLIENT_ID
      value: {{ $c.clientId | quote }}
    {{- if $c.mountAsFile }}
    - name: DURABLE_WORKER_CLIENT_SECRET_FILE
      value: {{ printf "%s/%s" $c.mountPath $c.clientSecretKey | quote }}
    {{- else }}
    - name: DURABLE_WORKER_CLIENT_SECRET
      valueFrom:
        secretKeyRef:
          name: {{ $secretName }}
          key: {{ $c.clientSecretKey }}
    {{- end }}
    {{- end }}
    {{- with include "durable-worker.tracingEnv" $root | trim }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- with $w.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $w.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: metrics
      containerPort: {{ $w.metricsPort }}
      protocol: TCP
  {{- if $v.probes.startup.enabled }}
  startupProbe:
    httpGet:
      path: /healthz
      port: metrics
    {{- toYaml (omit $v.probes.startup "enabled") | nindent 4 }}
  {{- end }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: metrics
    {{- toYaml $v.probes.liveness | nindent 4 }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: metrics
    {{- toYaml $v.probes.readiness | nindent 4 }}
  lifecycle:
    # The process drains on SIGTERM by itself; this pause lets endpoints and scrapers drop the pod first.
    preStop:
      {{- if $v.lifecycle.useSleepAction }}
      sleep:
        seconds: {{ $v.lifecycle.preStopSleepSeconds }}
      {{- else }}
      exec:
        command: ["sleep", {{ $v.lifecycle.preStopSleepSeconds | quote }}]
      {{- end }}
  {{- with $v.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  volumeMounts:
    - name: durable-worker-state
      mountPath: {{ $w.stateDir }}
    - name: durable-worker-tmp
      mountPath: /tmp
    {{- if eq $v.handlers.source "configMap" }}
    - name: durable-worker-handlers
      mountPath: {{ $v.handlers.path }}
      readOnly: true
    {{- end }}
    {{- if and $c.clientId (not $c.useApiKey) $c.mountAsFile }}
    - name: durable-worker-credentials
      mountPath: {{ $c.mountPath }}
      readOnly: true
    {{- end }}
    {{- with $w.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/*
The worker as a sidecar in YOUR pod spec: include it under `containers:` and include
"durable-worker.sidecarVolumes" under `volumes:`. Call it with a context whose .Values are this chart's
values (with the chart as a dependency: (dict "Values" (index .Values "durable-worker") "Release" .Release "Chart" .Chart)).
It forwards to forward.url, or to http://127.0.0.1:<sidecar.app.port><forward.path>.
*/}}
{{- define "durable-worker.sidecarContainer" -}}
{{- include "durable-worker.validateCredentials" . }}
{{- include "durable-worker.validateState" . }}
{{- $url := .Values.forward.url | default (printf "http://127.0.0.1:%d%s" (int .Values.sidecar.app.port) .Values.forward.path) }}
{{- include "durable-worker.workerContainer" (dict "root" . "forwardUrl" $url) }}
{{- end }}

{{/* Volumes the worker container mounts. Same context as durable-worker.sidecarContainer. */}}
{{- define "durable-worker.sidecarVolumes" -}}
{{- $v := .Values }}
{{- $c := $v.credentials -}}
- name: durable-worker-state
{{- if include "durable-worker.persistent" . }}
  persistentVolumeClaim:
    claimName: {{ include "durable-worker.stateClaimName" . }}
{{- else }}
  emptyDir: {}
{{- end }}
- name: durable-worker-tmp
  emptyDir: {}
{{- if eq $v.handlers.source "configMap" }}
- name: durable-worker-handlers
  configMap:
    name: {{ include "durable-worker.handlersConfigMapName" . }}
{{- end }}
{{- if and $c.clientId (not $c.useApiKey) $c.mountAsFile }}
- name: durable-worker-credentials
  secret:
    secretName: {{ include "durable-worker.secretName" . }}
    defaultMode: 0440
    items:
      - key: {{ $c.clientSecretKey }}
        path: {{ $c.clientSecretKey }}
{{- end }}
{{- with include "durable-worker.extraVolumes" . }}
{{ . }}
{{- end }}
{{- end }}

{{/*
OpenTelemetry (tracing.*): --otel by env and the standard OTEL_* variables the SDK reads (docs/tracing.md).
The pod name comes in by the downward API and goes into the resource as k8s.pod.name.
*/}}
{{- define "durable-worker.tracingEnv" -}}
{{- $t := .Values.tracing -}}
{{- if $t.enabled }}
- name: DURABLE_WORKER_OTEL
  value: "true"
{{- with $t.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $t.protocol | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ $t.serviceName | default (include "durable-worker.fullname" .) | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ $t.sampler | quote }}
{{- with $t.samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
- name: OTEL_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.pod.name=$(OTEL_POD_NAME)%s" (ternary (printf ",%s" $t.resourceAttributes) "" (ne $t.resourceAttributes "")) | quote }}
{{- end }}
{{- end }}

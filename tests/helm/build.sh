#!/usr/bin/env bash
# Builds helm (test tooling: tests/helm/chart_test.ts) from the Go module proxy, once per version,
# into a cache folder outside the repo, like tests/kube/build.sh does for the control plane.
# `go install` of a pinned version builds with helm's own go.mod and go.sum, verified against
# the checksum database. Prints the helm binary's path on its last line of stdout.
# Measured cold (empty module and build caches, 2026-11-26): 338 s user + 121 s sys CPU, 410 MB
# downloaded modules, 720 MB build cache; 20 min wall on 2 cores shared with other builds (load
# ~10), so roughly 4-5 min on 2 idle cores.
#
# BOOTC_HELM_BIN: use this helm instead. BOOTC_OPERATOR_CACHE overrides the cache root.
set -euo pipefail

helm_version=v3.22.0
# The Kubernetes version helm assumes without a cluster (lint, template), as helm's Makefile stamps
# it: that of its client-go (v0.37 for helm v3.22.0).
kube_minor=37
if [[ -n "${BOOTC_HELM_BIN:-}" ]]; then
  [[ -x "$BOOTC_HELM_BIN" ]] || { echo "[helm-build] BOOTC_HELM_BIN=$BOOTC_HELM_BIN is not executable" >&2; exit 1; }
  echo "$BOOTC_HELM_BIN"
  exit 0
fi
cache_root=${BOOTC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootc-operator}
out="$cache_root/helm-$helm_version"

log() { printf '[helm-build] %s\n' "$*" >&2; }

mkdir -p "$out"
# One builder at a time: parallel test processes wait for the first build.
exec 9>"$out/.lock"
flock 9

if [[ ! -x "$out/helm" ]]; then
  command -v go >/dev/null || { log "Go is required to build helm $helm_version"; exit 1; }
  log "building helm $helm_version into $out (cold: ~460 CPU-seconds and ~410 MB of modules; cached afterwards)"
  start=$(date +%s)
  rm -rf "$out/bin.tmp"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kube_minor"
  done
  GOBIN="$out/bin.tmp" go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$helm_version"
  mv "$out/bin.tmp/helm" "$out/helm"
  rmdir "$out/bin.tmp"
  log "built helm in $(($(date +%s) - start))s"
fi
echo "$out/helm"

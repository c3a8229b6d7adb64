#!/usr/bin/env bash
# Builds cosign (test tooling: signs the test images in the test registry, tests/cosign) from the
# Go module proxy, once per version, into a cache folder outside the repo, as tests/helm/build.sh
# does for helm. `go install` of a pinned version builds with cosign's own go.mod and go.sum,
# verified against the checksum database. Prints the cosign binary's path on its last line.
#
# BOOTC_COSIGN_BIN: use this cosign instead. BOOTC_OPERATOR_CACHE overrides the cache root.
set -euo pipefail

cosign_version=v2.6.5
if [[ -n "${BOOTC_COSIGN_BIN:-}" ]]; then
  [[ -x "$BOOTC_COSIGN_BIN" ]] || { echo "[cosign-build] BOOTC_COSIGN_BIN=$BOOTC_COSIGN_BIN is not executable" >&2; exit 1; }
  echo "$BOOTC_COSIGN_BIN"
  exit 0
fi
cache_root=${BOOTC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootc-operator}
out="$cache_root/cosign-$cosign_version"

log() { printf '[cosign-build] %s\n' "$*" >&2; }

mkdir -p "$out"
# One builder at a time: parallel test processes wait for the first build.
exec 9>"$out/.lock"
flock 9

if [[ ! -x "$out/cosign" ]]; then
  command -v go >/dev/null || { log "Go is required to build cosign $cosign_version"; exit 1; }
  log "building cosign $cosign_version into $out (cold: several CPU-minutes; cached afterwards)"
  start=$(date +%s)
  rm -rf "$out/bin.tmp"
  GOBIN="$out/bin.tmp" go install -trimpath -ldflags "-s -w" \
    "github.com/sigstore/cosign/v2/cmd/cosign@$cosign_version"
  mv "$out/bin.tmp/cosign" "$out/cosign"
  rmdir "$out/bin.tmp"
  log "built cosign in $(($(date +%s) - start))s"
fi
echo "$out/cosign"

#!/usr/bin/env bash
# Builds the real Kubernetes control plane used by tests and the demo (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok) from
# the Go module proxy, once per version, into a cache folder outside the repo.
# Prints the folder holding the binaries on its last line of stdout.
#
# Honours KUBEBUILDER_ASSETS (envtest's convention): a binary found there is
# used instead of building it. BOOTC_OPERATOR_CACHE overrides the cache root.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kube_version=v1.36.3
kwok_version=v0.8.0
cache_root=${BOOTC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootc-operator}
out="$cache_root/kube-$kube_version-kwok-$kwok_version"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)

log() { printf '[kube-build] %s\n' "$*" >&2; }

mkdir -p "$out"
# One builder at a time: parallel test processes wait for the first build.
exec 9>"$out/.lock"
flock 9

missing=()
for b in "${binaries[@]}"; do
  if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/$b" ]]; then
    ln -sf "$KUBEBUILDER_ASSETS/$b" "$out/$b"
  elif [[ ! -x "$out/$b" ]]; then
    missing+=("$b")
  fi
done

if ((${#missing[@]})); then
  command -v go >/dev/null || { log "Go is required to build ${missing[*]}"; exit 1; }
  log "building ${missing[*]} (Kubernetes $kube_version, kwok $kwok_version) into $out"
  log "a cold build takes about 10 minutes on 2 cores; it is cached afterwards"
  start=$(date +%s)
  stamp="-X k8s.io/component-base/version.gitVersion=$kube_version"
  stamp+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
  stamp+=" -X k8s.io/component-base/version.gitTreeState=clean"
  stamp+=" -X k8s.io/component-base/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  stamp+=" -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
  for b in "${missing[@]}"; do
    t0=$(date +%s)
    case "$b" in
      etcd) (cd "$here/k8s" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/$b.tmp" ./etcd) ;;
      kwok) (cd "$here/kwok" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/$b.tmp" sigs.k8s.io/kwok/cmd/kwok) ;;
      *) (cd "$here/k8s" && go build -mod=readonly -trimpath -ldflags "-s -w $stamp" -o "$out/$b.tmp" "k8s.io/kubernetes/cmd/$b") ;;
    esac
    mv "$out/$b.tmp" "$out/$b"
    log "built $b in $(($(date +%s) - t0))s"
  done
  log "done in $(($(date +%s) - start))s; cache size $(du -sh "$out" | cut -f1)"
fi

# kwok's stage definitions ship in its module; copy them beside the binary.
if [[ ! -d "$out/kwok-stages" ]]; then
  src=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  mkdir -p "$out/kwok-stages.tmp"
  cp "$src"/kustomize/stage/node/fast/node-initialize.yaml \
     "$src"/kustomize/stage/node/heartbeat/node-heartbeat.yaml \
     "$src"/kustomize/stage/pod/general/*.yaml "$out/kwok-stages.tmp/"
  chmod -R u+w "$out/kwok-stages.tmp"
  mv "$out/kwok-stages.tmp" "$out/kwok-stages"
fi
echo "$out"

#!/usr/bin/env bash
# Builds what a real test node runs (tests/node/real_node.ts) once per version, into a cache folder
# outside the repo, like tests/kube/build.sh does for the control plane:
#   kubelet                      k8s.io/kubernetes (same version as the control plane), tests/node/kubelet
#   containerd, ctr,             github.com/containerd/containerd/v2 from the Go module proxy
#   containerd-shim-runc-v2      (`go install` of a pinned version: containerd's own go.mod and go.sum)
#   runc                         Debian's (`apt-get install -y runc`), linked here
#   pause.oci.tar                the pod sandbox image (tests/node/pause.c, static), no registry needed
#   busybox.oci.tar              a test image: Debian's busybox-static (`apt-get install -y busybox-static`)
#   cni/{bridge,host-local,loopback}  github.com/containernetworking/plugins (pinned, `go install`): pod networking
#   node-init                    the node's PID 1 (tests/node/pause.c: waits, reaps orphans)
# Prints the folder holding them on its last line of stdout.
# Measured cold (2026-11-26, 2 cores shared with CI, load 15-40): kubelet 824 s wall with the control
# plane's packages already in Go's build cache (~100 of ~1800 packages left); containerd ~26 min
# wall from an empty module cache at the same load (re-link from the build cache: 52 s). Warm: instant.
#
# BOOTC_NODE_BIN_DIR: use that folder instead (no build). BOOTC_OPERATOR_CACHE overrides the cache root.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kube_version=v1.36.3
containerd_version=v2.4.2
if [[ -n "${BOOTC_NODE_BIN_DIR:-}" ]]; then
  echo "$BOOTC_NODE_BIN_DIR"
  exit 0
fi
cache_root=${BOOTC_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootc-operator}
out="$cache_root/node-kube-$kube_version-containerd-$containerd_version"

log() { printf '[node-build] %s\n' "$*" >&2; }

mkdir -p "$out"
# One builder at a time: parallel test processes wait for the first build.
exec 9>"$out/.lock"
flock 9

need_go() { command -v go >/dev/null || { log "Go is required to build $1"; exit 1; }; }

if [[ ! -x "$out/kubelet" ]]; then
  need_go kubelet
  log "building kubelet $kube_version into $out (cold: several CPU-minutes; cached afterwards)"
  t0=$(date +%s)
  stamp="-X k8s.io/component-base/version.gitVersion=$kube_version"
  stamp+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
  stamp+=" -X k8s.io/component-base/version.gitTreeState=clean"
  stamp+=" -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
  # Same Go settings as tests/kube/build.sh (cgo as the toolchain defaults), so the packages the
  # kubelet shares with the control plane come from Go's build cache (~100 of ~1800 left to build).
  (cd "$here/kubelet" && go build -mod=readonly -trimpath -ldflags "-s -w $stamp" \
    -o "$out/kubelet.tmp" k8s.io/kubernetes/cmd/kubelet)
  mv "$out/kubelet.tmp" "$out/kubelet"
  log "built kubelet in $(($(date +%s) - t0))s"
fi

containerd_bins=(containerd ctr containerd-shim-runc-v2)
if [[ ! -x "$out/containerd" || ! -x "$out/ctr" || ! -x "$out/containerd-shim-runc-v2" ]]; then
  need_go containerd
  log "building containerd $containerd_version into $out"
  t0=$(date +%s)
  rm -rf "$out/bin.tmp"
  pkgs=()
  for b in "${containerd_bins[@]}"; do pkgs+=("github.com/containerd/containerd/v2/cmd/$b@$containerd_version"); done
  # Static, and without the snapshotters that need C libraries (btrfs, devmapper): overlayfs and
  # native are all the test node uses.
  CGO_ENABLED=0 GOBIN="$out/bin.tmp" go install -trimpath -tags "no_btrfs no_devmapper no_zfs" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" "${pkgs[@]}"
  for b in "${containerd_bins[@]}"; do mv "$out/bin.tmp/$b" "$out/$b"; done
  rmdir "$out/bin.tmp"
  log "built containerd in $(($(date +%s) - t0))s"
fi

cni_version=v1.10.0
cni_bins=(bridge host-local loopback)
if [[ ! -x "$out/cni/bridge" || ! -x "$out/cni/host-local" || ! -x "$out/cni/loopback" ]]; then
  need_go "the CNI plugins"
  log "building CNI plugins $cni_version into $out/cni"
  t0=$(date +%s)
  rm -rf "$out/cni.tmp"
  pkgs=()
  for b in bridge loopback; do pkgs+=("github.com/containernetworking/plugins/plugins/main/$b@$cni_version"); done
  pkgs+=("github.com/containernetworking/plugins/plugins/ipam/host-local@$cni_version")
  CGO_ENABLED=0 GOBIN="$out/cni.tmp" go install -trimpath -ldflags "-s -w" "${pkgs[@]}"
  mkdir -p "$out/cni"
  for b in "${cni_bins[@]}"; do mv "$out/cni.tmp/$b" "$out/cni/$b"; done
  rmdir "$out/cni.tmp"
  log "built CNI plugins in $(($(date +%s) - t0))s"
fi

if [[ ! -x "$out/node-init" ]]; then
  command -v gcc >/dev/null || { log "gcc is required to build node-init"; exit 1; }
  gcc -static -Os -s -o "$out/node-init.tmp" "$here/pause.c"
  mv "$out/node-init.tmp" "$out/node-init"
fi

command -v socat >/dev/null || { log "socat is missing: apt-get install -y socat"; exit 1; }

runc=$(command -v runc || true)
[[ -n "$runc" ]] || { log "runc is missing: apt-get install -y runc"; exit 1; }
ln -sf "$runc" "$out/runc"

# Writes a one-layer OCI image archive (for `ctr images import`) of folder $2, named $1, with
# entrypoint $3 (a JSON array), to $4. Timestamps and owners are fixed, so the digest is stable.
oci_archive() {
  local ref=$1 rootfs=$2 entrypoint=$3 dest=$4 work
  work=$(mktemp -d)
  mkdir -p "$work/blobs/sha256"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$work/layer.tar" .
  local diff_id layer layer_size config config_digest manifest manifest_digest
  diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  gzip -n -9 "$work/layer.tar"
  layer=$(sha256sum "$work/layer.tar.gz" | cut -d' ' -f1)
  layer_size=$(stat -c %s "$work/layer.tar.gz")
  mv "$work/layer.tar.gz" "$work/blobs/sha256/$layer"
  config='{"architecture":"amd64","os":"linux","config":{"Entrypoint":'"$entrypoint"',"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:'"$diff_id"'"]}}'
  printf '%s' "$config" >"$work/config.json"
  config_digest=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  mv "$work/config.json" "$work/blobs/sha256/$config_digest"
  manifest='{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'"$config_digest"'","size":'"${#config}"'},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:'"$layer"'","size":'"$layer_size"'}]}'
  printf '%s' "$manifest" >"$work/manifest.json"
  manifest_digest=$(sha256sum "$work/manifest.json" | cut -d' ' -f1)
  mv "$work/manifest.json" "$work/blobs/sha256/$manifest_digest"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest_digest" "${#manifest}" "$ref" "$ref" >"$work/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -cf "$dest.tmp" oci-layout index.json blobs
  mv "$dest.tmp" "$dest"
  rm -rf "$work"
}

# Bump when an image's content or name changes (tests/node/real_node.ts names them too).
images_version=1
if [[ ! -f "$out/pause-$images_version.oci.tar" ]]; then
  command -v gcc >/dev/null || { log "gcc is required to build the pause image"; exit 1; }
  root=$(mktemp -d)
  gcc -static -Os -s -o "$root/pause" "$here/pause.c"
  oci_archive "bootc-test.local/pause:$images_version" "$root" '["/pause"]' "$out/pause-$images_version.oci.tar"
  rm -rf "$root"
fi
if [[ ! -f "$out/busybox-$images_version.oci.tar" ]]; then
  [[ -x /bin/busybox ]] || { log "/bin/busybox is missing: apt-get install -y busybox-static"; exit 1; }
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/tmp" "$root/proc" "$root/sys" "$root/dev" "$root/etc"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
  done
  oci_archive "bootc-test.local/busybox:$images_version" "$root" '["/bin/sh"]' "$out/busybox-$images_version.oci.tar"
  rm -rf "$root"
fi
echo "$out"

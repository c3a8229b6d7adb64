#!/usr/bin/env bash
# Makes a fresh machine ready for `deno task test` and `deno task demo`:
# the Kubernetes control plane binaries (built once, cached), the Debian packages the tests use (the
# CNCF distribution registry, htpasswd, openssl, ...) and, with --test-tools, helm, cosign and the real
# node's kubelet and containerd (built once, cached), qemu-user-static, runc and busybox-static.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

need=()
command -v docker-registry >/dev/null || [[ -x /usr/bin/docker-registry ]] || need+=(docker-registry)
command -v htpasswd >/dev/null || need+=(apache2-utils)
command -v openssl >/dev/null || need+=(openssl)
command -v nsenter >/dev/null || need+=(util-linux)
command -v promtool >/dev/null || need+=(prometheus)
command -v tmux >/dev/null || need+=(tmux) # the kubectl plugin's terminal test
# Test tools only (`deno task test` passes --test-tools; the demo needs neither): the arm64
# images' entrypoints run under qemu-user (tests/images), called explicitly, so no binfmt-support.
test_tools=false
[[ "${1:-}" == "--test-tools" ]] && test_tools=true
if $test_tools; then
  [[ -x /usr/bin/qemu-aarch64-static ]] || need+=(qemu-user-static)
  # The real node (tests/node): Debian's runc, and busybox-static for its test image.
  command -v runc >/dev/null || need+=(runc)
  dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
  # socat carries the node's API and kubelet connections across its network namespace.
  command -v socat >/dev/null || need+=(socat)
fi
if ((${#need[@]})); then
  echo "[prepare] installing Debian packages: ${need[*]}" >&2
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
# The registry package starts a system service on install; tests run their own.
if command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry 2>/dev/null; then
  systemctl stop docker-registry >/dev/null 2>&1 || true
fi
# Likewise the prometheus package (the tests need only its promtool): stop it and keep it off.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus >/dev/null 2>&1 || true
fi
if command -v systemctl >/dev/null && systemctl is-enabled --quiet prometheus 2>/dev/null; then
  systemctl disable prometheus >/dev/null 2>&1 || true
fi

bash "$here/kube/build.sh" >/dev/null
# helm is test tooling only (tests/helm).
if $test_tools; then
  bash "$here/helm/build.sh" >/dev/null
  # cosign signs the test images (tests/cosign).
  bash "$here/cosign/build.sh" >/dev/null
  # The real node's kubelet, containerd and images (tests/node).
  bash "$here/node/build.sh" >/dev/null
fi

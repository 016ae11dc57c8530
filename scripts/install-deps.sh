#!/usr/bin/env bash
# Installs everything aobj needs to build, test and fuzz, from Debian 12 packages only.
# Run as root on a fresh Debian 12 machine. Safe to run again: it skips apt when all is present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libucx-dev ucx-utils rdma-core libibverbs-dev librdmacm-dev
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  libabsl-dev libgtest-dev libgmock-dev libssl-dev
  clang-14 libclang-rt-14-dev
  python3 python3-dev pybind11-dev python3-pytest python3-numpy python3-torch
  libcurl4-openssl-dev nginx-light wrk
  libmicrohttpd-dev
  doxygen groff-base
  librados-dev ceph-mon ceph-osd ceph-common radosgw
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

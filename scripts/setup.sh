#!/usr/bin/env bash
# Idempotent set-up: Debian packages, the Python environment, the Rust build.
set -euo pipefail
cd "$(dirname "$0")/.."

# Real components the tests run: OpenSM on ibsim, SimGrid's smpirun, MPICH; Open vSwitch,
# iperf3 and the ip/tc/ethtool tools for the emulated testbed (netsteer emulate); MPICH's mpicc,
# clang and libbpf for MPI programs and host tagging on it (netsteer.emulate.mpi, hosttag/).
packages=(build-essential pkg-config python3-venv opensm ibsim-utils infiniband-diags libsimgrid-dev mpich
          openvswitch-switch iperf3 iproute2 iputils-ping ethtool libmpich-dev clang-14 libbpf-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo (Rust) is required" >&2; exit 1; }

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 'maturin>=1.5,<2'
# builds the Rust extension (release) through maturin and installs netsteer editable
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,openflow]'
echo "setup: ok ($(.venv/bin/netsteer --version))"

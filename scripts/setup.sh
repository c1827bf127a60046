#!/usr/bin/env bash
#===- scripts/setup.sh - Install everything Tessel needs, idempotently -----===#
#
# Installs the Debian packages (LLVM/MLIR 22, lld, ONNX, FlatBuffers, CLI11,
# GoogleTest, libsodium and openssl for signed artifacts, clang's sanitizer
# and libFuzzer runtimes, build tools, the CPU build of torch for exporting
# test models, headless Chromium and a font for the HTML report's browser test)
# and creates the project's Python virtual environment (.venv) with onnx,
# numpy and onnxruntime from PyPI. Running it again installs only what is
# missing, so `make demo` and `make test` call it every time.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
venv="$repo_root/.venv"

debian_packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools liblld-22-dev lld-22
  clang-22 libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler libcli11-dev libgtest-dev libsodium-dev
  openssl libclang-rt-22-dev cmake ninja-build ccache python3-venv python3-torch
  python3-torchvision pkg-config chromium-headless-shell fonts-dejavu-core
)
# scikit-learn ships the handwritten digits that the PTQ accuracy test trains on;
# onnxruntime's quantization preprocessing (the QDQ models the INT8 tests and
# benchmark compare with) needs sympy. nanobind builds the `tessel` Python
# package (python/), whose tests pytest runs. pillow reads the screenshots the
# HTML report's browser test takes.
python_packages=(onnx==1.22.0 numpy==2.3.5 onnxruntime==1.32.0 scikit-learn==1.9.1
                 sympy==1.14.0 nanobind==3.1.0 pytest==9.2.0 pillow==13.0.0)

missing=()
for package in "${debian_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
fi

# The venv uses the `python3` on PATH (pip's interpreter); Debian's
# /usr/bin/python3 keeps torch for exporting models.
stamp="$venv/.tessel-requirements"
wanted="${python_packages[*]}"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
  echo "setup: creating Python environment in $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${python_packages[@]}"
  echo "$wanted" > "$stamp"
fi

# The CUDA target needs no toolkit to compile (LLVM's NVPTX backend writes
# the PTX); the toolkit's ptxas checks that PTX in the tests and its
# libdevice provides the math that has no PTX instruction. Neither comes
# from Debian or PyPI: the machines' image has it in /usr/local/cuda.
cuda=${CUDA_HOME:-/usr/local/cuda}
if [[ ! -x "$cuda/bin/ptxas" || ! -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]]; then
  echo "setup: note: no CUDA toolkit in $cuda (bin/ptxas, nvvm/libdevice): the ptxas and" \
    "libdevice tests are reported unsupported, and models whose kernels need libdevice" \
    "(f64 exp/log, fmod) do not compile for --target cuda; set CUDA_HOME to where it is"
fi

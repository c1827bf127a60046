#!/usr/bin/env python3
"""Prepares the GPU checks of the CUDA target as one folder to run on a
machine with an NVIDIA GPU (and no compiler: it needs only the runtime).

Here, where the compiler is: every ONNX node test of an expected-to-pass
list and every given real model is compiled with --target cuda (PTX for
sm_80 and sm_90 beside the x86 code). The node tests' artifacts are kept
only when they pass on this machine's CPU (the x86 half of the same file),
so that a failure on the GPU is the GPU's. The folder then holds the
artifacts, their test data, tessel-run with the libraries it needs, and
gpu-checks.sh, which runs everything with `tessel-run --device cuda` and
ends with a summary line `N passed, N failed`.

Models are compiled once per --precisions entry (models/NAME.PRECISION).
--products takes the folder scripts/tensor-core-products.py wrote and
compiles each product at fp16, bf16 and fp32 with its data. --bench models
(large ones, whose weights scripts/two-level-weights.py made compressible)
are compiled without data (bench/NAME.PRECISION.tsl), for latency only.

--pack writes the folder as one tar.xz to carry to the GPU machine. The
copies of one model (each precision, each batch: name them with a common
prefix, resnet50_b1 and resnet50_b32) hold the same weights, so they are
packed next to each other with a dictionary that reaches from one to the
next, and the weights are stored once (the bundle of 2026-11-28: 33 MB so,
65 MB with each bench artifact xz-packed alone). Unpacking takes 256 MiB.

  scripts/cuda-device-bundle.py --build build --out .gpu \\
      --node-list test/EndToEnd/OnnxNode/onnx-1.22/expected-pass.txt \\
      --model squeezenet=path/model.onnx:path/data ... \\
      --products DIR --bench resnet50_b32=path/model.onnx ... \\
      --pack .gpupack/bundle.tar.xz
"""

import argparse
import lzma
import os
import shutil
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "lib"))
import onnx_node_test  # noqa: E402

PRODUCT_PRECISIONS = ("fp16", "bf16", "fp32")
# Libraries from outside the build that tessel-run loads and a CUDA machine
# may lack (it has the C and C++ runtimes).
SYSTEM_LIBRARIES = ("onnx", "protobuf", "abseil")
# --pack: BERT-base's artifacts are 120 MB each; xz -9's 64 MiB would not
# reach from one copy back to the one before it.
PACK_DICTIONARY = 256 << 20


def cuda_flags(args, precision):
    return ["--target", "cuda", "--cuda-arch", args.arch, "--precision", precision,
            "--target-cpu", args.target_cpu] + (["--cuda-cubins"] if args.cubins else [])


def compile_model(tools, model, artifact, flags):
    subprocess.check_call([os.path.join(tools, "tessel-compile"), model, "-q", "-o", artifact,
                           *flags], stdout=subprocess.DEVNULL)


def node_test_root(python):
    code = "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), " \
           "'backend', 'test', 'data', 'node'))"
    return subprocess.check_output([python, "-c", code], text=True).strip()


def bundle_node_tests(args, tools, out):
    root = node_test_root(args.python)
    with open(args.node_list) as stream:
        names = [line.strip() for line in stream if line.strip() and not line.startswith("#")]
    if args.limit:
        names = names[:args.limit]
    kept = failed = 0
    for i, name in enumerate(names):
        work = os.path.join(out, "node", name)
        outcome = onnx_node_test.run_node_test(tools, os.path.join(root, name), work,
                                               compile_args=cuda_flags(args, args.node_precision))
        if outcome.status != onnx_node_test.PASS:
            failed += 1
            print("%s: %s on the CPU: %s" % (name, outcome.status, outcome.detail))
            shutil.rmtree(work, ignore_errors=True)
            continue
        for entry in os.listdir(os.path.join(root, name)):
            if entry.startswith("test_data_set_"):
                shutil.copytree(os.path.join(root, name, entry), os.path.join(work, entry))
        kept += 1
        if (i + 1) % 100 == 0:
            print("node tests: %d of %d compiled" % (i + 1, len(names)), flush=True)
    print("node tests: %d bundled, %d not (they fail with --target cuda on the CPU)"
          % (kept, failed))


def bundle_models(args, tools, out):
    for spec in args.model:
        name, paths = spec.split("=", 1)
        model, data = paths.split(":", 1)
        for precision in args.precisions.split(","):
            folder = os.path.join(out, "models", "%s.%s" % (name, precision))
            os.makedirs(folder, exist_ok=True)
            compile_model(tools, model, os.path.join(folder, "model.tsl"),
                          cuda_flags(args, precision))
            shutil.copytree(data, os.path.join(folder, "data"), dirs_exist_ok=True)
            print("model %s: compiled at %s" % (name, precision), flush=True)


def bundle_products(args, tools, out):
    for name in sorted(os.listdir(args.products)):
        source = os.path.join(args.products, name)
        for precision in PRODUCT_PRECISIONS:
            folder = os.path.join(out, "products", "%s.%s" % (name, precision))
            os.makedirs(folder, exist_ok=True)
            compile_model(tools, os.path.join(source, "model.onnx"),
                          os.path.join(folder, "model.tsl"), cuda_flags(args, precision))
            shutil.copytree(os.path.join(source, precision), os.path.join(folder, "data"),
                            dirs_exist_ok=True)
        print("product %s: compiled" % name, flush=True)


def bundle_bench(args, tools, out):
    folder = os.path.join(out, "bench")
    os.makedirs(folder, exist_ok=True)
    for spec in args.bench:
        name, model = spec.split("=", 1)
        for precision in args.precisions.split(","):
            artifact = os.path.join(folder, "%s.%s.tsl" % (name, precision))
            compile_model(tools, model, artifact, cuda_flags(args, precision))
            print("bench %s: compiled at %s" % (name, precision), flush=True)


def loaded_libraries(tool):
    """(name, path) of every library ldd lists for tool; path None where
    the loader finds none."""
    listing = subprocess.check_output(["ldd", tool], text=True)
    for line in listing.splitlines():
        parts = line.split("=>")
        if len(parts) == 2:
            path = parts[1].split()[0] if parts[1].strip().startswith("/") else None
            yield parts[0].strip(), path


def copy_runtime(args, out):
    """tessel-run and every library it loads that a CUDA machine may lack.

    Those the build made (the runtime) come from its lib folder, not from
    where ldd finds them: the tool's RUNPATH names the folder it was linked
    in (a copied build's names the original), and LD_LIBRARY_PATH may name
    another build. ldd finds the others."""
    os.makedirs(os.path.join(out, "bin"), exist_ok=True)
    os.makedirs(os.path.join(out, "lib"), exist_ok=True)
    tool = os.path.join(args.build, "bin", "tessel-run")
    shutil.copy(tool, os.path.join(out, "bin"))
    built = os.path.join(args.build, "lib")
    for name, path in loaded_libraries(tool):
        if os.path.exists(os.path.join(built, name)):
            path = os.path.join(built, name)
        elif path is None or not any(key in path for key in SYSTEM_LIBRARIES):
            continue
        shutil.copy(os.path.realpath(path), os.path.join(out, "lib", name))


def pack(folder, path):
    """folder as one tar.xz, its entries in the order of their names (tarfile
    sorts them), so that the copies of one model lie next to each other."""
    filters = [{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": PACK_DICTIONARY}]
    with lzma.open(path, "wb", filters=filters) as stream, \
            tarfile.open(fileobj=stream, mode="w") as archive:
        archive.add(folder, arcname=".")
    print("packed %s into %s: %.1f MB" % (folder, path, os.path.getsize(path) / 1e6))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--out", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--node-list")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--model", action="append", default=[],
                        help="NAME=MODEL.onnx:DATA_DIR (input_N.pb and output_N.pb)")
    parser.add_argument("--arch", default="sm_80,sm_90", help="--cuda-arch of every artifact")
    # The runtime refuses an artifact whose CPU code needs instructions the
    # GPU machine's processor lacks (this one's may be another vendor's),
    # even where the GPU runs it.
    parser.add_argument("--target-cpu", default="x86-64-v3",
                        help="--target-cpu of the artifacts' x86 code (default: %(default)s)")
    parser.add_argument("--precisions", default="fp16",
                        help="the --precision of each compilation of the models, comma-separated")
    parser.add_argument("--node-precision", default="fp32",
                        help="the node tests' --precision (their tolerance is fp32's)")
    parser.add_argument("--products", help="the folder scripts/tensor-core-products.py wrote")
    parser.add_argument("--cubins", action="store_true",
                        help="compile every artifact with --cuda-cubins, so that the GPU loads "
                             "cubins instead of JIT-compiling the PTX")
    parser.add_argument("--bench", action="append", default=[], help="NAME=MODEL.onnx")
    parser.add_argument("--pack", metavar="PATH.tar.xz",
                        help="write the folder as one tar.xz at PATH (outside the folder)")
    args = parser.parse_args()
    tools = os.path.join(args.build, "bin")
    os.makedirs(args.out, exist_ok=True)
    copy_runtime(args, args.out)
    for script in ("gpu-checks.sh", "compare-outputs.py"):
        shutil.copy(os.path.join(os.path.dirname(__file__), script), args.out)
    if args.model:
        bundle_models(args, tools, args.out)
    if args.products:
        bundle_products(args, tools, args.out)
    if args.bench:
        bundle_bench(args, tools, args.out)
    if args.node_list:
        bundle_node_tests(args, tools, args.out)
    if args.pack:
        pack(args.out, args.pack)


if __name__ == "__main__":
    main()

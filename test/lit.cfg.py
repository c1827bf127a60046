# Tessel's lit configuration: every test of the project runs through lit,
# from FileCheck tests of single passes to whole models compared against
# onnxruntime.

import os
import subprocess
import shutil

import lit.formats

config.name = "Tessel"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test", ".onnxtxt"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt",
                   "Unit", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessel_binary_dir, "test")

# Tessel's tools first, then LLVM's (FileCheck, not, count).
config.environment["PATH"] = os.pathsep.join(
    [config.tessel_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PYTHONPATH"] = os.path.join(config.test_source_root, "lib")
# (CUDA_HOME and TESSEL_LIBDEVICE: where the compiler finds ptxas and
# libdevice, as the features below were found.)
for name in ("HOME", "TMPDIR", "CUDA_HOME", "TESSEL_LIBDEVICE"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%torch-python", config.torch_python_executable))
config.substitutions.append(("%testlib", os.path.join(config.test_source_root, "lib")))
config.substitutions.append(("%onnx-testdata", config.onnx_testdata_dir))
config.substitutions.append(("%tessel-build", config.tessel_binary_dir))
config.substitutions.append(("%tessel-source", config.tessel_source_dir))

# Features that gate tests on what this machine has.
if os.path.isdir(config.onnx_testdata_dir):
    config.available_features.add("onnx-testdata")
# The node tests shipped in the onnx wheel of the project's environment.
config.onnx_wheel_node_tests_dir = ""
try:
    probe = subprocess.run(
        [config.python_executable, "-c",
         "import onnx, os; print(onnx.__version__); "
         "print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'node'))"],
        capture_output=True, text=True, timeout=60)
    if probe.returncode == 0:
        version, directory = probe.stdout.split()
        config.onnx_wheel_node_tests_dir = directory
        if version.startswith("1.22.") and os.path.isdir(directory):
            config.available_features.add("onnx-1.22-testdata")
except (OSError, subprocess.TimeoutExpired, ValueError):
    pass
if shutil.which("pkg-config"):
    config.available_features.add("pkg-config")
# Headless Chromium renders the HTML reports in their browser test.
browser = shutil.which("chromium-headless-shell") or shutil.which("chromium")
if browser:
    config.available_features.add("browser")
    config.substitutions.append(("%browser", browser))
if os.path.exists(config.torch_python_executable):
    config.available_features.add("torch")
# x86 extensions of the host CPU, as /proc/cpuinfo spells them.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                for flag in line.split(":", 1)[1].split():
                    config.available_features.add("host-" + flag)
                break
except OSError:
    pass
# A GPU the CUDA device can run on (tests that need one are reported
# unsupported elsewhere).
if shutil.which("nvidia-smi") and os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-device")
if shutil.which("compute-sanitizer"):
    config.available_features.add("compute-sanitizer")
# The CUDA toolkit's PTX assembler, which checks the PTX the CUDA target
# emits (scripts/setup.sh says where it looks).
ptxas = shutil.which("ptxas") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                                              "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# libdevice, which the CUDA target links for the math NVPTX has no
# instruction for (f64 exponentials, fmod): targets/cuda/Ptx.cpp looks there.
libdevice = os.environ.get("TESSEL_LIBDEVICE") or os.path.join(
    os.environ.get("CUDA_HOME", "/usr/local/cuda"), "nvvm", "libdevice", "libdevice.10.bc")
if os.path.isfile(libdevice):
    config.available_features.add("libdevice")

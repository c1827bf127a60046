"""PEP 517 backend for `pip install ./python` and `make wheel`.

The package is a product of the project's CMake build: this backend builds
the `tessel_python` target in that build (build/ beside this folder, or
$TESSEL_BUILD_DIR; configured first if it does not exist), installs its
`python` component into a staging folder and packs that into a wheel for the
interpreter the extension was built for. It uses the standard library only.
"""

import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# pyproject.toml's [project] table (Python 3.9 has no tomllib; the table
# holds only simple strings and one list).
_PROJECT = open(os.path.join(HERE, "pyproject.toml")).read().split("[project]", 1)[1]


def _field(key):
    return re.search(rf'^{key} = "(.*)"', _PROJECT, re.M).group(1)


NAME, VERSION = _field("name"), _field("version")


def _metadata():
    dependencies = re.findall(r'"([^"]+)"', re.search(r"^dependencies = \[(.*)\]", _PROJECT,
                                                      re.M).group(1))
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {VERSION}",
             f"Summary: {_field('description')}",
             f"Requires-Python: {_field('requires-python')}"]
    lines += [f"Requires-Dist: {dependency}" for dependency in dependencies]
    return "\n".join(lines) + "\n"


def _build_dir(config_settings):
    return os.path.abspath((config_settings or {}).get("build-dir")
                           or os.environ.get("TESSEL_BUILD_DIR")
                           or os.path.join(REPO, "build"))


def _run(command):
    print("tessel build backend:", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, stdout=sys.stderr)


def _stage(config_settings, staging):
    """Builds the package in the CMake build and installs it into `staging`."""
    build = _build_dir(config_settings)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        _run(["cmake", "-G", "Ninja", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
    _run(["cmake", "--build", build, "--target", "tessel_python"])
    _run(["cmake", "--install", build, "--component", "python", "--prefix", staging])
    package = os.path.join(staging, NAME)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not os.path.exists(os.path.join(package, "_tessel" + suffix)):
        built = [name for name in os.listdir(package) if name.startswith("_tessel.")]
        sys.exit(f"the build in {build} made {built} for another Python than this one "
                 f"({sys.executable}, wants _tessel{suffix}); configure it with "
                 f"-DTESSEL_PYTHON={sys.executable}")
    return package


def _tag():
    interpreter = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{interpreter}-{interpreter}-{platform}"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    tag = _tag()
    wheel_name = f"{NAME}-{VERSION}-{tag}.whl"
    dist_info = f"{NAME}-{VERSION}.dist-info"
    with tempfile.TemporaryDirectory(prefix="tessel-wheel-") as staging:
        package = _stage(config_settings, staging)
        files = {}
        for name in sorted(os.listdir(package)):
            with open(os.path.join(package, name), "rb") as file:
                files[f"{NAME}/{name}"] = file.read()
        files[f"{dist_info}/METADATA"] = _metadata().encode()
        files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: tessel build_backend\n"
                                       f"Root-Is-Purelib: false\nTag: {tag}\n").encode()
        record = [_record_line(name, data) for name, data in files.items()]
        record.append(f"{dist_info}/RECORD,,")
        files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
        path = os.path.join(wheel_directory, wheel_name)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
            for name, data in files.items():
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                info.external_attr = (0o755 if name.endswith(".so") or ".so." in name
                                      else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                wheel.writestr(info, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("tessel is built from its repository's CMake build; "
                       "use `pip install ./python` or `make wheel`")

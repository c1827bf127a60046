"""Runs one ONNX backend node test through tessel-compile and tessel-run.

A test is a folder with model.onnx and test_data_set_*/ (input_N.pb,
output_N.pb). Both the lit format (the expected-to-pass lists) and the
conformance runner (scripts/conformance.py) classify tests with this module,
so that the two can never disagree on what passing means.
"""

import dataclasses
import os
import re
import signal
import subprocess

# onnx.backend.test's default tolerances.
RTOL = 1e-3
ATOL = 1e-7

PASS = "pass"
COMPILE_FAILURE = "compile failure"
WRONG_RESULT = "wrong result"
RUN_FAILURE = "run failure"
CRASH = "crash"
TIMEOUT = "timeout"
OUTCOMES = (PASS, COMPILE_FAILURE, WRONG_RESULT, RUN_FAILURE, CRASH, TIMEOUT)

_MAX_ABS_ERROR = re.compile(r"max abs error ([^,]+), max rel error ([^,]+)")
# tessel-compile's hint for an input that an op needs at compile time.
_FREEZE_HINT = re.compile(r"graph input '([^']+)': --freeze-input")
# tessel-compile's hint for a sequence-typed graph input, whose tensors'
# shapes it needs at compile time.
_SEQUENCE_HINT = re.compile(r"graph input '([^']+)' is an? (optional )?sequence: give the shapes")
# tessel-compile's hint for a tensor graph input of a symbolic shape.
_SHAPE_HINT = re.compile(r"graph input '([^']+)' dimension \d+ is symbolic")
# tessel-run's refusal of data that leaves an optional graph input empty
# where the artifact takes its element (the compiler's default).
_ABSENT_HINT = re.compile(r"graph input \d+ '([^']+)' is [^,]*, but the test data gives an empty "
                          r"optional")


@dataclasses.dataclass
class Outcome:
    status: str
    detail: str  # one line: the first diagnostic, the largest error, ...
    log: str  # everything the tools printed
    # The graph inputs compiled in as constants (--freeze-input), or for
    # the structure the data gives them (--sequence, --absent): a test that
    # passes only so would not pass run as a user runs it.
    frozen: tuple = ()


def _first_error(output):
    """The first diagnostic; for a list of problems, the first problem."""
    lines = [line for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if "error:" not in line:
            continue
        message = line.split("error:", 1)[1].strip()
        if message.endswith(":") and i + 1 < len(lines):
            return lines[i + 1].strip()
        # Drop the model path that starts most messages.
        return re.sub(r"^\S*\.onnx: ", "", message)
    return lines[0].strip() if lines else "no message"


def _signal_name(code):
    try:
        return signal.Signals(-code).name
    except ValueError:
        return "signal %d" % -code


def _largest_error(output):
    errors = _MAX_ABS_ERROR.findall(output)
    if not errors:
        return _first_error(output)
    worst = max(errors, key=lambda pair: float(pair[0]))
    return "max abs error %s, max rel error %s" % worst


def _run(command, timeout):
    try:
        process = subprocess.run(command, capture_output=True, text=True,
                                 errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s: %s\n" % (timeout, " ".join(command))
    return process.returncode, process.stdout + process.stderr


def run_node_test(tools_dir, model_dir, work_dir, timeout=120,
                  rtol=RTOL, atol=ATOL, compile_args=()):
    """Compiles model_dir/model.onnx into work_dir (with compile_args added,
    such as a --target) and runs every data set. An optional graph input
    that the data leaves empty is compiled again as such (--absent)."""
    outcome = _compile_and_run(tools_dir, model_dir, work_dir, timeout, rtol, atol, compile_args)
    absent = _ABSENT_HINT.findall(outcome.log) if outcome.status == RUN_FAILURE else []
    if not absent:
        return outcome
    args = list(compile_args)
    for name in sorted(set(absent)):
        args += ["--absent", name]
    outcome = _compile_and_run(tools_dir, model_dir, work_dir, timeout, rtol, atol, args)
    return dataclasses.replace(outcome, frozen=outcome.frozen + tuple(sorted(set(absent))))


def _compile_and_run(tools_dir, model_dir, work_dir, timeout, rtol, atol, compile_args):
    os.makedirs(work_dir, exist_ok=True)
    name = os.path.basename(os.path.normpath(model_dir))
    artifact = os.path.join(work_dir, name + ".tsl")
    compile_command = [os.path.join(tools_dir, "tessel-compile"),
                       os.path.join(model_dir, "model.onnx"), "-o", artifact, "-q",
                       *compile_args]
    data_sets = sorted(d for d in os.listdir(model_dir)
                       if d.startswith("test_data_set_"))
    code, output = _run(compile_command, timeout)
    log = [output]
    # The test may feed axes, shapes or pads as inputs; when the data gives
    # one a single value in every data set, it is compiled in as a constant.
    # Each compile names the inputs it needs next, so this takes a few rounds.
    # A sequence input, or a tensor input of a symbolic shape, is compiled
    # for the shapes the data gives it, when every data set gives the same.
    frozen, structure = [], {}
    for _ in range(4):
        needed = _inputs_to_freeze(output, model_dir, data_sets) if code else []
        needed = [entry for entry in needed if entry not in frozen]
        shaped = _input_structure(output, model_dir, data_sets) if code else {}
        shaped = {name: args for name, args in shaped.items() if name not in structure}
        if not needed and not shaped:
            break
        frozen += needed
        structure.update(shaped)
        command = list(compile_command)
        for file, name in frozen:
            command += ["--freeze-input", "%s=%s" % (
                name, os.path.join(model_dir, data_sets[0], file))]
        for args in structure.values():
            command += args
        code, output = _run(command, timeout)
        log.append(output)
    if code is None:
        return Outcome(TIMEOUT, "tessel-compile " + output.strip(), "".join(log))
    if code < 0:
        return Outcome(CRASH, "tessel-compile died of " + _signal_name(code),
                       "".join(log))
    if code != 0:
        return Outcome(COMPILE_FAILURE, _first_error(output), "".join(log))

    details = []
    for data_set in data_sets:
        code, output = _run([os.path.join(tools_dir, "tessel-run"), artifact,
                             "--test-data", os.path.join(model_dir, data_set),
                             "--rtol", str(rtol), "--atol", str(atol)], timeout)
        log.append(output)
        if code is None:
            return Outcome(TIMEOUT, "tessel-run " + output.strip(), "".join(log))
        if code < 0:
            return Outcome(CRASH, "tessel-run died of %s on %s"
                           % (_signal_name(code), data_set), "".join(log))
        if code != 0:
            if "FAIL" in output.split():
                return Outcome(WRONG_RESULT, "%s: %s" % (data_set, _largest_error(output)),
                               "".join(log))
            return Outcome(RUN_FAILURE, _first_error(output), "".join(log))
        details.append(_largest_error(output))
    detail = details[-1] if details else "no test data"
    if frozen:
        detail += " (compiled with %s frozen)" % ", ".join(name for _, name in frozen)
    if structure:
        detail += " (compiled for the structure of %s)" % ", ".join(sorted(structure))
    return Outcome(PASS, detail, "".join(log),
                   tuple(name for _, name in frozen) + tuple(sorted(structure)))


def _inputs_to_freeze(output, model_dir, data_sets):
    """(file name, input name) of the graph inputs that tessel-compile asks
    to freeze, if every data set gives each of them the same value; else []."""
    names = sorted(set(_FREEZE_HINT.findall(output)))
    if not names or not data_sets:
        return []
    first = os.path.join(model_dir, data_sets[0])
    files = {}
    for file in sorted(os.listdir(first)):
        if file.startswith("input_"):
            with open(os.path.join(first, file), "rb") as stream:
                files[_tensor_name(stream.read())] = file
    frozen = []
    for name in names:
        if name not in files:
            return []
        values = set()
        for data_set in data_sets:
            path = os.path.join(model_dir, data_set, files[name])
            if not os.path.exists(path):
                return []
            with open(path, "rb") as stream:
                values.add(stream.read())
        if len(values) != 1:
            return []
        frozen.append((files[name], name))
    return frozen


def _input_structure(output, model_dir, data_sets):
    """The compile arguments for each graph input that tessel-compile asks
    the shapes of (--shape for a tensor of a symbolic shape, --sequence,
    or --absent for an empty optional), by name, if every data set gives
    it the same structure; else {}."""
    optional = dict(_SEQUENCE_HINT.findall(output))
    tensors = set(_SHAPE_HINT.findall(output))
    names = sorted(set(optional) | tensors)
    if not names or not data_sets:
        return {}
    structures = {}
    for data_set in data_sets:
        folder = os.path.join(model_dir, data_set)
        found = {}
        for file in sorted(os.listdir(folder)):
            if file.startswith("input_"):
                with open(os.path.join(folder, file), "rb") as stream:
                    data = stream.read()
                fields = _fields(data)
                # A tensor's name is its field 8, a sequence's or optional's
                # its field 1.
                for number in (1, 8):
                    name = next((value for field, value in fields if field == number
                                 and isinstance(value, bytes)), b"")
                    found[name.decode("utf-8", "replace")] = fields
        for name in names:
            if name not in found:
                return {}
            args = _shape_args(name, found[name]) if name in tensors else \
                _structure_args(name, found[name], bool(optional[name]))
            structures.setdefault(name, set()).add(args)
    if any(len(seen) != 1 for seen in structures.values()):
        return {}
    return {name: list(seen.pop()) for name, seen in structures.items()}


def _shape_args(name, fields):
    """--shape NAME=DIMS for a TensorProto's fields."""
    return ("--shape", "%s=%s" % (name, "x".join(map(str, _dims(fields)))))


def _dims(fields):
    """The dimensions (field 1) of a TensorProto's fields."""
    dims = []
    for field, value in fields:
        if field == 1:
            dims += _varints(value) if isinstance(value, bytes) else [value]
    return dims


def _structure_args(name, fields, optional):
    """--sequence NAME=SHAPES for a SequenceProto's fields, or with
    `optional` an OptionalProto's holding one (its field 5); --absent NAME
    for an empty OptionalProto (no field 3 to 7)."""
    if optional:
        held = [value for field, value in fields if field == 5]
        if not held:
            return ("--absent", name)
        fields = _fields(held[0])
    shapes = []
    for field, tensor in fields:
        if field == 3:
            dims = _dims(_fields(tensor))
            shapes.append("x".join(map(str, dims)) if dims else "scalar")
    return ("--sequence", "%s=%s" % (name, ",".join(shapes)))


def _varint(data, position):
    """The varint at `position` of `data`, and the position after it."""
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position


def _varints(data):
    """The varints packed in `data`."""
    values, position = [], 0
    while position < len(data):
        value, position = _varint(data, position)
        values.append(value)
    return values


def _fields(data):
    """(field number, value) of a serialized protobuf message, read from
    the wire format so that lit's own Python needs no onnx package: an int
    for a varint or fixed field, the bytes of a length-delimited one."""
    fields, position = [], 0
    while position < len(data):
        key, position = _varint(data, position)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value = int.from_bytes(data[position:position + size], "little")
            position += size
        elif wire == 2:
            length, position = _varint(data, position)
            value = data[position:position + length]
            position += length
        else:
            break
        fields.append((field, value))
    return fields


def _tensor_name(data):
    """The name (field 8) of a serialized onnx.TensorProto."""
    return next((value.decode("utf-8", "replace") for field, value in _fields(data)
                 if field == 8 and isinstance(value, bytes)), "")

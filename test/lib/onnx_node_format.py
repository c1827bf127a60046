"""A lit test format for ONNX backend node tests.

Each test named in the directory's list file is one lit test: the model is
compiled with tessel-compile and every test_data_set_* is run and compared
with tessel-run at ONNX's backend-test tolerances. The list file names the
tests expected to pass, so a test that used to pass and now fails breaks
the suite.
"""

import os
import subprocess

import lit.formats
import lit.Test

# onnx.backend.test's default tolerances.
RTOL = 1e-3
ATOL = 1e-7


class OnnxNodeTestFormat(lit.formats.TestFormat):
    def __init__(self, data_dir, list_file, tools_dir, timeout=300):
        self.data_dir = data_dir
        self.list_file = list_file
        self.tools_dir = tools_dir
        self.timeout = timeout

    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig, localConfig):
        source = testSuite.getSourcePath(path_in_suite)
        with open(os.path.join(source, self.list_file)) as names:
            for line in names:
                name = line.split("#")[0].strip()
                if name:
                    yield lit.Test.Test(testSuite, path_in_suite + (name,), localConfig)

    def _run(self, command):
        try:
            process = subprocess.run(command, capture_output=True, text=True,
                                     timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return None, "timed out after %d s: %s" % (self.timeout, " ".join(command))
        return process.returncode, process.stdout + process.stderr

    def execute(self, test, litConfig):
        name = test.path_in_suite[-1]
        model_dir = os.path.join(self.data_dir, name)
        if not os.path.isdir(model_dir):
            return lit.Test.Result(lit.Test.UNRESOLVED, "no test data at " + model_dir)
        tmp_dir = os.path.dirname(test.getExecPath())
        os.makedirs(tmp_dir, exist_ok=True)
        artifact = os.path.join(tmp_dir, name + ".tsl")
        log = []
        code, output = self._run([os.path.join(self.tools_dir, "tessel-compile"),
                                  os.path.join(model_dir, "model.onnx"), "-o", artifact, "-q"])
        log.append(output)
        if code != 0:
            return lit.Test.Result(lit.Test.FAIL, "".join(log))
        data_sets = sorted(d for d in os.listdir(model_dir) if d.startswith("test_data_set_"))
        for data_set in data_sets:
            code, output = self._run([os.path.join(self.tools_dir, "tessel-run"), artifact,
                                      "--test-data", os.path.join(model_dir, data_set),
                                      "--rtol", str(RTOL), "--atol", str(ATOL)])
            log.append(output)
            if code != 0:
                return lit.Test.Result(lit.Test.FAIL, "".join(log))
        return lit.Test.Result(lit.Test.PASS, "".join(log))

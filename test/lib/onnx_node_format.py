"""A lit test format for ONNX backend node tests.

Each test named in the directory's list file is one lit test, run by
onnx_node_test.run_node_test: the model is compiled with tessel-compile and
every test_data_set_* is compared by tessel-run at ONNX's backend-test
tolerances. The list file names the tests expected to pass (the conformance
runner, scripts/conformance.py, writes it), so a test that used to pass and
now fails breaks the suite.
"""

import os

import lit.formats
import lit.Test

from onnx_node_test import PASS, run_node_test


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

    def execute(self, test, litConfig):
        name = test.path_in_suite[-1]
        model_dir = os.path.join(self.data_dir, name)
        if not os.path.isdir(model_dir):
            return lit.Test.Result(lit.Test.UNRESOLVED, "no test data at " + model_dir)
        outcome = run_node_test(self.tools_dir, model_dir,
                                os.path.dirname(test.getExecPath()), self.timeout)
        code = lit.Test.PASS if outcome.status == PASS else lit.Test.FAIL
        return lit.Test.Result(code, "%s: %s\n%s" % (outcome.status, outcome.detail,
                                                     outcome.log))

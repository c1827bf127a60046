# GoogleTest unit tests: every executable named *Tests below the build's
# test/Unit directory, each of its tests reported on its own.

import lit.formats

config.name = "Tessel-Unit"
config.suffixes = []
config.test_source_root = config.unit_binary_dir
config.test_exec_root = config.unit_binary_dir
config.test_format = lit.formats.GoogleTest(".", "Tests")

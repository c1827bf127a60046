//===- FuzzOnnxImport.cpp - ONNX bytes through import and graph passes ----===//
//
// Any bytes given to tessel-compile must end in the tessel dialect or in an
// error: never a crash, a hang or a sanitizer report. The model goes as far
// as `--emit tessel` takes it (validation, import, graph optimization and
// kernel formation), where every later stage starts, with or without
// --dynamic-batch.
//
//===----------------------------------------------------------------------===//

#include "FuzzInput.h"
#include "compiler/Compiler.h"

#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = tessel::fuzz::writeInputFile(data, size, "model.onnx");
  tessel::CompileOptions options;
  // Half of the inputs, chosen by their length so that a replay sees the
  // same, also follow the batch (--dynamic-batch) through the graph.
  options.import.dynamicBatch = size % 2 == 1;
  llvm::consumeError(tessel::compileModel(path, options, tessel::EmitKind::Tessel, llvm::nulls()));
  return 0;
}

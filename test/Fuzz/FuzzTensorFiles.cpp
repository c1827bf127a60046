//===- FuzzTensorFiles.cpp - The .npy and TensorProto readers -------------===//
//
// tessel-run and calibration read tensors from .npy and .pb files. Bad
// bytes must end in the readers' std::runtime_error naming the file; any
// other exception, a crash or a sanitizer report is a finding. The first
// byte picks the reader, so one target and one corpus serve both.
//
//===----------------------------------------------------------------------===//

#include "FuzzInput.h"
#include "compiler/data/TensorFiles.h"

#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool npy = data[0] & 1;
  std::string path =
      tessel::fuzz::writeInputFile(data + 1, size - 1, npy ? "tensor.npy" : "tensor.pb");
  try {
    tessel::data::HostTensor tensor =
        npy ? tessel::data::readNpy(path) : tessel::data::readTensorProto(path);
    if (tensor.bytes.size() != tensor.elementCount() * tsl_dtype_size(tensor.dtype))
      __builtin_trap(); // a tensor whose bytes do not match its shape
  } catch (const std::runtime_error &) {
  }
  return 0;
}

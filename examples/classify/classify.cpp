//===- classify.cpp - Top-5 classes of an image, through the C++ API ------===//
//
//   classify-cpp model.tsl input.{ppm,pgm,npy}
//
// The C example's program written against tessel/runtime.hpp, whose handles
// release themselves and whose errors are exceptions.
//
//===----------------------------------------------------------------------===//

#include "input.h"

#include <tessel/runtime.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s model.tsl input.{ppm,pgm,npy}\n", argv[0]);
    return 2;
  }
  try {
    tsl::Module module = tsl::Module::load(argv[1]);
    tsl::TensorInfo inputInfo = module.input(0), outputInfo = module.output(0);
    if (inputInfo.dtype != TSL_F32 || outputInfo.dtype != TSL_F32) {
      std::fprintf(stderr, "classify: the model's first input and output must be f32\n");
      return 1;
    }
    char error[512];
    std::unique_ptr<float, decltype(&std::free)> data(
        classify_read_input(argv[2], inputInfo.shape.data(), inputInfo.shape.size(), error,
                            sizeof error),
        &std::free);
    if (!data) {
      std::fprintf(stderr, "classify: %s\n", error);
      return 1;
    }
    size_t count = 1;
    for (int64_t dim : inputInfo.shape)
      count *= static_cast<size_t>(dim);
    tsl::Session session(module);
    std::vector<tsl::Tensor> outputs =
        session.run({tsl::Tensor::wrap(inputInfo.shape, data.get(), count)});

    // The scores of the first image of the batch.
    size_t classes = outputs[0].elementCount();
    if (!outputInfo.shape.empty() && outputInfo.shape[0] > 0)
      classes /= static_cast<size_t>(outputInfo.shape[0]);
    size_t shown = std::min<size_t>(classes, 5);
    std::vector<size_t> top(shown);
    const float *scores = outputs[0].data<float>();
    classify_top_k(scores, classes, shown, top.data());
    std::printf("top-%zu of '%s' (%zu classes):\n", shown, outputInfo.name.c_str(), classes);
    for (size_t i = 0; i < shown; ++i)
      std::printf("  %zu. class %zu  score %.6g\n", i + 1, top[i], scores[top[i]]);
    return 0;
  } catch (const tsl::Error &error) {
    std::fprintf(stderr, "classify: %s\n", error.what());
    return 1;
  }
}

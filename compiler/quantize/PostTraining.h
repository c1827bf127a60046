//===- PostTraining.h - Calibrated post-training quantization ---*- C++ -*-===//
//
// tessel-compile --quantize int8: calibrate the float model on the user's
// inputs with Tessel's own compiled code, choose each quantized tensor's
// range, quantize, measure what quantization costs each layer and the
// model's outputs (SQNR against float on the same inputs), and keep in
// float the layers that fall below the accuracy budget.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_QUANTIZE_POSTTRAINING_H
#define TESSEL_COMPILER_QUANTIZE_POSTTRAINING_H

#include "compiler/quantize/Histogram.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

/// How weight levels are chosen along the reduction
/// (passes/WeightQuantization.h).
enum class WeightPairs {
  /// The nearest level of each weight.
  Any,
  /// Levels whose adjacent pairs fit 16-bit sums (exact VPMADDUBSW).
  FitI16,
  /// FitI16 where the target prefers it (Target::prefersFittedWeightPairs),
  /// for the products that do at least kFittedMinWorkShare of the model's
  /// multiply-adds; Any for the others, whose speed hardly matters.
  Auto,
};

/// --weight-pairs spellings, and back.
llvm::StringRef weightPairsName(WeightPairs pairs);
std::optional<WeightPairs> parseWeightPairs(llvm::StringRef name);

/// The smallest share of the model's multiply-adds for which Auto fits a
/// product's weight pairs (0.5%: ResNet-50's classifier keeps full-range
/// weights, every convolution is fitted).
inline constexpr double kFittedMinWorkShare = 0.005;

struct QuantizeOptions {
  /// Where the calibration inputs are (see CalibrationData.h).
  std::string calibrationDirectory;
  /// At most this many samples (0: all).
  size_t sampleLimit = 0;
  quantize::CalibrationMethod method = quantize::CalibrationMethod::Percentile;
  double percentile = 99.999;
  bool signedActivations = false;
  WeightPairs weightPairs = WeightPairs::Auto;
  /// Set by the compiler from its target, for Auto.
  bool targetPrefersFittedPairs = false;
  /// Correct each bias for the mean error its quantized weights add, from
  /// the mean of each input channel on the calibration data.
  bool biasCorrection = true;
  /// A layer whose quantization alone leaves its output below this SQNR
  /// stays in float.
  double minSqnrDb = 15.0;
  /// It stays in bf16 rather than f32, where tessel-bf16-products can
  /// compute it so (--precision bf16).
  bool bf16Fallback = false;
};

/// What post-training quantization did to one convolution or matrix product.
struct LayerQuantization {
  std::string name; // the ONNX node's
  std::string op;   // "conv", "matmul", "gemm"
  std::string precision; // "int8", "bf16" or "f32"
  std::optional<double> inputScale, outputScale;
  std::optional<int64_t> inputZeroPoint, outputZeroPoint;
  double weightScaleMin = 0.0, weightScaleMax = 0.0;
  /// SQNR (dB) of the layer's output in the quantized model against float:
  /// the error of every layer before it included.
  double sqnrDb = 0.0;
  /// The part of that error this layer adds (dB): its output's relative
  /// error power less its input's.
  double addedSqnrDb = 0.0;
  /// The SQNRs when quantized, before the budget kept the layer in float
  /// (f32 or bf16).
  double quantizedSqnrDb = 0.0, quantizedAddedSqnrDb = 0.0;
};

struct QuantizationReport {
  std::string method;
  size_t sampleCount = 0;
  double minSqnrDb = 0.0;
  std::vector<LayerQuantization> layers;
  /// Each model output's SQNR (dB) against float.
  std::vector<std::pair<std::string, double>> outputs;
  /// How many ops of the quantized model compute on quantized tensors, and
  /// what stays float between them: one line per island (its ops and
  /// their ONNX nodes).
  int64_t integerOps = 0;
  std::vector<std::string> floatIslands;

  std::string table() const;
  std::string json() const;
};

/// Lines saying how many ops compute in integers and listing each float
/// island, each line after `indent` (the report's and --check's).
std::string formatFloatIslands(int64_t integerOps, const std::vector<std::string> &islands,
                               llvm::StringRef indent);

/// Compiles a module of the tessel dialect (as the importer gives it) into
/// artifact bytes: the rest of the compile pipeline.
using ArtifactBuilder =
    std::function<llvm::Expected<std::vector<uint8_t>>(mlir::ModuleOp module)>;

/// Quantizes the float model in `module` (imported, batch norms folded):
/// on return it holds the QDQ form that the graph pipeline fuses into
/// integer ops. `progress` receives one line per stage and sample.
llvm::Expected<QuantizationReport>
quantizeModel(mlir::ModuleOp module, const QuantizeOptions &options,
              const ArtifactBuilder &build,
              const std::function<void(const llvm::Twine &)> &progress);

} // namespace tessel

#endif // TESSEL_COMPILER_QUANTIZE_POSTTRAINING_H

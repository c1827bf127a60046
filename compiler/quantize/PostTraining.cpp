//===- PostTraining.cpp - Calibrated post-training quantization -----------===//

#include "compiler/quantize/PostTraining.h"

#include "compiler/Locations.h"
#include "compiler/quantize/Observation.h"
#include "dialects/tessel/QuantizedTypes.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/Bf16Products.h"
#include "passes/Passes.h"
#include "passes/QuantizedGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <exception>

using namespace mlir;

namespace tessel {

namespace {

llvm::Error quantizeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

func::FuncOp mainOf(ModuleOp module) { return module.lookupSymbol<func::FuncOp>("main"); }

/// Returns `values` from `function` too, after its results, in whatever
/// layout the graph computes them: their histograms and errors do not
/// depend on it.
void appendWatchedResults(func::FuncOp function, ArrayRef<Value> values) {
  SmallVector<Value> results(function.front().getTerminator()->getOperands());
  unsigned first = results.size();
  results.append(values.begin(), values.end());
  setReturnedValues(function, results);
  for (unsigned i = first; i < results.size(); ++i)
    function.setResultAttr(i, kAnyLayoutAttr, UnitAttr::get(function.getContext()));
}

/// Watched results from `first` on that read a dequantized tensor return
/// the quantized one instead (its scale and zero point go in the
/// artifact's signature): no kernel dequantizes for them.
void watchQuantized(func::FuncOp function, unsigned first) {
  Operation *terminator = function.front().getTerminator();
  OpBuilder b(terminator);
  SmallVector<Value> results(terminator->getOperands());
  for (Value &result : llvm::drop_begin(results, first))
    if (auto dequantize = result.getDefiningOp<DequantizeOp>()) {
      // Graph edges hold the integers; the cast names their quantization.
      Value quantized = dequantize.getInput();
      result = BitCastOp::create(b, dequantize.getLoc(), storageType(quantized.getType()),
                                 quantized);
    }
  setReturnedValues(function, results);
}

/// The values an evaluation watches: the quantization points, and the input
/// and output of each layer kept in bf16, whose rounding errs too.
SmallVector<Value> watchedPoints(func::FuncOp function) {
  return productPoints(function,
                       [](Operation *op) { return isQuantizableProduct(op) || isMarkedBf16(op); });
}

/// Runs tessel-insert-quantization on `module`.
llvm::Error insertQuantization(ModuleOp module, const QuantizeOptions &quantizeOptions) {
  PassManager passes(module.getContext());
  TesselInsertQuantizationPassOptions options;
  options.signedActivations = quantizeOptions.signedActivations;
  switch (quantizeOptions.weightPairs) {
  case WeightPairs::Any:
    break;
  case WeightPairs::FitI16:
    options.fitWeightPairs = true;
    break;
  case WeightPairs::Auto:
    options.fitWeightPairs = quantizeOptions.targetPrefersFittedPairs;
    options.fitMinWorkShare = kFittedMinWorkShare;
    break;
  }
  passes.addNestedPass<func::FuncOp>(createTesselInsertQuantizationPass(options));
  if (failed(passes.run(module)))
    return quantizeError("inserting quantization failed");
  return llvm::Error::success();
}

std::string nodeName(Operation *op) {
  SmallVector<std::string> names;
  nodeNamesOf(op->getLoc(), names);
  return names.empty() ? "(unnamed)" : names.front();
}

std::string formatDb(double db) {
  return std::isinf(db) ? std::string("exact") : llvm::formatv("{0:f1}", db).str();
}

/// Relative error power of a watched tensor: noise / signal.
double relativeNoise(const quantize::ErrorPower &power) {
  return power.signal > 0.0 ? power.noise / power.signal : 0.0;
}

double toDb(double relative) {
  return relative > 0.0 ? -10.0 * std::log10(relative) : INFINITY;
}

/// How many times the accuracy budget is applied to a new measurement.
constexpr int kBudgetRounds = 3;

/// The axis of `layer`'s input whose channels its weight reduces over, for
/// a product with a bias that can absorb a correction; -1 otherwise.
int64_t correctableInputAxis(Operation *layer) {
  if (!biasOperand(layer))
    return -1;
  if (auto conv = dyn_cast<ConvOp>(layer))
    return conv.getChannelsLast() ? -1 : 1;
  if (isa<GemmOp>(layer))
    return 1;
  return cast<RankedTensorType>(layer->getOperand(0).getType()).getRank() - 1;
}

/// Where `axis` of a tensor of `logical` shape lies in the `computed` shape
/// the artifact returns it in: the same, or channels-last (axis 1 of an
/// image moved last); -1 when the shapes cannot tell.
int64_t computedAxis(ArrayRef<int64_t> logical, ArrayRef<int64_t> computed, int64_t axis) {
  if (logical.size() < 3 || axis != 1)
    return computed == logical ? axis : -1;
  SmallVector<int64_t> channelsLast(logical);
  channelsLast.erase(channelsLast.begin() + 1);
  channelsLast.push_back(logical[1]);
  // Channels as many as every spatial extent: either layout has this shape.
  if (channelsLast == logical)
    return -1;
  if (computed == logical)
    return axis;
  return computed == ArrayRef(channelsLast) ? static_cast<int64_t>(logical.size()) - 1 : -1;
}

/// One quantizable product: where its input and output are among the
/// watched tensors.
struct Layer {
  Operation *op;
  Value input, output;
};

/// Runs `fn`, turning the exceptions of the runtime and the data readers
/// into an llvm::Error.
template <typename Fn> llvm::Error guarded(const llvm::Twine &what, Fn fn) {
  try {
    fn();
  } catch (const std::exception &error) {
    return quantizeError(what + ": " + error.what());
  }
  return llvm::Error::success();
}

class PostTrainingQuantizer {
public:
  PostTrainingQuantizer(ModuleOp module, const QuantizeOptions &options,
                        const ArtifactBuilder &build,
                        const std::function<void(const llvm::Twine &)> &progress)
      : module(module), main(mainOf(module)), options(options), build(build),
        progress(progress) {}

  llvm::Expected<QuantizationReport> run();

private:
  /// The artifact of the model whose main also returns its quantization
  /// points, quantized (and read back as float) when `quantized`.
  llvm::Expected<std::vector<uint8_t>> watchedArtifact(bool quantized);
  /// The SQNRs (dB) of `layer`'s output and of the error it adds itself,
  /// from the latest evaluation.
  std::pair<double, double> layerSqnr(const Layer &layer) const;
  llvm::Error calibrate();
  /// The axis whose channel means calibration keeps for each point (-1:
  /// none), as the float artifact computes the points.
  std::vector<int64_t> channelMeanAxes() const;
  /// Compiles the quantized model with its points watched and measures
  /// each point's and output's error against float.
  llvm::Error evaluate(const char *stage);
  /// Keeps in float (bf16 where asked for and possible, else f32) the
  /// quantized layers whose own error breaks the budget; true if any.
  bool applyBudget();
  QuantizationReport report() const;

  quantize::SampleProgress sampleProgress(const char *stage) const {
    return [this, stage](size_t done, size_t total) {
      if (done == total || done % 8 == 0)
        progress(llvm::Twine(stage) + ": " + llvm::Twine(done) + "/" + llvm::Twine(total) +
                 " samples");
    };
  }

  ModuleOp module;
  func::FuncOp main;
  const QuantizeOptions &options;
  const ArtifactBuilder &build;
  const std::function<void(const llvm::Twine &)> &progress;

  size_t outputCount = 0;
  std::vector<quantize::CalibrationSample> samples;
  /// The float model with its points watched, and those points.
  std::vector<uint8_t> floatArtifact;
  SmallVector<Value> points;
  llvm::DenseMap<Value, size_t> pointIndex;
  std::vector<Layer> layers;
  /// Error of each point (indexed like `points`) and model output, from
  /// the latest evaluation.
  std::vector<quantize::ErrorPower> pointError, outputError;
  /// Each layer's SQNRs when it was last measured quantized.
  llvm::DenseMap<Operation *, std::pair<double, double>> quantizedSqnr;
};

llvm::Expected<std::vector<uint8_t>> PostTrainingQuantizer::watchedArtifact(bool quantized) {
  OwningOpRef<ModuleOp> copy = module.clone();
  func::FuncOp copyMain = mainOf(*copy);
  appendWatchedResults(copyMain, watchedPoints(copyMain));
  if (quantized) {
    if (llvm::Error error = insertQuantization(*copy, options))
      return std::move(error);
    watchQuantized(copyMain, outputCount);
  }
  return build(*copy);
}

std::pair<double, double> PostTrainingQuantizer::layerSqnr(const Layer &layer) const {
  double in = relativeNoise(pointError[pointIndex.lookup(layer.input)]);
  double out = relativeNoise(pointError[pointIndex.lookup(layer.output)]);
  return {toDb(out), toDb(out - in)};
}

llvm::Error PostTrainingQuantizer::calibrate() {
  outputCount = main.getNumResults();
  points = quantizationPoints(main);
  if (points.empty())
    return quantizeError("nothing to quantize: the model has no convolution or matrix "
                         "product with constant f32 weights");
  for (auto [index, point] : llvm::enumerate(points))
    pointIndex[point] = index;
  main.walk([&](Operation *op) {
    if (isQuantizableProduct(op))
      layers.push_back({op, op->getOperand(0), activatedResult(op)});
  });

  progress("calibration: compiling the float model with " + llvm::Twine(points.size()) +
           " watched tensors");
  llvm::Expected<std::vector<uint8_t>> bytes = watchedArtifact(/*quantized=*/false);
  if (!bytes)
    return bytes.takeError();
  floatArtifact = std::move(*bytes);

  quantize::Observations observed;
  if (llvm::Error error = guarded("calibration data", [&] {
        samples = quantize::readCalibrationData(
            options.calibrationDirectory, quantize::artifactInputs(floatArtifact),
            options.sampleLimit);
      }))
    return error;
  progress("calibration: " + llvm::Twine(samples.size()) + " samples from " +
           options.calibrationDirectory + ", " +
           quantize::calibrationMethodName(options.method));
  if (llvm::Error error = guarded("calibration", [&] {
        observed = quantize::collectObservations(floatArtifact, samples, outputCount,
                                                 channelMeanAxes(), sampleProgress("calibration"));
      }))
    return error;
  for (auto [point, histogram] : llvm::zip_equal(points, observed.histograms)) {
    auto [lo, hi] = quantize::chooseRange(histogram, options.method, options.percentile);
    setCalibratedRange(point, lo, hi);
  }
  // A max pool picks values of its input: quantized over its input's range
  // it is exact and needs no requantization (as in onnxruntime's QDQ form),
  // and it stays one NPU layer.
  for (Value point : points)
    if (auto pool = point.getDefiningOp<MaxPoolOp>())
      if (std::optional<std::pair<double, double>> range = calibratedRange(pool->getOperand(0)))
        setCalibratedRange(point, range->first, range->second);
  // Bias correction reads each layer's input means (InsertQuantization).
  for (const Layer &layer : layers) {
    const std::vector<double> &means = observed.channelMeans[pointIndex.lookup(layer.input)];
    if (!means.empty())
      layer.op->setAttr(kInputChannelMeansAttr,
                        DenseF64ArrayAttr::get(layer.op->getContext(), means));
  }
  return llvm::Error::success();
}

std::vector<int64_t> PostTrainingQuantizer::channelMeanAxes() const {
  std::vector<int64_t> axes(points.size(), -1);
  if (!options.biasCorrection)
    return axes;
  std::vector<std::vector<int64_t>> computed = quantize::artifactOutputShapes(floatArtifact);
  for (const Layer &layer : layers) {
    int64_t axis = correctableInputAxis(layer.op);
    auto type = dyn_cast<RankedTensorType>(layer.input.getType());
    if (axis < 0 || !type || !type.hasStaticShape())
      continue;
    size_t index = pointIndex.lookup(layer.input);
    axes[index] = computedAxis(type.getShape(), computed.at(outputCount + index), axis);
  }
  return axes;
}

llvm::Error PostTrainingQuantizer::evaluate(const char *stage) {
  SmallVector<Value> watched = watchedPoints(main);
  std::vector<size_t> referenceIndex;
  for (size_t i = 0; i < outputCount; ++i)
    referenceIndex.push_back(i);
  for (Value point : watched)
    referenceIndex.push_back(outputCount + pointIndex.lookup(point));

  progress(llvm::Twine(stage) + ": compiling the quantized model");
  llvm::Expected<std::vector<uint8_t>> bytes = watchedArtifact(/*quantized=*/true);
  if (!bytes)
    return bytes.takeError();
  std::vector<quantize::ErrorPower> powers;
  if (llvm::Error error = guarded(stage, [&] {
        powers = quantize::measureError(floatArtifact, *bytes, referenceIndex, samples,
                                        sampleProgress(stage));
      }))
    return error;
  outputError.assign(powers.begin(), powers.begin() + outputCount);
  // Points no longer watched (of layers kept in f32) are exact.
  pointError.assign(points.size(), quantize::ErrorPower{1.0, 0.0});
  for (auto [i, point] : llvm::enumerate(watched))
    pointError[pointIndex.lookup(point)] = powers[outputCount + i];
  return llvm::Error::success();
}

bool PostTrainingQuantizer::applyBudget() {
  bool changed = false;
  MLIRContext *context = module.getContext();
  for (const Layer &layer : layers) {
    // Kept layers stay as kept: what a bf16 layer's output still loses is
    // mostly the quantization of that output for the INT8 layers after it.
    if (layer.op->hasAttr(kPrecisionAttr))
      continue;
    std::pair<double, double> sqnr = layerSqnr(layer);
    quantizedSqnr[layer.op] = sqnr;
    if (sqnr.second < options.minSqnrDb) {
      bool bf16 = options.bf16Fallback && isBf16Product(layer.op);
      layer.op->setAttr(kPrecisionAttr, StringAttr::get(context, bf16 ? kBf16Precision : "f32"));
      changed = true;
    }
  }
  return changed;
}

QuantizationReport PostTrainingQuantizer::report() const {
  QuantizationReport report;
  report.method = quantize::calibrationMethodName(options.method);
  report.sampleCount = samples.size();
  report.minSqnrDb = options.minSqnrDb;
  for (const Layer &layer : layers) {
    LayerQuantization entry;
    entry.name = nodeName(layer.op);
    entry.op = layer.op->getName().stripDialect().str();
    auto kept = layer.op->getAttrOfType<StringAttr>(kPrecisionAttr);
    entry.precision = kept ? kept.str() : "int8";
    if (auto dequantize = layer.op->getOperand(0).getDefiningOp<DequantizeOp>()) {
      QuantParams params = quantParams(getQuantizedType(dequantize.getInput().getType()));
      entry.inputScale = params.scale;
      entry.inputZeroPoint = params.zeroPoint;
    }
    for (Operation *user : layer.output.getUsers())
      if (auto quantize = dyn_cast<QuantizeOp>(user)) {
        QuantParams params = quantParams(getQuantizedType(quantize.getType()));
        entry.outputScale = params.scale;
        entry.outputZeroPoint = params.zeroPoint;
      }
    if (auto weight = layer.op->getOperand(1).getDefiningOp<DequantizeOp>()) {
      quant::QuantizedType type = getQuantizedType(weight.getInput().getType());
      entry.weightScaleMin = INFINITY;
      for (int64_t c = 0; c < quantChannelCount(type); ++c) {
        entry.weightScaleMin = std::min(entry.weightScaleMin, quantParams(type, c).scale);
        entry.weightScaleMax = std::max(entry.weightScaleMax, quantParams(type, c).scale);
      }
    }
    std::tie(entry.sqnrDb, entry.addedSqnrDb) = layerSqnr(layer);
    std::tie(entry.quantizedSqnrDb, entry.quantizedAddedSqnrDb) = quantizedSqnr.lookup(layer.op);
    report.layers.push_back(std::move(entry));
  }
  for (auto [i, power] : llvm::enumerate(outputError)) {
    func::FuncOp function = main; // the accessors are not const
    auto name = function.getResultAttrOfType<StringAttr>(static_cast<unsigned>(i), "tessel.name");
    report.outputs.push_back({name ? name.str() : std::to_string(i), power.sqnrDb()});
  }
  return report;
}

llvm::Expected<QuantizationReport> PostTrainingQuantizer::run() {
  if (llvm::Error error = calibrate())
    return std::move(error);
  if (llvm::Error error = evaluate("measuring quantization error"))
    return std::move(error);
  // Keeping a layer in float changes the error of the layers after it, so
  // the budget is applied again to the new measurement, a few times at most.
  for (int round = 0; round < kBudgetRounds && applyBudget(); ++round) {
    size_t kept = llvm::count_if(
        layers, [](const Layer &layer) { return layer.op->hasAttr(kPrecisionAttr); });
    progress(llvm::Twine(kept) + " of " + llvm::Twine(layers.size()) +
             " layers stay in float (below " + formatDb(options.minSqnrDb) +
             " dB); measuring again");
    if (llvm::Error error = evaluate("measuring mixed-precision error"))
      return std::move(error);
  }
  // The model itself, as it will be compiled.
  if (llvm::Error error = insertQuantization(module, options))
    return std::move(error);
  return report();
}

} // namespace

llvm::StringRef weightPairsName(WeightPairs pairs) {
  switch (pairs) {
  case WeightPairs::Any:
    return "any";
  case WeightPairs::FitI16:
    return "fit-i16";
  case WeightPairs::Auto:
    return "auto";
  }
  llvm_unreachable("weight pairs");
}

std::optional<WeightPairs> parseWeightPairs(llvm::StringRef name) {
  for (WeightPairs pairs : {WeightPairs::Any, WeightPairs::FitI16, WeightPairs::Auto})
    if (name == weightPairsName(pairs))
      return pairs;
  return std::nullopt;
}

llvm::Expected<QuantizationReport>
quantizeModel(ModuleOp module, const QuantizeOptions &options, const ArtifactBuilder &build,
              const std::function<void(const llvm::Twine &)> &progress) {
  if (!mainOf(module))
    return quantizeError("the module has no main function");
  return PostTrainingQuantizer(module, options, build, progress).run();
}

std::string QuantizationReport::table() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "quantization: " << method << " calibration on " << sampleCount
     << " samples; layers whose own SQNR is below " << formatDb(minSqnrDb)
     << " dB stay in float\n";
  os << llvm::format("  %-36s %-7s %-9s %-16s %-16s %-10s %s\n", "layer", "op", "precision",
                     "input scale:zp", "output scale:zp", "SQNR (dB)", "its own (dB)");
  auto scale = [](std::optional<double> value, std::optional<int64_t> zero) {
    if (!value)
      return std::string("-");
    return llvm::formatv("{0}:{1}", llvm::format("%.3g", *value), *zero).str();
  };
  for (const LayerQuantization &layer : layers) {
    // A layer whose output is no noisier than its input adds nothing
    // measurable.
    std::string added = std::isinf(layer.addedSqnrDb) && !std::isinf(layer.sqnrDb)
                            ? std::string("none")
                            : formatDb(layer.addedSqnrDb);
    if (layer.precision != "int8")
      added += " (" + formatDb(layer.quantizedAddedSqnrDb) + " in int8)";
    os << llvm::format("  %-36s %-7s %-9s %-16s %-16s %-10s %s\n",
                       layer.name.substr(0, 36).c_str(), layer.op.c_str(),
                       layer.precision.c_str(),
                       scale(layer.inputScale, layer.inputZeroPoint).c_str(),
                       scale(layer.outputScale, layer.outputZeroPoint).c_str(),
                       formatDb(layer.sqnrDb).c_str(), added.c_str());
  }
  for (const auto &[name, db] : outputs)
    os << "  model output '" << name << "': SQNR " << formatDb(db)
       << (std::isinf(db) ? "\n" : " dB\n");
  os << formatFloatIslands(integerOps, floatIslands, "  ");
  return text;
}

std::string formatFloatIslands(int64_t integerOps, const std::vector<std::string> &islands,
                               llvm::StringRef indent) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << indent << integerOps << " ops compute in integers; ";
  if (islands.empty())
    os << "nothing stays float between them\n";
  else
    os << islands.size() << " float island" << (islands.size() == 1 ? "" : "s")
       << " (ops left in float between dequantize and quantize):\n";
  for (auto [index, island] : llvm::enumerate(islands))
    os << indent << "  " << index + 1 << ": " << island << "\n";
  return text;
}

std::string QuantizationReport::json() const {
  auto db = [](double value) -> llvm::json::Value {
    if (std::isinf(value))
      return nullptr; // exact
    return value;
  };
  llvm::json::Array layerArray;
  for (const LayerQuantization &layer : layers) {
    llvm::json::Object entry{{"name", layer.name},
                             {"op", layer.op},
                             {"precision", layer.precision},
                             {"sqnr_db", db(layer.sqnrDb)},
                             {"added_sqnr_db", db(layer.addedSqnrDb)},
                             {"int8_sqnr_db", db(layer.quantizedSqnrDb)},
                             {"int8_added_sqnr_db", db(layer.quantizedAddedSqnrDb)}};
    if (layer.inputScale)
      entry["input"] = llvm::json::Object{{"scale", *layer.inputScale},
                                          {"zero_point", *layer.inputZeroPoint}};
    if (layer.outputScale)
      entry["output"] = llvm::json::Object{{"scale", *layer.outputScale},
                                           {"zero_point", *layer.outputZeroPoint}};
    if (layer.weightScaleMax > 0.0)
      entry["weight_scale"] = llvm::json::Object{{"min", layer.weightScaleMin},
                                                 {"max", layer.weightScaleMax}};
    layerArray.push_back(std::move(entry));
  }
  llvm::json::Array outputArray;
  for (const auto &[name, value] : outputs)
    outputArray.push_back(llvm::json::Object{{"name", name}, {"sqnr_db", db(value)}});
  llvm::json::Object root{{"method", method},
                          {"samples", static_cast<int64_t>(sampleCount)},
                          {"min_sqnr_db", minSqnrDb},
                          {"layers", std::move(layerArray)},
                          {"outputs", std::move(outputArray)},
                          {"integer_ops", integerOps},
                          {"float_islands", llvm::json::Array(floatIslands)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return text;
}

} // namespace tessel

//===- Compiler.cpp - Compile an ONNX model into a Tessel artifact --------===//

#include "compiler/Compiler.h"
#include "compiler/HostPlan.h"
#include "compiler/KernelDeduplication.h"
#include "compiler/KernelStatistics.h"
#include "compiler/Locations.h"
#include "compiler/Placement.h"
#include "compiler/Registration.h"
#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/onnx/OnnxExporter.h"
#include "compiler/quantize/PostTraining.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "passes/QuantizedGraph.h"
#include "runtime/schema/Artifact.h"
#include "runtime/schema/Checksum.h"
#include "targets/Registry.h"
#include "targets/cuda/CudaTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace tessel {

llvm::StringRef compilerVersion() { return "tessel 0.1.0 (LLVM " LLVM_VERSION_STRING ")"; }

std::vector<std::string> availableTargets() { return registeredTargetNames(); }

namespace {

llvm::Error compileError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string formatDiagnostic(Diagnostic &diagnostic) {
  SmallVector<std::string> names;
  nodeNamesOf(diagnostic.getLocation(), names);
  std::string where;
  for (const std::string &name : names)
    where += (where.empty() ? "'" : ", '") + name + "'";
  std::string text = where.empty() ? "" : (names.size() == 1 ? "node " : "nodes ") + where + ": ";
  text += diagnostic.str();
  for (Diagnostic &note : diagnostic.getNotes())
    text += "\n    note: " + note.str();
  return text;
}

/// Collects error diagnostics so that a failed pass becomes one llvm::Error.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diagnostic) {
          if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
            messages.push_back(formatDiagnostic(diagnostic));
          return success();
        }) {}

  llvm::Error error(const llvm::Twine &what) {
    std::string message = what.str();
    for (const std::string &text : messages)
      message += "\n  " + text;
    messages.clear();
    return compileError(message);
  }

private:
  ScopedDiagnosticHandler handler;
  std::vector<std::string> messages;
};

/// The quantization a graph input or output's integers carry: the
/// quantized type the storage casts at the edge give them.
std::optional<SignatureQuantization> edgeQuantization(Value value, bool result) {
  quant::QuantizedType type;
  if (result) {
    if (auto cast = value.getDefiningOp<BitCastOp>())
      type = getQuantizedType(cast.getInput().getType());
  } else {
    for (Operation *user : value.getUsers()) {
      auto cast = dyn_cast<BitCastOp>(user);
      quant::QuantizedType read = cast ? getQuantizedType(cast.getType()) : nullptr;
      if (!read || (type && read != type))
        return std::nullopt;
      type = read;
    }
  }
  if (!type || storageType(type) != getElementTypeOrSelf(value.getType()))
    return std::nullopt;
  SignatureQuantization quantization;
  for (int64_t channel = 0; channel < quantChannelCount(type); ++channel) {
    quantization.scales.push_back(quantParams(type, channel).scale);
    quantization.zeroPoints.push_back(quantParams(type, channel).zeroPoint);
  }
  if (std::optional<int32_t> axis = quantizedAxis(type))
    quantization.axis = *axis;
  return quantization;
}

llvm::Expected<std::vector<TensorSignature>>
signatureOf(func::FuncOp main, bool results) {
  std::vector<TensorSignature> tensors;
  TypeRange types = results ? main.getResultTypes() : main.getArgumentTypes();
  for (auto [i, type] : llvm::enumerate(types)) {
    auto tensor = cast<RankedTensorType>(type);
    auto name = results ? main.getResultAttrOfType<StringAttr>(i, kValueNameAttr)
                        : main.getArgAttrOfType<StringAttr>(i, kValueNameAttr);
    std::optional<uint8_t> dtype = artifactDType(storageType(tensor.getElementType()));
    std::string label = name ? name.str() : std::to_string(i);
    if (!dtype)
      return compileError("model " + Twine(results ? "output" : "input") + " '" +
                          label + "' has an element type the artifact cannot hold");
    Value edge = results ? main.front().getTerminator()->getOperand(i) : main.getArgument(i);
    bool batched = results ? bool(main.getResultAttr(i, kBatchedAttr))
                           : bool(main.getArgAttr(i, kBatchedAttr));
    auto varying = results ? main.getResultAttrOfType<IntegerAttr>(i, kVaryingAttr)
                           : main.getArgAttrOfType<IntegerAttr>(i, kVaryingAttr);
    bool holdsLength = !results && main.getArgAttr(i, kLengthAttr);
    tensors.push_back({label, *dtype,
                       std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end()),
                       edgeQuantization(edge, results), batched,
                       varying ? static_cast<int32_t>(varying.getInt()) : -1, holdsLength});
  }
  return tensors;
}

/// The graph inputs or outputs that @main's arguments or results stand for
/// (kGraphInputsAttr, kGraphOutputsAttr), empty when each is one tensor.
std::vector<GraphValueSignature> graphValuesOf(func::FuncOp main, bool results) {
  std::vector<GraphValueSignature> outputs;
  auto entries = main->getAttrOfType<ArrayAttr>(results ? kGraphOutputsAttr : kGraphInputsAttr);
  if (!entries)
    return outputs;
  for (auto entry : entries.getAsRange<DictionaryAttr>()) {
    auto kind =
        llvm::StringSwitch<schema::GraphValueKind>(entry.getAs<StringAttr>("kind").getValue())
            .Case("sequence", schema::GraphValueKind_Sequence)
            .Case("optional", schema::GraphValueKind_Optional)
            .Case("optional_sequence", schema::GraphValueKind_OptionalSequence)
            .Default(schema::GraphValueKind_Tensor);
    outputs.push_back({entry.getAs<StringAttr>("name").str(), static_cast<uint8_t>(kind),
                       entry.getAs<BoolAttr>("present").getValue(),
                       static_cast<uint32_t>(entry.getAs<IntegerAttr>("first").getInt()),
                       static_cast<uint32_t>(entry.getAs<IntegerAttr>("count").getInt())});
  }
  return outputs;
}

std::string modelHash(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return "";
  llvm::StringRef bytes = (*file)->getBuffer();
  return llvm::formatv("{0:x16}", schema::checksum64(bytes.data(), bytes.size()))
      .str();
}

/// The options that shape the compiled code, in a canonical spelling: the
/// provenance must not depend on file paths or argument order, so that the
/// same model compiled twice gives the same bytes.
std::string describeOptions(const CompileOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "--target " << options.target << " -O" << options.optLevel
     << " --target-cpu " << (options.cpu.empty() ? "native" : options.cpu);
  if (options.import.dynamicBatch)
    os << " --dynamic-batch";
  for (const auto &[name, dims] : options.import.inputShapes) {
    os << " --shape " << name << "=";
    llvm::interleave(dims, os, "x");
  }
  for (const auto &[name, dims] : options.import.maxShapes) {
    os << " --max-shape " << name << "=";
    llvm::interleave(dims, os, "x");
  }
  for (const auto &[name, shapes] : options.import.sequenceShapes) {
    os << " --sequence " << name << "=";
    llvm::interleave(
        shapes, os,
        [&](const std::vector<int64_t> &dims) {
          if (dims.empty())
            os << "scalar";
          llvm::interleave(dims, os, "x");
        },
        ",");
  }
  for (const std::string &name : options.import.absentInputs)
    os << " --absent " << name;
  if (const std::optional<QuantizeOptions> &quantize = options.quantize) {
    os << " --quantize int8 --calibration-method "
       << quantize::calibrationMethodName(quantize->method);
    if (quantize->method == quantize::CalibrationMethod::Percentile)
      os << " --calibration-percentile " << quantize->percentile;
    os << " --activations " << (quantize->signedActivations ? "s8" : "u8") << " --weight-pairs "
       << weightPairsName(quantize->weightPairs) << " --min-sqnr " << quantize->minSqnrDb;
    if (!quantize->biasCorrection)
      os << " --no-bias-correction";
  }
  return text;
}

/// What every target is configured with (options.precision is known to
/// parse).
TargetOptions targetOptions(const CompileOptions &options) {
  TargetOptions targetOptions;
  targetOptions.optLevel = options.optLevel;
  targetOptions.cpu = options.cpu;
  targetOptions.npuConfigFile = options.npuConfigFile;
  if (!options.cudaArchitectures.empty())
    targetOptions.cudaArchitectures = options.cudaArchitectures;
  targetOptions.cudaCubins = options.cudaCubins;
  targetOptions.cudaPrecision = *parseProductPrecision(options.precision);
  return targetOptions;
}

/// The targets `--target` names (a comma-separated list), in order, with
/// the CPU added last when missing: it runs what the others cannot.
llvm::Expected<std::vector<std::unique_ptr<Target>>> createTargets(const CompileOptions &options) {
  SmallVector<llvm::StringRef> names;
  llvm::StringRef(options.target).split(names, ',', -1, /*KeepEmpty=*/false);
  if (!llvm::is_contained(names, fallbackTargetName()))
    names.push_back(fallbackTargetName());
  if (!parseProductPrecision(options.precision))
    return compileError("unknown precision '" + options.precision +
                        "' (known: fp32, fp16, bf16)");
  std::vector<std::unique_ptr<Target>> targets;
  for (llvm::StringRef name : names) {
    llvm::Expected<std::unique_ptr<Target>> target = createTarget(name.trim(), targetOptions(options));
    if (!target)
      return target.takeError();
    targets.push_back(std::move(*target));
  }
  if (targets.back()->name() != fallbackTargetName())
    return compileError("the target " + fallbackTargetName() +
                        " runs what the others cannot: name it last");
  return targets;
}

} // namespace

namespace {

/// Compiles an imported module the rest of the way, to `emit`, for
/// `targets`: each kernel on the first that can run it (the last, the CPU,
/// runs anything), one executable per target that got kernels.
class ModuleCompiler {
public:
  ModuleCompiler(llvm::ArrayRef<Target *> targets, const CompileOptions &options,
                 llvm::StringRef modelPath, DiagnosticCollector &diagnostics)
      : targets(targets.begin(), targets.end()), options(options), modelPath(modelPath),
        diagnostics(diagnostics) {}

  /// `quantization`, when given, is what post-training quantization did to
  /// `module`; the artifact records it. The placement is reported to
  /// CompileOptions::placement unless `quietly`.
  llvm::Error compile(ModuleOp module, EmitKind emit, llvm::raw_ostream &out,
                      const std::function<void(const llvm::Twine &)> &progress,
                      const QuantizationReport *quantization = nullptr, bool quietly = false);

  /// The artifact of `module`, with nothing shown (calibration's).
  llvm::Expected<std::vector<uint8_t>> artifactOf(ModuleOp module) {
    std::string bytes;
    llvm::raw_string_ostream stream(bytes);
    if (llvm::Error error = compile(module, EmitKind::Artifact, stream,
                                    [](const llvm::Twine &) {}, nullptr, /*quietly=*/true))
      return std::move(error);
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
  }

  /// Whether the first target wants INT8 weight pairs that fit 16-bit sums.
  bool prefersFittedWeightPairs(ModuleOp module) {
    return targets.front()->prefersFittedWeightPairs(module, targetOptions(options));
  }

  /// Whether the graph makes products bf16 (tessel-bf16-products) for
  /// --precision bf16: unless a target rounds its products itself.
  bool graphComputesBf16() const {
    return options.precision == "bf16" &&
           llvm::none_of(targets, [](Target *target) { return target->roundsProductsItself(); });
  }

private:
  llvm::Error optimizeGraph(ModuleOp module);
  FailureOr<std::vector<Executable>> compileKernels(ModuleOp module, Target &target,
                                       const llvm::StringSet<> &placed,
                                       TargetOptions &targetOptions,
                                       llvm::StringMap<KernelStatistics> &statistics,
                                       const std::function<void(const llvm::Twine &)> &progress);

  SmallVector<Target *> targets;
  const CompileOptions &options;
  llvm::StringRef modelPath;
  DiagnosticCollector &diagnostics;
};

llvm::Error ModuleCompiler::optimizeGraph(ModuleOp module) {
  PassManager graph(module.getContext());
  GraphPipelineOptions graphOptions;
  graphOptions.optLevel = options.optLevel;
  graphOptions.channelsLast = llvm::any_of(targets, [](Target *target) {
    return target->prefersChannelsLast();
  });
  // Attention kernels are the CPU's to run: whether to form them is its call.
  graphOptions.fuseAttention = targets.back()->fusesAttention();
  // Quantization chooses bf16 per layer; otherwise --precision bf16 is for
  // every product.
  graphOptions.bf16Products = !options.quantize && graphComputesBf16();
  graphOptions.separateDequantize = llvm::any_of(targets, [](Target *target) {
    return target->wantsDequantizeApart();
  });
  buildGraphPipeline(graph, graphOptions);
  if (failed(graph.run(module)))
    return diagnostics.error("graph optimization failed:");
  return llvm::Error::success();
}

/// Compiles the kernels of `module` placed on `target` (`placed`, by name)
/// into its executable; their statistics join `statistics`.
FailureOr<std::vector<Executable>> ModuleCompiler::compileKernels(
    ModuleOp module, Target &target, const llvm::StringSet<> &placed,
    TargetOptions &targetOptions, llvm::StringMap<KernelStatistics> &statistics,
    const std::function<void(const llvm::Twine &)> &progress) {
  // The kernels go to the target in a module of their own: its functions
  // lowered to linalg, or else what the targets with their own form put
  // in the module (each compiles its own ops).
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  OpBuilder builder(kernels->getBodyRegion());
  for (Operation &op : module.getBody()->getOperations()) {
    auto function = dyn_cast<func::FuncOp>(op);
    if (!target.lowersThroughLinalg() && !function)
      builder.clone(op);
    if (target.lowersThroughLinalg() && function && !function.isDeclaration() &&
        placed.contains(function.getSymName()))
      builder.clone(op);
  }
  std::vector<KernelAlias> aliases;
  if (target.lowersThroughLinalg()) {
    for (auto &[name, counted] : collectKernelStatistics(*kernels))
      statistics[name] = counted;
    aliases = deduplicateKernels(*kernels);
  }
  progress("generating " + target.name() + " code for " + Twine(placed.size()) + " kernels" +
           (aliases.empty() ? "" : " (" + Twine(placed.size() - aliases.size()) + " distinct)"));
  FailureOr<std::vector<Executable>> executables = target.compileAll(*kernels, targetOptions);
  if (succeeded(executables))
    for (Executable &executable : *executables)
      addAliasEntries(executable, aliases);
  return executables;
}

llvm::Error ModuleCompiler::compile(ModuleOp module, EmitKind emit, llvm::raw_ostream &out,
                                    const std::function<void(const llvm::Twine &)> &progress,
                                    const QuantizationReport *quantization, bool quietly) {
  MLIRContext &context = *module.getContext();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  llvm::Expected<std::vector<TensorSignature>> inputs = signatureOf(main, false);
  if (!inputs)
    return inputs.takeError();
  llvm::Expected<std::vector<TensorSignature>> outputs = signatureOf(main, true);
  if (!outputs)
    return outputs.takeError();
  std::vector<GraphValueSignature> graphInputs = graphValuesOf(main, false);
  std::vector<GraphValueSignature> graphOutputs = graphValuesOf(main, true);

  progress("optimizing the graph");
  if (llvm::Error error = optimizeGraph(module))
    return error;
  // Results read in any layout have the shape the graph computes them in.
  for (auto [i, type] : llvm::enumerate(main.getResultTypes()))
    if (main.getResultAttr(i, kAnyLayoutAttr)) {
      ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
      (*outputs)[i].shape.assign(shape.begin(), shape.end());
    }
  auto printModule = [&] {
    OpPrintingFlags flags;
    if (options.elideLargeConstants)
      flags.elideLargeElementsAttrs(16);
    module.print(out, flags);
    return llvm::Error::success();
  };
  if (emit == EmitKind::Tessel)
    return printModule();

  // Each kernel to its device; targets with their own kernel form lower
  // theirs now, the rest go through linalg.
  std::vector<KernelPlacement> placement = placeKernels(module, targets);
  if (options.placement && targets.size() > 1 && !quietly)
    options.placement(formatPlacement(placement, targets));
  llvm::StringMap<KernelStatistics> statistics = collectKernelStatistics(module);
  std::vector<llvm::StringSet<>> placed(targets.size());
  for (const KernelPlacement &kernel : placement)
    placed[kernel.target].insert(kernel.kernel);
  TargetOptions targetOptions = tessel::targetOptions(options);
  for (auto [index, target] : llvm::enumerate(targets)) {
    if (target->lowersThroughLinalg())
      continue;
    SmallVector<func::FuncOp> kernels;
    for (llvm::StringRef name : placed[index].keys())
      kernels.push_back(module.lookupSymbol<func::FuncOp>(name));
    llvm::sort(kernels, [](func::FuncOp a, func::FuncOp b) {
      return a->isBeforeInBlock(b);
    });
    if (failed(target->lowerPlacedKernels(module, kernels, targetOptions)) ||
        failed(mlir::verify(module)))
      return diagnostics.error("code generation for " + target->name() + " failed:");
  }
  if (emit == EmitKind::Npu) {
    for (Operation &op : module.getBody()->getOperations())
      if (!isa<func::FuncOp>(op))
        op.print(out), out << "\n";
    return llvm::Error::success();
  }

  // A scan's length only lets a target skip steps that change nothing, so
  // where some target must run them all (it compiles the same kernels),
  // every target does.
  if (llvm::any_of(targets, [](Target *target) { return !target->loopsToRunTimeCounts(); }))
    module.walk([](ScanOp scan) { scan.getLengthMutable().clear(); });
  PassManager lowering(&context);
  buildLinalgPipeline(lowering);
  if (failed(lowering.run(module)))
    return diagnostics.error("lowering to linalg failed:");
  for (Target *target : targets)
    if (target->lowersThroughLinalg() && failed(target->chooseDataLayouts(module, targetOptions)))
      return diagnostics.error("code generation for " + target->name() + " failed:");
  if (emit == EmitKind::Linalg)
    return printModule();

  FailureOr<HostPlan> plan = planHost(main);
  if (failed(plan))
    return diagnostics.error("planning the host schedule failed:");
  if (plan->arenaSize > schema::kMaxArenaBytes)
    return compileError("the model's intermediate tensors need an arena of " +
                        llvm::Twine(plan->arenaSize) +
                        " bytes; the runtime loads artifacts whose arena is at most 1 TiB");

  std::string text;
  llvm::raw_string_ostream textStream(text);
  if (emit == EmitKind::LLVMIR)
    targetOptions.llvmIR = &textStream;
  if (emit == EmitKind::Assembly)
    targetOptions.assembly = &textStream;
  if (emit == EmitKind::Ptx)
    targetOptions.ptx = &textStream;
  std::vector<Executable> executables;
  for (auto [index, target] : llvm::enumerate(targets)) {
    const llvm::StringSet<> &kernels =
        target->replacesFallback() ? placed.back() : placed[index];
    if (kernels.empty())
      continue;
    FailureOr<std::vector<Executable>> compiled =
        compileKernels(module, *target, kernels, targetOptions, statistics, progress);
    if (failed(compiled))
      return diagnostics.error("code generation for " + target->name() + " failed:");
    for (Executable &executable : *compiled)
      executables.push_back(std::move(executable));
  }
  if (emit != EmitKind::Artifact) {
    out << text;
    return llvm::Error::success();
  }

  progress("writing the artifact");
  ArtifactContents contents;
  contents.inputs = std::move(*inputs);
  contents.outputs = std::move(*outputs);
  contents.graphInputs = std::move(graphInputs);
  contents.graphOutputs = std::move(graphOutputs);
  contents.plan = &*plan;
  contents.executables = std::move(executables);
  contents.provenance = {compilerVersion().str(), modelHash(modelPath),
                         describeOptions(options),
                         llvm::sys::path::stem(modelPath).str()};
  contents.kernelStatistics = &statistics;
  contents.quantization = quantization;
  llvm::Expected<std::vector<uint8_t>> bytes = serializeArtifact(contents);
  if (!bytes)
    return bytes.takeError();
  if (options.signingKey)
    options.signingKey->sign(*bytes);
  out.write(reinterpret_cast<const char *>(bytes->data()), bytes->size());
  return llvm::Error::success();
}

/// Canonicalization and batch-norm folding: the graph that quantization
/// and the ONNX export see.
llvm::Error prepareGraph(ModuleOp module, DiagnosticCollector &diagnostics) {
  PassManager preparation(module.getContext());
  buildGraphPreparationPipeline(preparation);
  if (failed(preparation.run(module)))
    return diagnostics.error("graph optimization failed:");
  return llvm::Error::success();
}

/// What stays float in quantized `module` once the graph pipeline has
/// fused it (a copy is fused): how many ops compute in integers, and one
/// line per float island naming its ops and their ONNX nodes.
llvm::Error describeFloatIslands(ModuleOp module, DiagnosticCollector &diagnostics,
                                 int64_t &integerOps, std::vector<std::string> &islands) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager fusion(module.getContext());
  buildGraphPreparationPipeline(fusion);
  fusion.addNestedPass<func::FuncOp>(createTesselFuseQuantizedOpsPass());
  if (failed(fusion.run(*copy)))
    return diagnostics.error("fusing the quantized ops failed:");
  auto main = copy->lookupSymbol<func::FuncOp>("main");
  integerOps = integerOpCount(main);
  for (const FloatIsland &island : floatIslands(main)) {
    std::string line;
    llvm::raw_string_ostream os(line);
    llvm::interleaveComma(island.ops, os, [&](Operation *op) {
      os << op->getName().stripDialect();
      SmallVector<std::string> names;
      nodeNamesOf(op->getLoc(), names);
      if (!names.empty())
        os << " '" << llvm::join(names, "', '") << "'";
    });
    islands.push_back(std::move(line));
  }
  return llvm::Error::success();
}

/// Post-training quantization of the imported, prepared float model in
/// `module`; what it did goes to `done`.
llvm::Error quantizeAfterTraining(ModuleOp module, const CompileOptions &options,
                                  ModuleCompiler &compiler, DiagnosticCollector &diagnostics,
                                  const std::function<void(const llvm::Twine &)> &progress,
                                  std::optional<QuantizationReport> &done) {
  QuantizeOptions quantizeOptions = *options.quantize;
  quantizeOptions.targetPrefersFittedPairs = compiler.prefersFittedWeightPairs(module);
  quantizeOptions.bf16Fallback = compiler.graphComputesBf16();
  llvm::Expected<QuantizationReport> report = quantizeModel(
      module, quantizeOptions, [&](ModuleOp copy) { return compiler.artifactOf(copy); }, progress);
  if (!report)
    return report.takeError();
  if (llvm::Error error =
          describeFloatIslands(module, diagnostics, report->integerOps, report->floatIslands))
    return error;
  if (options.quantizationReport)
    options.quantizationReport(*report);
  done = std::move(*report);
  return llvm::Error::success();
}

} // namespace

static constexpr std::pair<const char *, EmitKind> kEmitKinds[] = {
    {"tessel", EmitKind::Tessel},     {"linalg", EmitKind::Linalg},
    {"llvm", EmitKind::LLVMIR},       {"asm", EmitKind::Assembly},
    {"artifact", EmitKind::Artifact}, {"qdq-onnx", EmitKind::QdqOnnx},
    {"npu", EmitKind::Npu},           {"ptx", EmitKind::Ptx}};

std::vector<std::string> emitKindNames() {
  std::vector<std::string> names;
  for (const auto &[name, kind] : kEmitKinds)
    names.push_back(name);
  return names;
}

std::optional<EmitKind> parseEmitKind(llvm::StringRef name) {
  for (const auto &[spelling, kind] : kEmitKinds)
    if (name == spelling)
      return kind;
  return std::nullopt;
}

llvm::Expected<SupportReport> checkModel(llvm::StringRef modelPath,
                                         const CompileOptions &options) {
  DialectRegistry registry;
  registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  DiagnosticCollector diagnostics(context);
  OwningOpRef<ModuleOp> module;
  llvm::Expected<SupportReport> report =
      checkOnnxModel(context, modelPath, options.import, &module);
  if (report && module)
    if (llvm::Error error = describeFloatIslands(*module, diagnostics, report->integerOps,
                                                 report->floatIslands))
      return std::move(error);
  return report;
}

llvm::Error compileModel(llvm::StringRef modelPath, const CompileOptions &options,
                         EmitKind emit, llvm::raw_ostream &out) {
  llvm::Expected<std::vector<std::unique_ptr<Target>>> targets = createTargets(options);
  if (!targets)
    return targets.takeError();
  SmallVector<Target *> targetList;
  for (std::unique_ptr<Target> &target : *targets)
    targetList.push_back(target.get());
  bool cuda =
      llvm::any_of(targetList, [](Target *target) { return target->device() == DeviceKind::Cuda; });
  if (emit == EmitKind::Ptx && !cuda)
    return compileError("--emit ptx needs a CUDA target (--target cuda)");
  if (options.cudaCubins && !cuda)
    return compileError("--cuda-cubins needs a CUDA target (--target cuda)");
  auto progress = [&](const llvm::Twine &stage) {
    if (options.progress)
      options.progress(stage.str());
  };

  DialectRegistry registry;
  registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  DiagnosticCollector diagnostics(context);

  progress("importing " + modelPath);
  llvm::Expected<OwningOpRef<ModuleOp>> imported =
      importOnnxModel(context, modelPath, options.import);
  if (!imported)
    return imported.takeError();
  ModuleOp module = imported->get();
  // Calibration samples shorter than the bound would be observed with
  // their padding, which the ranges must not include.
  if (options.quantize && !options.import.maxShapes.empty())
    return compileError("--quantize int8 with --max-shape is not supported yet: calibration "
                        "would observe the padding of samples shorter than the bound");
  ModuleCompiler compiler(targetList, options, modelPath, diagnostics);
  if (options.quantize || emit == EmitKind::QdqOnnx)
    if (llvm::Error error = prepareGraph(module, diagnostics))
      return error;
  std::optional<QuantizationReport> quantization;
  if (options.quantize)
    if (llvm::Error error =
            quantizeAfterTraining(module, options, compiler, diagnostics, progress, quantization))
      return error;
  if (emit == EmitKind::QdqOnnx) {
    progress("writing the ONNX model");
    return exportOnnxModel(module, {compilerVersion().str(), describeOptions(options)}, out);
  }
  return compiler.compile(module, emit, out, progress,
                          quantization ? &*quantization : nullptr);
}

} // namespace tessel

//===- NpuTarget.cpp - The NPU target -------------------------------------===//
//
// Placement asks the target about each kernel: it recognizes the layer and
// lowers it (so that a layer no tile fits is refused then, with the reason,
// not later). The kernels placed on it become `npu.program` ops in the
// module: the host then calls each kernel with its activations and the
// constants the program reads (weights in the im2col order, channel
// records), and compile() encodes the programs into one command stream.
//
//===----------------------------------------------------------------------===//

#include "targets/npu/NpuTarget.h"

#include "dialects/npu/NpuDialect.h"
#include "dialects/tessel/TesselDialect.h"
#include "targets/npu/ConfigFile.h"
#include "targets/npu/Layers.h"
#include "targets/npu/Lowering.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace tessel {

namespace {

using npu::encoding::Config;

/// The host's calls of `kernel` in `module`.
SmallVector<func::CallOp> callsOf(ModuleOp module, func::FuncOp kernel) {
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp call) {
    if (call.getCallee() == kernel.getSymName())
      calls.push_back(call);
  });
  return calls;
}

uint64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Type element = cast<RankedTensorType>(storageType(tensor)).getElementType();
  return uint64_t(tensor.getNumElements()) * ((element.getIntOrFloatBitWidth() + 7) / 8);
}

class NpuTarget final : public Target {
public:
  explicit NpuTarget(Config config) : config(config) {}

  llvm::StringRef name() const override { return "npu"; }
  DeviceKind device() const override { return DeviceKind::Npu; }
  bool prefersChannelsLast() const override { return true; }
  bool wantsDequantizeApart() const override { return true; }
  bool lowersThroughLinalg() const override { return false; }

  std::optional<std::string> unsupportedReason(ModuleOp module, func::FuncOp kernel) override {
    std::variant<npu::LayerProgram, std::string> lowered = lower(module, kernel);
    if (auto *reason = std::get_if<std::string>(&lowered))
      return *reason;
    programs[kernel.getSymName()] = std::move(std::get<npu::LayerProgram>(lowered));
    return std::nullopt;
  }

  LogicalResult lowerPlacedKernels(ModuleOp module, llvm::ArrayRef<func::FuncOp> kernels,
                                   const TargetOptions &) override {
    for (func::FuncOp kernel : kernels)
      if (failed(replaceKernel(module, kernel)))
        return failure();
    return success();
  }

  FailureOr<Executable> compile(ModuleOp kernels, const TargetOptions &) override;

private:
  std::variant<npu::LayerProgram, std::string> lower(ModuleOp module, func::FuncOp kernel);
  LogicalResult replaceKernel(ModuleOp module, func::FuncOp kernel);

  Config config;
  /// Each kernel's program, lowered when placement asked about it.
  llvm::StringMap<npu::LayerProgram> programs;
};

std::variant<npu::LayerProgram, std::string> NpuTarget::lower(ModuleOp module,
                                                              func::FuncOp kernel) {
  SmallVector<func::CallOp> calls = callsOf(module, kernel);
  if (calls.size() != 1)
    return std::string("the host calls it more than once");
  func::CallOp call = calls.front();
  npu::ConstantOf constantOf = [&](Value argument) -> ElementsAttr {
    auto block = cast<BlockArgument>(argument);
    auto constant = call.getOperand(block.getArgNumber()).getDefiningOp<ConstantOp>();
    return constant ? constant.getValue() : ElementsAttr();
  };
  std::variant<npu::Layer, std::string> layer = npu::recognizeLayer(kernel, constantOf);
  if (auto *reason = std::get_if<std::string>(&layer))
    return *reason;
  if (npu::layerInputs(kernel).empty())
    return std::string("its inputs are not the kernel's arguments");
  return npu::lowerLayer(std::get<npu::Layer>(layer), config);
}

LogicalResult NpuTarget::replaceKernel(ModuleOp module, func::FuncOp kernel) {
  auto cached = programs.find(kernel.getSymName());
  if (cached == programs.end())
    return kernel.emitError("the NPU target was not asked to place this kernel");
  const npu::LayerProgram &program = cached->second;
  func::CallOp call = callsOf(module, kernel).front();

  // The host passes the activations, then the program's constants.
  OpBuilder builder(call);
  SmallVector<Value> operands;
  for (BlockArgument input : npu::layerInputs(kernel))
    operands.push_back(call.getOperand(input.getArgNumber()));
  for (const std::vector<uint8_t> &bytes : program.constants) {
    auto type = RankedTensorType::get({int64_t(bytes.size())}, builder.getIntegerType(8));
    auto values = DenseElementsAttr::get(
        type, llvm::ArrayRef<int8_t>(reinterpret_cast<const int8_t *>(bytes.data()), bytes.size()));
    operands.push_back(ConstantOp::create(builder, call.getLoc(), values));
  }
  SmallVector<int64_t> bindings;
  for (Value operand : operands)
    bindings.push_back(int64_t(tensorBytes(operand.getType())));
  bindings.push_back(int64_t(tensorBytes(call.getResult(0).getType())));

  FunctionType signature =
      builder.getFunctionType(TypeRange(ValueRange(operands)), call.getResultTypes());
  auto replacement = func::CallOp::create(builder, call.getLoc(), kernel.getSymName(),
                                          call.getResultTypes(), operands);
  call.replaceAllUsesWith(replacement.getResults());
  call.erase();

  OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
  auto npuProgram = npu::ProgramOp::create(
      moduleBuilder, kernel.getLoc(), FlatSymbolRefAttr::get(kernel.getSymNameAttr()),
      moduleBuilder.getDenseI64ArrayAttr(bindings));
  npuProgram->setAttr("macs", moduleBuilder.getI64IntegerAttr(int64_t(program.macs)));
  npuProgram->setAttr(
      "tile", moduleBuilder.getDictionaryAttr(
                  {moduleBuilder.getNamedAttr("rows", moduleBuilder.getI64IntegerAttr(
                                                          program.tile.rows)),
                   moduleBuilder.getNamedAttr("tiles", moduleBuilder.getI64IntegerAttr(
                                                           program.tile.tiles)),
                   moduleBuilder.getNamedAttr("predicted_cycles",
                                              moduleBuilder.getI64IntegerAttr(int64_t(
                                                  program.tile.predictedCycles)))}));
  Block *body = moduleBuilder.createBlock(&npuProgram.getBody());
  OpBuilder bodyBuilder = OpBuilder::atBlockEnd(body);
  for (const npu::encoding::Instruction &instruction : program.instructions)
    npu::createInstruction(bodyBuilder, kernel.getLoc(), instruction);

  // The kernel itself is now only the signature the host calls.
  kernel.eraseBody();
  kernel.setType(signature);
  kernel.setPrivate();
  return success();
}

FailureOr<Executable> NpuTarget::compile(ModuleOp kernels, const TargetOptions &) {
  Executable executable;
  executable.device = DeviceKind::Npu;
  executable.format = ExecutableFormat::NpuCommandStream;
  executable.architecture = "tessel-npu-v" + std::to_string(npu::encoding::kIsaVersion) + " " +
                            std::to_string(config.arrayRows) + "x" +
                            std::to_string(config.arrayColumns);
  NpuCode code;
  code.config = config;
  for (auto program : kernels.getOps<npu::ProgramOp>()) {
    KernelEntry entry;
    entry.kernel = entry.symbol = program.getKernel().str();
    for (int64_t bytes : program.getBindings())
      entry.bindingBytes.push_back(uint64_t(bytes));
    entry.npuFirstInstruction = uint32_t(code.instructions.size() / npu::encoding::kInstructionWords);
    for (Operation &op : program.getBody().front()) {
      FailureOr<npu::encoding::Instruction> instruction = npu::instructionOf(&op);
      if (failed(instruction))
        return failure();
      npu::encoding::Words words;
      std::string problem;
      if (!npu::encoding::encode(*instruction, words, &problem))
        return op.emitError("cannot encode the instruction: ") << problem, failure();
      code.instructions.insert(code.instructions.end(), words.begin(), words.end());
      ++entry.npuInstructionCount;
    }
    if (auto macs = program->getAttrOfType<IntegerAttr>("macs"))
      entry.integerOperations = 2 * uint64_t(macs.getInt());
    executable.entries.push_back(std::move(entry));
  }
  executable.npu = std::move(code);
  return executable;
}

} // namespace

llvm::Expected<std::unique_ptr<Target>> createNpuTarget(const TargetOptions &options) {
  llvm::Expected<Config> config = npu::readNpuConfig(options.npuConfigFile);
  if (!config)
    return config.takeError();
  return std::make_unique<NpuTarget>(*config);
}

} // namespace tessel

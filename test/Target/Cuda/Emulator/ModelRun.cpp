//===- ModelRun.cpp - A whole model's kernels, run on its inputs ----------===//

#include "ModelRun.h"

#include "compiler/KernelDeduplication.h"
#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/onnx/OnnxImporter.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>

using namespace mlir;
using tessel::data::HostTensor;

namespace tessel::cuda::emulator {
namespace {

/// Bytes of one element as the kernels' buffers hold it (i1 as a byte).
size_t elementBytes(Type element) {
  return std::max<size_t>(1, element.getIntOrFloatBitWidth() / 8);
}

/// An error naming `op` and where it comes from.
llvm::Error opError(Operation *op, const llvm::Twine &message) {
  std::string location;
  llvm::raw_string_ostream os(location);
  op->getLoc().print(os);
  return llvm::createStringError("@main: '" + op->getName().getStringRef() + "' at " + location +
                                 ": " + message);
}

/// The contents of a constant tensor, laid out as a buffer holds them.
llvm::Expected<Buffer> constantBuffer(arith::ConstantOp constant) {
  auto tensorType = dyn_cast<RankedTensorType>(constant.getType());
  if (!tensorType || !tensorType.hasStaticShape())
    return opError(constant, "not a constant of static shape");
  Type element = tensorType.getElementType();
  Buffer buffer{std::vector<uint8_t>(tensorType.getNumElements() * elementBytes(element)), element};
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(constant.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return opError(constant, "its contents were elided: compile with --emit-all-constants");
    ArrayRef<char> data = blob->getData();
    if (data.size() != buffer.bytes.size())
      return opError(constant, "its resource holds " + llvm::Twine(data.size()) +
                                   " bytes, its type " + llvm::Twine(buffer.bytes.size()));
    std::memcpy(buffer.bytes.data(), data.data(), data.size());
    return buffer;
  }
  auto dense = dyn_cast<DenseIntOrFPElementsAttr>(constant.getValue());
  if (!dense)
    return opError(constant, "a constant the emulator cannot read");
  if (element.isInteger(1)) { // (packed as bits in the attribute)
    for (auto [i, value] : llvm::enumerate(dense.getValues<bool>()))
      buffer.bytes[i] = value;
    return buffer;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    for (size_t offset = 0; offset < buffer.bytes.size(); offset += raw.size())
      std::memcpy(&buffer.bytes[offset], raw.data(), raw.size());
    return buffer;
  }
  std::memcpy(buffer.bytes.data(), raw.data(), buffer.bytes.size());
  return buffer;
}

/// Whether elements of `dtype` are those of `element`: its own type, or,
/// since the kernels' integers are signless, unsigned integers of its
/// width.
bool holds(Type element, tsl_dtype dtype) {
  auto is = [dtype](Type type) {
    std::optional<uint8_t> same = tessel::artifactDType(type);
    return same && static_cast<tsl_dtype>(*same) == dtype;
  };
  auto integer = dyn_cast<IntegerType>(element);
  return is(element) ||
         (integer && integer.getWidth() > 1 &&
          is(IntegerType::get(element.getContext(), integer.getWidth(), IntegerType::Unsigned)));
}

/// The input for argument `index` of @main, checked against its type.
llvm::Expected<Buffer> inputBuffer(BlockArgument argument, const HostTensor &input) {
  auto type = dyn_cast<RankedTensorType>(argument.getType());
  std::string what = "input " + std::to_string(argument.getArgNumber());
  if (!input.name.empty())
    what += " ('" + input.name + "')";
  if (!type || !type.hasStaticShape())
    return llvm::createStringError(what + ": @main's argument is not a tensor of static shape");
  if (std::vector<int64_t>(type.getShape()) != input.shape)
    return llvm::createStringError(what + " has shape " + tessel::data::formatShape(input.shape) +
                                   ", the model's is " +
                                   tessel::data::formatShape(type.getShape().vec()));
  if (!holds(type.getElementType(), input.dtype))
    return llvm::createStringError(what + " holds " + tsl_dtype_name(input.dtype) +
                                   " elements, not the model's type");
  return Buffer{input.bytes, type.getElementType()};
}

/// A result of @main as a tensor file holds it.
llvm::Expected<HostTensor> outputTensor(func::FuncOp main, unsigned index, const Buffer &buffer) {
  auto type = cast<RankedTensorType>(main.getResultTypes()[index]);
  std::optional<uint8_t> dtype = tessel::artifactDType(type.getElementType());
  if (!dtype)
    return llvm::createStringError("output " + std::to_string(index) +
                                   " has an element type no tensor file holds");
  HostTensor tensor;
  if (auto name = main.getResultAttrOfType<StringAttr>(index, tessel::kValueNameAttr))
    tensor.name = name.str();
  tensor.dtype = static_cast<tsl_dtype>(*dtype);
  tensor.shape = type.getShape().vec();
  tensor.bytes = buffer.bytes;
  return tensor;
}

} // namespace

llvm::Expected<ModelOutputs> runModel(ModuleOp module, const EmulationOptions &options,
                                      const std::vector<HostTensor> &inputs, bool chainReference,
                                      CallObserver observe) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isDeclaration())
    return llvm::createStringError("no @main function: give the whole output of tessel-compile "
                                   "--emit linalg --emit-all-constants");
  if (inputs.size() != main.getNumArguments())
    return llvm::createStringError("%zu inputs given, the model takes %u", inputs.size(),
                                   main.getNumArguments());
  // Each value of @main, as the buffer it is (a reshape shares its
  // operand's): as the emulated kernels compute it, and as the reference
  // kernels do (only the kernels' results differ).
  using Values = llvm::DenseMap<Value, std::shared_ptr<const Buffer>>;
  Values emulated, reference;
  auto define = [&](Value value, std::shared_ptr<const Buffer> buffer) {
    emulated[value] = buffer;
    reference[value] = std::move(buffer);
  };
  auto operandsIn = [](const Values &values, ValueRange operands) {
    std::vector<const Buffer *> buffers;
    for (Value operand : operands)
      buffers.push_back(values.lookup(operand).get());
    return buffers;
  };
  for (BlockArgument argument : main.getArguments()) {
    llvm::Expected<Buffer> input = inputBuffer(argument, inputs[argument.getArgNumber()]);
    if (!input)
      return input.takeError();
    define(argument, std::make_shared<const Buffer>(std::move(*input)));
  }
  // Kernels the same as an earlier one but for their names (a model's
  // repeated layers) run its pair, as the targets compile them once.
  llvm::StringMap<std::string> representativeOf;
  for (const KernelAlias &alias : findKernelAliases(module))
    representativeOf[alias.kernel] = alias.representative;
  llvm::StringMap<std::unique_ptr<KernelPair>> compiled;
  for (Operation &op : main.getBody().front()) {
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      llvm::Expected<Buffer> buffer = constantBuffer(constant);
      if (!buffer)
        return buffer.takeError();
      define(constant, std::make_shared<const Buffer>(std::move(*buffer)));
    } else if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
      emulated[op.getResult(0)] = emulated.lookup(op.getOperand(0));
      reference[op.getResult(0)] = reference.lookup(op.getOperand(0));
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto kernel = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!kernel || kernel.isDeclaration())
        return opError(call, "calls no kernel defined in the module");
      auto representative = representativeOf.find(call.getCallee());
      std::unique_ptr<KernelPair> &pair =
          compiled[representative == representativeOf.end() ? call.getCallee()
                                                            : representative->second];
      if (!pair) {
        llvm::Expected<std::unique_ptr<KernelPair>> made = KernelPair::compile(kernel, options);
        if (!made)
          return opError(call, "@" + call.getCallee() + ": " + llvm::toString(made.takeError()));
        pair = std::move(*made);
      }
      auto failed = [&](llvm::Error error) {
        return opError(call, "@" + call.getCallee() + ": " + llvm::toString(std::move(error)));
      };
      llvm::Expected<KernelComparison> comparison =
          pair->run(operandsIn(emulated, call.getOperands()));
      if (!comparison)
        return failed(comparison.takeError());
      observe(call.getCallee(), *pair, *comparison);
      if (comparison->emulatedOutputs.size() != call.getNumResults())
        return opError(call, "the bufferized kernel has another number of outputs");
      for (auto [result, output] : llvm::zip(call.getResults(), comparison->emulatedOutputs))
        emulated[result] = std::make_shared<const Buffer>(std::move(output));
      if (!chainReference)
        continue;
      llvm::Expected<std::vector<Buffer>> referenceOutputs =
          pair->runReference(operandsIn(reference, call.getOperands()));
      if (!referenceOutputs)
        return failed(referenceOutputs.takeError());
      for (auto [result, output] : llvm::zip(call.getResults(), *referenceOutputs))
        reference[result] = std::make_shared<const Buffer>(std::move(output));
    } else if (auto check = dyn_cast<tessel::CheckZeroOp>(op)) {
      // (The runtime's check between steps: a count that must be zero.)
      int64_t count = 0;
      std::memcpy(&count, emulated.lookup(check.getCount())->bytes.data(), sizeof count);
      if (count != 0)
        return llvm::createStringError("run stopped: node '" + check.getNode() +
                                       "': " + check.getProblem() + " (" + llvm::Twine(count) +
                                       " of them)");
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      ModelOutputs outputs;
      for (auto [values, tensors] :
           {std::pair{&emulated, &outputs.emulated}, std::pair{&reference, &outputs.reference}}) {
        if (values == &reference && !chainReference)
          continue;
        for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
          llvm::Expected<HostTensor> output = outputTensor(main, index, *values->lookup(value));
          if (!output)
            return output.takeError();
          tensors->push_back(std::move(*output));
        }
      }
      return outputs;
    } else {
      return opError(&op, "not an op the emulator runs in @main (kernel calls, constants, "
                          "reshapes and checks)");
    }
  }
  return llvm::createStringError("@main has no return");
}

} // namespace tessel::cuda::emulator

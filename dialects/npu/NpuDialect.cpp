//===- NpuDialect.cpp - The npu dialect -----------------------------------===//

#include "dialects/npu/NpuDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace tessel::npu;

#include "dialects/npu/NpuDialect.cpp.inc"

void NpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/npu/NpuOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/npu/NpuOps.cpp.inc"

namespace tessel::npu {

namespace {

/// The opcode and an empty record of the instruction op `op` stands for.
std::optional<encoding::Instruction> emptyInstruction(Operation *op) {
  encoding::Instruction instruction;
  if (isa<LoadOp>(op))
    instruction = {encoding::Opcode::Load, {}, encoding::Dma()};
  else if (isa<StoreOp>(op))
    instruction = {encoding::Opcode::Store, {}, encoding::Dma()};
  else if (isa<GemmOp>(op))
    instruction = {encoding::Opcode::Gemm, {}, encoding::Gemm()};
  else if (isa<PostOp>(op))
    instruction = {encoding::Opcode::Post, {}, encoding::Post()};
  else if (isa<AddOp>(op))
    instruction = {encoding::Opcode::Add, {}, encoding::Add()};
  else if (isa<PoolOp>(op))
    instruction = {encoding::Opcode::Pool, {}, encoding::Pool()};
  else if (isa<DwConvOp>(op))
    instruction = {encoding::Opcode::DwConv, {}, encoding::DwConv()};
  else
    return std::nullopt;
  return instruction;
}

/// Visits every field of `instruction` (dependencies, then its body's).
template <typename Visit> void visitFields(encoding::Instruction &instruction, Visit &&visit) {
  instruction.dependencies.visit(visit);
  std::visit([&](auto &body) { body.visit(visit); }, instruction.body);
}

/// Reads the attributes of an instruction op into `instruction`'s fields.
class FieldReader {
public:
  explicit FieldReader(Operation *op) : op(op) {}

  template <typename T> void operator()(const encoding::Field &field, T &member) {
    if (failed)
      return;
    consumed.insert(field.name);
    Attribute attribute = op->getAttr(field.name);
    if (!attribute)
      return;
    if constexpr (std::is_same_v<T, bool>) {
      if (!isa<UnitAttr>(attribute))
        return fail(field, "is a flag: present or absent");
      member = true;
    } else if constexpr (std::is_same_v<T, float>) {
      auto value = dyn_cast<FloatAttr>(attribute);
      if (!value || !value.getType().isF32())
        return fail(field, "is an f32 number");
      member = float(value.getValueAsDouble());
    } else {
      auto value = dyn_cast<IntegerAttr>(attribute);
      if (!value)
        return fail(field, "is an integer");
      int64_t number = value.getInt();
      using Storage = std::conditional_t<std::is_enum_v<T>, uint8_t, T>;
      bool inMember = number >= int64_t(std::numeric_limits<Storage>::min()) &&
                      uint64_t(number) <= uint64_t(std::numeric_limits<Storage>::max());
      if (std::is_signed_v<Storage>)
        inMember = number >= int64_t(std::numeric_limits<Storage>::min()) &&
                   number <= int64_t(std::numeric_limits<Storage>::max());
      if (!inMember || !encoding::detail::fits<Storage>(encoding::detail::bitsOf(Storage(number)), field))
        return fail(field, "does not fit its " + std::to_string(field.width) + "-bit field");
      member = T(number);
    }
  }

  bool failed = false;
  llvm::StringSet<> consumed;

private:
  void fail(const encoding::Field &field, const std::string &what) {
    op->emitOpError() << "field '" << field.name << "' " << what;
    failed = true;
  }

  Operation *op;
};

} // namespace

FailureOr<encoding::Instruction> instructionOf(Operation *op) {
  std::optional<encoding::Instruction> instruction = emptyInstruction(op);
  if (!instruction)
    return op->emitOpError("is not an NPU instruction");
  // Which fields a GEMM has depends on its addressing mode.
  if (auto *gemm = std::get_if<encoding::Gemm>(&instruction->body))
    gemm->im2col = op->hasAttr("im2col");
  FieldReader reader(op);
  visitFields(*instruction, reader);
  if (reader.failed)
    return failure();
  for (NamedAttribute attribute : op->getAttrs())
    if (!reader.consumed.contains(attribute.getName().strref()))
      return op->emitOpError() << "has no field '" << attribute.getName().strref() << "'";
  return *instruction;
}

Operation *createInstruction(OpBuilder &builder, Location loc,
                             const encoding::Instruction &instruction) {
  // The defaults, by field name, to leave those out.
  encoding::Instruction defaults = instruction;
  std::visit([](auto &body) { body = std::decay_t<decltype(body)>(); }, defaults.body);
  defaults.dependencies = {};
  if (auto *gemm = std::get_if<encoding::Gemm>(&defaults.body))
    gemm->im2col = std::get<encoding::Gemm>(instruction.body).im2col;
  llvm::StringMap<uint64_t> defaultBits;
  visitFields(defaults, [&](const encoding::Field &field, auto &member) {
    defaultBits[field.name] = encoding::detail::bitsOf(member);
  });

  SmallVector<NamedAttribute> attributes;
  encoding::Instruction copy = instruction;
  visitFields(copy, [&](const encoding::Field &field, auto &member) {
    using T = std::decay_t<decltype(member)>;
    if (encoding::detail::bitsOf(member) == defaultBits[field.name])
      return;
    Attribute value;
    if constexpr (std::is_same_v<T, bool>)
      value = builder.getUnitAttr();
    else if constexpr (std::is_same_v<T, float>)
      value = builder.getF32FloatAttr(member);
    else
      value = builder.getI64IntegerAttr(int64_t(member));
    attributes.push_back(builder.getNamedAttr(field.name, value));
  });

  // The addressing mode decides which fields a GEMM has: it is always
  // written, though the defaults above were taken in the same mode.
  if (const auto *gemm = std::get_if<encoding::Gemm>(&instruction.body); gemm && gemm->im2col)
    attributes.push_back(builder.getNamedAttr("im2col", builder.getUnitAttr()));

  OperationState state(loc, [&] {
    switch (instruction.opcode) {
    case encoding::Opcode::Load:
      return LoadOp::getOperationName();
    case encoding::Opcode::Store:
      return StoreOp::getOperationName();
    case encoding::Opcode::Gemm:
      return GemmOp::getOperationName();
    case encoding::Opcode::Post:
      return PostOp::getOperationName();
    case encoding::Opcode::Add:
      return AddOp::getOperationName();
    case encoding::Opcode::Pool:
      return PoolOp::getOperationName();
    case encoding::Opcode::DwConv:
      return DwConvOp::getOperationName();
    }
    return LoadOp::getOperationName();
  }());
  state.addAttributes(attributes);
  return builder.create(state);
}

/// Every instruction op's verifier: its attributes are fields of its
/// instruction with values that fit, and its tokens go to queues it has.
static LogicalResult verifyInstruction(Operation *op) {
  FailureOr<encoding::Instruction> instruction = instructionOf(op);
  if (failed(instruction))
    return failure();
  const encoding::Dependencies &dependencies = instruction->dependencies;
  switch (encoding::queueOf(instruction->opcode)) {
  case encoding::Queue::Load:
    if (dependencies.popPrevious || dependencies.pushPrevious)
      return op->emitOpError("runs on the load queue, which has no previous queue");
    break;
  case encoding::Queue::Store:
    if (dependencies.popNext || dependencies.pushNext)
      return op->emitOpError("runs on the store queue, which has no next queue");
    break;
  case encoding::Queue::Execute:
    break;
  }
  return success();
}

LogicalResult LoadOp::verify() { return verifyInstruction(*this); }
LogicalResult StoreOp::verify() { return verifyInstruction(*this); }
LogicalResult GemmOp::verify() { return verifyInstruction(*this); }
LogicalResult PostOp::verify() { return verifyInstruction(*this); }
LogicalResult AddOp::verify() { return verifyInstruction(*this); }
LogicalResult PoolOp::verify() { return verifyInstruction(*this); }
LogicalResult DwConvOp::verify() { return verifyInstruction(*this); }

LogicalResult ProgramOp::verify() {
  for (int64_t size : getBindings())
    if (size < 0)
      return emitOpError("binds a buffer of negative size");
  if (getBindings().size() > 256)
    return emitOpError("binds ") << getBindings().size()
                                 << " buffers; an NPU instruction names at most 256";
  return success();
}

} // namespace tessel::npu

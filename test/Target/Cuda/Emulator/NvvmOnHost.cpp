//===- NvvmOnHost.cpp - The kernels' NVPTX LLVM IR made to run on the host ===//

#include "NvvmOnHost.h"

#include "NvvmArithmetic.h"
#include "WarpInstructions.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Verifier.h"
#include "llvm/TargetParser/Host.h"

#include <cstring>

namespace tessel::cuda::emulator {

namespace {

/// A special register's host function and dimension.
struct SpecialRegister {
  const char *function;
  int dimension;
};

std::optional<SpecialRegister> specialRegister(llvm::StringRef name) {
  if (!name.consume_front("llvm.nvvm.read.ptx.sreg."))
    return std::nullopt;
  if (name == "laneid")
    return SpecialRegister{"tessel_emu_lane_id", -1};
  auto [kind, axis] = name.rsplit('.');
  int dimension = llvm::StringSwitch<int>(axis).Case("x", 0).Case("y", 1).Case("z", 2).Default(-1);
  const char *function = llvm::StringSwitch<const char *>(kind)
                             .Case("tid", "tessel_emu_thread_id")
                             .Case("ctaid", "tessel_emu_block_id")
                             .Case("ntid", "tessel_emu_block_dim")
                             .Case("nctaid", "tessel_emu_grid_dim")
                             .Default(nullptr);
  if (!function || dimension < 0)
    return std::nullopt;
  return SpecialRegister{function, dimension};
}

bool isBarrier(llvm::StringRef name) {
  return name == "llvm.nvvm.barrier0" || name == "llvm.nvvm.barrier.cta.sync.aligned.all" ||
         name == "llvm.nvvm.barrier.cta.sync.all";
}

/// The operand types of an mma.sync the emulator runs: m16n8k16 of f16 or
/// bf16 into f32, and m16n8k32 of s8/u8 into s32 (without .satfinite).
struct MmaKind {
  bool integers = false;
  HalfType half = HalfType::F16;
  bool aUnsigned = false, bUnsigned = false;
};

std::optional<MmaKind> mmaKind(llvm::StringRef name) {
  if (name == "llvm.nvvm.mma.m16n8k16.row.col.f32.f32")
    return MmaKind{false, HalfType::F16};
  if (name == "llvm.nvvm.mma.m16n8k16.row.col.bf16")
    return MmaKind{false, HalfType::BF16};
  if (!name.consume_front("llvm.nvvm.mma.m16n8k32.row.col."))
    return std::nullopt;
  auto [a, b] = name.split('.');
  if (b.empty())
    b = a;
  auto isInteger = [](llvm::StringRef type) { return type == "s8" || type == "u8"; };
  if (!isInteger(a) || !isInteger(b))
    return std::nullopt;
  MmaKind kind;
  kind.integers = true;
  kind.aUnsigned = a == "u8";
  kind.bUnsigned = b == "u8";
  return kind;
}

class Rewriter {
public:
  Rewriter(llvm::Module &module) : module(module), context(module.getContext()) {}

  llvm::Error rewrite(llvm::CallInst &call, RemovedSynchronization removed) {
    if (call.isInlineAsm())
      return rewriteInlinePtx(call);
    llvm::StringRef name = call.getCalledFunction()->getName();
    llvm::IRBuilder<> builder(&call);
    if (std::optional<SpecialRegister> reg = specialRegister(name)) {
      llvm::Value *value = reg->dimension < 0
                               ? builder.CreateCall(hostFunction(reg->function, i32(), {}))
                               : builder.CreateCall(hostFunction(reg->function, i32(), {i32()}),
                                                    {builder.getInt32(reg->dimension)});
      return replace(call, value);
    }
    if (isBarrier(name)) {
      if (!removed.barriers)
        builder.CreateCall(hostFunction("tessel_emu_barrier", voidType(), {i64()}),
                           {site(builder)});
      call.eraseFromParent();
      return llvm::Error::success();
    }
    // (Overloaded on the address space: `.b16.p3` for shared memory.)
    if (name.starts_with("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.") && name.contains(".b16"))
      return loadMatrices(call, name.contains(".trans."));
    if (std::optional<MmaKind> kind = mmaKind(name))
      return multiply(call, *kind);
    if (name.consume_front("llvm.nvvm.cp.async."))
      return copyAsync(call, name, removed.copyWaits);
    llvm::SmallVector<llvm::Value *> operands(call.args());
    if (llvm::Value *value = hostArithmetic(builder, name.drop_front(strlen("llvm.nvvm.")),
                                            operands, call.getType()))
      return replace(call, value);
    return llvm::createStringError("the emulator does not run '%s' (in %s)", name.str().c_str(),
                                   call.getFunction()->getName().str().c_str());
  }

private:
  /// libdevice's inline PTX of one arithmetic instruction on the call's
  /// operands (`rcp.approx.ftz.f32 $0,$1;`), as its intrinsic would be.
  llvm::Error rewriteInlinePtx(llvm::CallInst &call) {
    llvm::StringRef text = llvm::cast<llvm::InlineAsm>(call.getCalledOperand())->getAsmString();
    auto [opcode, rest] = text.trim().split(' ');
    std::string expected = "$0";
    for (unsigned i = 0; i < call.arg_size(); ++i)
      expected += ",$" + std::to_string(i + 1);
    std::string written = rest.str();
    llvm::erase(written, ' ');
    if (written == expected + ";" || written == expected) {
      llvm::IRBuilder<> builder(&call);
      llvm::SmallVector<llvm::Value *> operands(call.args());
      if (llvm::Value *value = hostArithmetic(builder, opcode, operands, call.getType()))
        return replace(call, value);
    }
    return llvm::createStringError("the emulator does not run the inline PTX '%s' (in %s)",
                                   text.str().c_str(), call.getFunction()->getName().str().c_str());
  }

  llvm::Type *i32() { return llvm::Type::getInt32Ty(context); }
  llvm::Type *i64() { return llvm::Type::getInt64Ty(context); }
  llvm::Type *voidType() { return llvm::Type::getVoidTy(context); }

  llvm::FunctionCallee hostFunction(llvm::StringRef name, llvm::Type *result,
                                    llvm::ArrayRef<llvm::Type *> parameters) {
    return module.getOrInsertFunction(name, llvm::FunctionType::get(result, parameters, false));
  }

  /// A new site: each warp instruction and barrier of the code has its own,
  /// so that threads that meet at different ones are seen to diverge.
  llvm::Value *site(llvm::IRBuilder<> &builder) { return builder.getInt64(sites++); }

  llvm::Value *address(llvm::IRBuilder<> &builder, llvm::Value *pointer) {
    return builder.CreatePtrToInt(pointer, i64());
  }

  /// Stack room for `words` 32-bit words, at the function's entry.
  llvm::AllocaInst *words(llvm::Function &function, unsigned count) {
    llvm::IRBuilder<> entry(&*function.getEntryBlock().getFirstInsertionPt());
    return entry.CreateAlloca(llvm::ArrayType::get(i32(), count), nullptr, "emulated_registers");
  }

  /// The intrinsic's result, a struct of 32-bit values, read from `stored`.
  llvm::Value *loadStruct(llvm::IRBuilder<> &builder, llvm::CallInst &call, llvm::Value *stored) {
    auto *type = llvm::cast<llvm::StructType>(call.getType());
    llvm::Value *result = llvm::PoisonValue::get(type);
    for (unsigned i = 0; i < type->getNumElements(); ++i) {
      llvm::Value *at = builder.CreateConstInBoundsGEP1_32(i32(), stored, i);
      result =
          builder.CreateInsertValue(result, builder.CreateLoad(type->getElementType(i), at), i);
    }
    return result;
  }

  llvm::Error loadMatrices(llvm::CallInst &call, bool transpose) {
    llvm::IRBuilder<> builder(&call);
    llvm::AllocaInst *result = words(*call.getFunction(), 4);
    builder.CreateCall(
        hostFunction("tessel_emu_ldmatrix", voidType(), {i64(), i64(), i64(), i64()}),
        {site(builder), address(builder, call.getArgOperand(0)), builder.getInt64(transpose),
         address(builder, result)});
    return replace(call, loadStruct(builder, call, result));
  }

  /// mma.sync's operands, a (4 words), b (2) and c (4), stored in order as
  /// the host functions read them.
  llvm::Error multiply(llvm::CallInst &call, const MmaKind &kind) {
    if (call.arg_size() != 10)
      return llvm::createStringError("%s takes %u operands, not the 10 of m16n8k16/k32",
                                     call.getCalledFunction()->getName().str().c_str(),
                                     call.arg_size());
    llvm::IRBuilder<> builder(&call);
    llvm::AllocaInst *operands = words(*call.getFunction(), 10);
    llvm::AllocaInst *result = words(*call.getFunction(), 4);
    for (unsigned i = 0; i < 10; ++i)
      builder.CreateStore(builder.CreateBitCast(call.getArgOperand(i), i32()),
                          builder.CreateConstInBoundsGEP1_32(i32(), operands, i));
    auto word = [&](unsigned i) {
      return address(builder, builder.CreateConstInBoundsGEP1_32(i32(), operands, i));
    };
    llvm::SmallVector<llvm::Value *> arguments = {site(builder), word(0), word(4), word(6),
                                                  address(builder, result)};
    const char *function = "tessel_emu_mma";
    if (kind.integers) {
      function = "tessel_emu_mma_integers";
      arguments.push_back(builder.getInt64(kind.aUnsigned));
      arguments.push_back(builder.getInt64(kind.bUnsigned));
    } else {
      arguments.push_back(builder.getInt64(int64_t(kind.half)));
    }
    llvm::SmallVector<llvm::Type *> types(arguments.size(), i64());
    builder.CreateCall(hostFunction(function, voidType(), types), arguments);
    return replace(call, loadStruct(builder, call, result));
  }

  /// cp.async's copies, `operation` being the intrinsic's name after
  /// `llvm.nvvm.cp.async.`: `ca.shared.global.N` (N = 4, 8 or 16 bytes) or
  /// `cg.shared.global.16`, with a `.s` suffix when the bytes read are an
  /// operand; `commit.group`, `wait.group` and `wait.all`; the waits
  /// deleted with `removeWaits`.
  llvm::Error copyAsync(llvm::CallInst &call, llvm::StringRef operation, bool removeWaits) {
    llvm::IRBuilder<> builder(&call);
    if (operation == "commit.group" || operation == "wait.all") {
      builder.CreateCall(hostFunction("tessel_emu_commit_copies", voidType(), {}));
      if (operation == "wait.all" && !removeWaits)
        builder.CreateCall(hostFunction("tessel_emu_wait_copies", voidType(), {i64()}),
                           {builder.getInt64(0)});
      call.eraseFromParent();
      return llvm::Error::success();
    }
    if (operation == "wait.group") {
      if (!removeWaits)
        builder.CreateCall(hostFunction("tessel_emu_wait_copies", voidType(), {i64()}),
                           {builder.CreateZExt(call.getArgOperand(0), i64())});
      call.eraseFromParent();
      return llvm::Error::success();
    }
    bool readsOperand = operation.consume_back(".s");
    bool bypassesL1 = operation.consume_front("cg.");
    int64_t bytes = 0;
    if ((!bypassesL1 && !operation.consume_front("ca.")) ||
        !operation.consume_front("shared.global.") || operation.getAsInteger(10, bytes) ||
        (bytes != 16 && (bypassesL1 || (bytes != 4 && bytes != 8))))
      return llvm::createStringError("the emulator does not run '%s' (in %s)",
                                     call.getCalledFunction()->getName().str().c_str(),
                                     call.getFunction()->getName().str().c_str());
    llvm::Value *sourceBytes = readsOperand ? builder.CreateZExt(call.getArgOperand(2), i64())
                                            : static_cast<llvm::Value *>(builder.getInt64(bytes));
    builder.CreateCall(
        hostFunction("tessel_emu_copy_async", voidType(), {i64(), i64(), i64(), i64()}),
        {address(builder, call.getArgOperand(0)), address(builder, call.getArgOperand(1)),
         builder.getInt64(bytes), sourceBytes});
    call.eraseFromParent();
    return llvm::Error::success();
  }

  llvm::Error replace(llvm::CallInst &call, llvm::Value *value) {
    call.replaceAllUsesWith(value);
    call.eraseFromParent();
    return llvm::Error::success();
  }

  llvm::Module &module;
  llvm::LLVMContext &context;
  int64_t sites = 0;
};

/// Adds `<kernel>_packed(ptr arguments)`, which calls `kernel` with the
/// pointers stored one after another at `arguments`.
void addPackedCaller(llvm::Function &kernel) {
  llvm::LLVMContext &context = kernel.getContext();
  llvm::Type *pointer = llvm::PointerType::get(context, 0);
  auto *packed = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {pointer}, false),
      llvm::GlobalValue::ExternalLinkage, kernel.getName() + "_packed", kernel.getParent());
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", packed));
  llvm::SmallVector<llvm::Value *> arguments;
  for (auto [i, parameter] : llvm::enumerate(kernel.getFunctionType()->params())) {
    llvm::Value *slot = builder.CreateConstInBoundsGEP1_32(pointer, packed->getArg(0), i);
    arguments.push_back(builder.CreateLoad(parameter, slot));
  }
  builder.CreateCall(&kernel, arguments);
  builder.CreateRetVoid();
}

/// `kernel` and the functions it calls, directly or not, that the module
/// defines.
llvm::SmallPtrSet<llvm::Function *, 8> reachableFrom(llvm::Function &kernel) {
  llvm::SmallPtrSet<llvm::Function *, 8> reached = {&kernel};
  llvm::SmallVector<llvm::Function *> pending = {&kernel};
  while (!pending.empty())
    for (llvm::Instruction &instruction : llvm::instructions(*pending.pop_back_val()))
      if (auto *call = llvm::dyn_cast<llvm::CallInst>(&instruction))
        if (llvm::Function *callee = call->getCalledFunction();
            callee && !callee->isDeclaration() && reached.insert(callee).second)
          pending.push_back(callee);
  return reached;
}

/// Whether `function` calls a barrier or a warp instruction (before the
/// rewriting).
bool meetsOtherThreads(llvm::Function &function) {
  for (llvm::Instruction &instruction : llvm::instructions(function))
    if (auto *call = llvm::dyn_cast<llvm::CallInst>(&instruction))
      if (llvm::Function *callee = call->getCalledFunction()) {
        llvm::StringRef name = callee->getName();
        if (isBarrier(name) || name.starts_with("llvm.nvvm.ldmatrix.") ||
            name.starts_with("llvm.nvvm.mma."))
          return true;
      }
  return false;
}

/// Whether `value` is used in one of `functions`, directly or through
/// constant expressions (a shared global's address plus an offset).
bool isUsedIn(llvm::Value &value, const llvm::SmallPtrSetImpl<llvm::Function *> &functions) {
  return llvm::any_of(value.users(), [&](llvm::User *user) {
    if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(user))
      return functions.contains(instruction->getFunction());
    return llvm::isa<llvm::Constant>(user) && isUsedIn(*user, functions);
  });
}

/// The kernels of `module`: what each meets and which shared memory it
/// uses, through the functions it calls too.
std::vector<HostKernel> findKernels(llvm::Module &module, const llvm::DataLayout &hostLayout) {
  std::vector<HostKernel> kernels;
  for (llvm::Function &function : module) {
    if (function.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      continue;
    llvm::SmallPtrSet<llvm::Function *, 8> reached = reachableFrom(function);
    HostKernel &kernel = kernels.emplace_back();
    kernel.name = function.getName().str();
    kernel.meets = llvm::any_of(reached, [](llvm::Function *f) { return meetsOtherThreads(*f); });
    for (llvm::GlobalVariable &global : module.globals())
      if (global.getAddressSpace() == 3 && isUsedIn(global, reached))
        kernel.shared.emplace_back(global.getName().str(),
                                   hostLayout.getTypeAllocSize(global.getValueType()));
  }
  return kernels;
}

} // namespace

llvm::Expected<std::vector<HostKernel>> rewriteForHost(llvm::Module &module,
                                                       const llvm::DataLayout &hostLayout,
                                                       RemovedSynchronization removed) {
  std::vector<HostKernel> kernels = findKernels(module, hostLayout);
  Rewriter rewriter(module);
  for (llvm::Function &function : module) {
    llvm::SmallVector<llvm::CallInst *> calls;
    for (llvm::Instruction &instruction : llvm::instructions(function))
      if (auto *call = llvm::dyn_cast<llvm::CallInst>(&instruction))
        if (llvm::Function *callee = call->getCalledFunction();
            call->isInlineAsm() || (callee && callee->getName().starts_with("llvm.nvvm.")))
          calls.push_back(call);
    for (llvm::CallInst *call : calls)
      if (llvm::Error error = rewriter.rewrite(*call, removed))
        return std::move(error);
    // The NVPTX machine's attributes mean nothing to the host's.
    function.removeFnAttr("target-cpu");
    function.removeFnAttr("target-features");
    function.setCallingConv(llvm::CallingConv::C);
  }
  for (const HostKernel &kernel : kernels)
    addPackedCaller(*module.getFunction(kernel.name));
  if (llvm::NamedMDNode *annotations = module.getNamedMetadata("nvvm.annotations"))
    module.eraseNamedMetadata(annotations);
  module.setTargetTriple(llvm::Triple(llvm::sys::getProcessTriple()));
  module.setDataLayout(hostLayout);
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(module, &stream))
    return llvm::createStringError("the kernels rewritten for the host are not valid IR: %s",
                                   problems.c_str());
  // The shared memory, visible so that the emulator finds it to reset it.
  for (llvm::GlobalVariable &global : module.globals())
    if (global.getAddressSpace() == 3)
      global.setLinkage(llvm::GlobalValue::ExternalLinkage);
  return kernels;
}

} // namespace tessel::cuda::emulator

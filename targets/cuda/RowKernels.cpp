//===- RowKernels.cpp - Reductions, Softmax and LayerNorm, a block per row ===//
//
// Launches.cpp gives a loop nest one thread per output, which leaves a
// reduction along the innermost dimension to one thread per row: a
// Softmax over 128 columns of 1536 rows runs 1536 threads, each reading a
// row of its own (a warp's 32 loads touch 32 rows), and a reduction of a
// whole tensor runs in one thread. Here such a reduction gets a block per
// row instead:
//
//   - thread t combines the row's terms t, t + T, t + 2T, ... (T threads),
//     so that a warp reads 32 neighbouring elements at a time (a reduction
//     of few outputs takes a block each even when its terms are not
//     neighbours: a global average pool of 32 channels);
//   - the T partial results meet in shared memory, half of the threads
//     combining two of them at each step, a barrier between the steps;
//   - thread 0 combines the total with the output's initial value.
//
// The ops before and after the reduction that work on the same rows join
// its launch: the fill of its accumulator, a Softmax's second reduction
// and its normalization, a LayerNorm's variance, scale and shift. An op
// with one value per row runs in thread 0; one with several strides over
// them as the reduction does. A barrier separates each op from the next:
// it orders the block's global stores too, so what one op writes of the
// row, the next reads from global memory.
//
// An op joins when every buffer the launch writes is read and written only
// row by row (its indexing map's leading results are the row loops), so
// that no block reads what another writes.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/RowKernels.h"
#include "targets/cuda/LaunchBuilder.h"
#include "targets/cuda/Loops.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

/// Rows of fewer terms than a warp are left to a thread per row.
constexpr int64_t kMinimumTerms = 32;

/// Fewer outputs than this leave most of a GPU idle with a thread per
/// output (an H100 holds 132 × 2048 threads at once), each thread looping
/// over all its terms: a global average pool of EfficientNet's 112 × 112 ×
/// 32 activations runs 32 threads of 12544 terms. Such a reduction takes a
/// block per output even when its terms are not neighbours in memory.
constexpr int64_t kFewOutputs = 1024;

/// The threads of a block: enough for the longest row, a warp at least.
constexpr int64_t kMinimumThreads = 32;
constexpr int64_t kMaximumThreads = 256;

/// Whether `op` is on static buffers and its body can be evaluated for any
/// one point of its loops on its own: no side effects, and its loop indices
/// (linalg.index) read directly in the body.
bool isPointwiseEvaluable(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  if (!body || !op.hasPureBufferSemantics() || op.hasDynamicShape())
    return false;
  bool nestedIndex = false;
  body->walk([&](linalg::IndexOp index) { nestedIndex |= index->getBlock() != body; });
  return !nestedIndex && llvm::all_of(body->without_terminator(),
                                      [](Operation &inner) { return isMemoryEffectFree(&inner); });
}

/// The op of a reduction's body that combines its terms with the
/// accumulator, when the accumulator takes part in nothing else, the op has
/// an identity, and its values fit a shared-memory array (8 bits or more).
Operation *combinerOf(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || !op.getBlock())
    return nullptr;
  SmallVector<Operation *> combiners;
  if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) || combiners.size() != 1)
    return nullptr;
  Operation *combiner = combiners.front();
  Type type = combiner->getResult(0).getType();
  if (combiner->getNumOperands() != 2 || !type.isIntOrFloat() || type.getIntOrFloatBitWidth() < 8 ||
      !arith::getNeutralElement(combiner))
    return nullptr;
  return combiner;
}

/// The product of `op`'s loop extents from loop `first` on: the elements or
/// terms of one row when the loops before it are the rows.
int64_t extentAfter(linalg::LinalgOp op, unsigned first) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t product = 1;
  for (int64_t extent : llvm::drop_begin(ranges, first))
    product *= extent;
  return product;
}

/// Whether `map` reads or writes row by row: its leading results are the
/// first `rowLoops` loops in order, and its other results use none of them.
bool isRowByRow(AffineMap map, unsigned rowLoops) {
  if (map.getNumResults() < rowLoops)
    return false;
  for (auto [i, result] : llvm::enumerate(map.getResults())) {
    if (i < rowLoops) {
      if (result != getAffineDimExpr(i, map.getContext()))
        return false;
      continue;
    }
    for (unsigned loop = 0; loop < rowLoops; ++loop)
      if (result.isFunctionOfDim(loop))
        return false;
  }
  return true;
}

/// A row kernel's ops, in program order, and the rows they share (the
/// extents of their leading loops).
struct RowGroup {
  SmallVector<int64_t> rows;
  SmallVector<linalg::LinalgOp> ops;
  /// The most elements or terms any of the ops has in a row.
  int64_t rowLength = 1;

  /// The rows, one block each.
  int64_t rowCount() const {
    int64_t count = 1;
    for (int64_t extent : rows)
      count *= extent;
    return count;
  }
};

/// Whether `op` works on the rows `group.rows`: its leading loops are
/// parallel with their extents, its other loops either all reductions that
/// combinerOf takes or all parallel (at most the group's row length), and
/// it writes its outputs row by row.
bool worksOnRows(linalg::LinalgOp op, const RowGroup &group) {
  unsigned rowLoops = group.rows.size();
  if (!isPointwiseEvaluable(op) || linalg::isaContractionOpInterface(op) ||
      op.getNumLoops() < rowLoops)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned loop = 0; loop < rowLoops; ++loop)
    if (iterators[loop] != utils::IteratorType::parallel || ranges[loop] != group.rows[loop])
      return false;
  if (op.getNumReductionLoops() > 0) {
    bool allReductions = llvm::all_of(llvm::drop_begin(iterators, rowLoops), [](auto iterator) {
      return iterator == utils::IteratorType::reduction;
    });
    // (A long one must be one that reducesAcrossThreads, for which the
    // emulator allows its sums' other order.)
    if (!allReductions || !combinerOf(op) ||
        (extentAfter(op, rowLoops) >= kMinimumTerms && !reducesAcrossThreads(op)))
      return false;
  } else if (extentAfter(op, rowLoops) > group.rowLength) {
    return false;
  }
  return llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
    return isRowByRow(op.getMatchingIndexingMap(&init), rowLoops);
  });
}

/// Whether no block of a launch of `ops` on `rowLoops` row loops can read
/// what another writes: each op reaches every buffer that one of them writes
/// through the same value, row by row. Nor can a thread read what another
/// writes in the same op: an op that reads a buffer it writes reads it where
/// it writes it, and a reduction does not read its own output.
bool keepsRowsApart(ArrayRef<linalg::LinalgOp> ops, unsigned rowLoops) {
  llvm::DenseMap<Value, Value> written; // root buffer -> the value written
  for (linalg::LinalgOp op : ops)
    for (Value init : op.getDpsInits()) {
      auto [entry, inserted] = written.try_emplace(rootBuffer(init), init);
      if (!inserted && entry->second != init)
        return false;
    }
  for (linalg::LinalgOp op : ops)
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      auto found = written.find(rootBuffer(operand.get()));
      if (found == written.end())
        continue;
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (found->second != operand.get() || !isRowByRow(map, rowLoops))
        return false;
      for (OpOperand &init : op.getDpsInitsMutable()) {
        if (init.get() != operand.get() || &init == &operand)
          continue;
        // (A reduction's threads would all read the initial value where its
        // loop reads the running one.)
        if (op.getMatchingIndexingMap(&init) != map || op.getNumReductionLoops() > 0)
          return false;
      }
    }
  return true;
}

/// Adds `op` to `group` at its front or back when it works on the group's
/// rows and keeps them apart.
bool join(RowGroup &group, linalg::LinalgOp op, bool atFront) {
  if (!worksOnRows(op, group))
    return false;
  SmallVector<linalg::LinalgOp> ops = group.ops;
  ops.insert(atFront ? ops.begin() : ops.end(), op);
  if (!keepsRowsApart(ops, group.rows.size()))
    return false;
  group.ops = std::move(ops);
  if (op.getNumReductionLoops() > 0)
    group.rowLength = std::max(group.rowLength, extentAfter(op, group.rows.size()));
  return true;
}

/// The group that `anchor` (a reduction that reducesAcrossThreads, its
/// parallel loops first) starts, grown over the ops before and after it in
/// `ops` (its kernel's top-level ops, `anchor` at `position`) that are not
/// `taken` yet.
std::optional<RowGroup> growGroup(ArrayRef<Operation *> ops, size_t position,
                                  const llvm::DenseSet<Operation *> &taken) {
  auto anchor = cast<linalg::LinalgOp>(ops[position]);
  RowGroup group;
  group.rows = anchor.getStaticLoopRanges();
  group.rows.truncate(anchor.getNumParallelLoops());
  if (!join(group, anchor, /*atFront=*/false))
    return std::nullopt;
  auto grow = [&](Operation *op, bool atFront) {
    if (leavesBuffersAlone(op))
      return true;
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    return linalgOp && !taken.contains(op) && join(group, linalgOp, atFront);
  };
  for (size_t i = position; i-- > 0 && grow(ops[i], /*atFront=*/true);)
    ;
  for (size_t i = position + 1; i < ops.size() && grow(ops[i], /*atFront=*/false); ++i)
    ;
  return group;
}

/// Builds the launch of one row kernel in place of its ops.
class RowKernelBuilder {
public:
  explicit RowKernelBuilder(RowGroup group)
      : group(std::move(group)), builder(this->group.ops.back()),
        loc(this->group.ops.back().getLoc()) {}

  void build() {
    threads =
        std::clamp<int64_t>(llvm::PowerOf2Ceil(group.rowLength), kMinimumThreads, kMaximumThreads);
    // One array of partial results per type that the reductions combine.
    SmallVector<Type> partialTypes;
    for (linalg::LinalgOp op : group.ops)
      if (Operation *combiner = op.getNumReductionLoops() ? combinerOf(op) : nullptr)
        if (!llvm::is_contained(partialTypes, combiner->getResult(0).getType()))
          partialTypes.push_back(combiner->getResult(0).getType());
    auto workgroup = gpu::AddressSpaceAttr::get(builder.getContext(), gpu::AddressSpace::Workgroup);
    SmallVector<Type> sharedTypes = llvm::map_to_vector(partialTypes, [&](Type type) -> Type {
      return MemRefType::get({threads}, type, MemRefLayoutAttrInterface(), workgroup);
    });
    auto launch =
        gpu::LaunchOp::create(builder, loc, index(group.rowCount()), index(1), index(1),
                              index(threads), index(1), index(1),
                              /*dynamicSharedMemorySize=*/Value(), /*asyncTokenType=*/Type(),
                              /*asyncDependencies=*/ValueRange(), sharedTypes);
    enterLaunch(builder, launch);
    for (auto [type, shared] : llvm::zip(partialTypes, launch.getWorkgroupAttributions()))
      partials[type] = shared;

    thread = launch.getThreadIds().x;
    rowIndices = delinearize(launch.getBlockIds().x, group.rows);
    for (auto [i, op] : llvm::enumerate(group.ops)) {
      if (i > 0)
        gpu::BarrierOp::create(builder, loc);
      if (op.getNumReductionLoops() > 0)
        emitReduction(op);
      else
        emitRowwise(op);
    }
    for (linalg::LinalgOp op : group.ops)
      op->erase();
  }

private:
  Value index(int64_t value) { return arith::ConstantIndexOp::create(builder, loc, value); }

  /// The indices of `flat` in a row-major space of `extents`.
  SmallVector<Value> delinearize(Value flat, ArrayRef<int64_t> extents) {
    SmallVector<Value> indices(extents.size());
    for (size_t d = extents.size(); d-- > 0;) {
      if (d == 0) {
        indices[d] = flat;
        break;
      }
      indices[d] = arith::RemUIOp::create(builder, loc, flat, index(extents[d]));
      flat = arith::DivUIOp::create(builder, loc, flat, index(extents[d]));
    }
    return indices;
  }

  /// The row's indices followed by the indices of `flat` among `op`'s other
  /// loops.
  SmallVector<Value> loopIndices(linalg::LinalgOp op, Value flat) {
    SmallVector<int64_t> inner = op.getStaticLoopRanges();
    inner.erase(inner.begin(), inner.begin() + group.rows.size());
    SmallVector<Value> indices = rowIndices;
    llvm::append_range(indices, delinearize(flat, inner));
    return indices;
  }

  /// Emits `emit` for the threads for which `thread predicate value` holds.
  void ifThread(arith::CmpIPredicate predicate, int64_t value, llvm::function_ref<void()> emit) {
    Value holds = arith::CmpIOp::create(builder, loc, predicate, thread, index(value));
    auto branch = scf::IfOp::create(builder, loc, holds, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&branch.getThenRegion().front());
    emit();
  }

  /// Evaluates `op`'s body at its loop indices `loops`, its accumulator
  /// `accumulator` when given (a reduction's partial result) or else loaded
  /// from its output; returns what the body yields.
  SmallVector<Value> evaluate(linalg::LinalgOp op, ArrayRef<Value> loops,
                              Value accumulator = Value()) {
    IRMapping mapping;
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument argument = op.getMatchingBlockArgument(&operand);
      if (argument.use_empty())
        continue;
      Value value = operand.get();
      if (accumulator && op.isDpsInit(&operand))
        value = accumulator;
      else if (isa<MemRefType>(value.getType()))
        value = memref::LoadOp::create(
            builder, loc, value,
            indicesAt(builder, loc, op.getMatchingIndexingMap(&operand), loops));
      mapping.map(argument, value);
    }
    Block *body = op.getBlock();
    for (Operation &inner : body->without_terminator()) {
      if (auto loopIndex = dyn_cast<linalg::IndexOp>(inner))
        mapping.map(loopIndex.getResult(), loops[loopIndex.getDim()]);
      else
        builder.clone(inner, mapping);
    }
    return llvm::map_to_vector(body->getTerminator()->getOperands(),
                               [&](Value yielded) { return mapping.lookupOrDefault(yielded); });
  }

  /// Stores `values` into `op`'s outputs at its loop indices `loops`.
  void store(linalg::LinalgOp op, ValueRange values, ArrayRef<Value> loops) {
    for (auto [value, init] : llvm::zip(values, op.getDpsInitsMutable()))
      memref::StoreOp::create(builder, loc, value, init.get(),
                              indicesAt(builder, loc, op.getMatchingIndexingMap(&init), loops));
  }

  /// An op without reductions: thread 0 computes a row of one element, the
  /// threads stride over a longer one.
  void emitRowwise(linalg::LinalgOp op) {
    int64_t elements = extentAfter(op, group.rows.size());
    if (elements == 1) {
      ifThread(arith::CmpIPredicate::eq, 0, [&] {
        SmallVector<Value> loops = loopIndices(op, index(0));
        store(op, evaluate(op, loops), loops);
      });
      return;
    }
    auto loop = scf::ForOp::create(builder, loc, thread, index(elements), index(threads));
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(loop.getBody()->getTerminator());
    SmallVector<Value> loops = loopIndices(op, loop.getInductionVar());
    store(op, evaluate(op, loops), loops);
  }

  /// `combiner` (of a reduction) applied to `accumulated` in its
  /// accumulator's place and `term` in the other.
  Value combine(Operation *combiner, Value accumulator, Value accumulated, Value term) {
    IRMapping mapping;
    for (Value operand : combiner->getOperands())
      mapping.map(operand, operand == accumulator ? accumulated : term);
    return builder.clone(*combiner, mapping)->getResult(0);
  }

  /// A reduction: partial results per thread, combined in shared memory,
  /// the total combined with the output by thread 0.
  void emitReduction(linalg::LinalgOp op) {
    Operation *combiner = combinerOf(op);
    Value accumulator = op.getRegionOutputArgs()[0];
    Value identity = arith::ConstantOp::create(builder, loc, *arith::getNeutralElement(combiner));
    int64_t terms = extentAfter(op, group.rows.size());
    auto loop = scf::ForOp::create(builder, loc, thread, index(terms), index(threads),
                                   ValueRange{identity});
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> loops = loopIndices(op, loop.getInductionVar());
      Value next = evaluate(op, loops, loop.getRegionIterArgs()[0]).front();
      scf::YieldOp::create(builder, loc, next);
    }
    Value shared = partials.lookup(combiner->getResult(0).getType());
    memref::StoreOp::create(builder, loc, loop.getResult(0), shared, thread);
    for (int64_t half = threads / 2; half >= 1; half /= 2) {
      gpu::BarrierOp::create(builder, loc);
      ifThread(arith::CmpIPredicate::ult, half, [&] {
        Value mine = memref::LoadOp::create(builder, loc, shared, thread);
        Value other = arith::AddIOp::create(builder, loc, thread, index(half));
        Value theirs = memref::LoadOp::create(builder, loc, shared, other);
        memref::StoreOp::create(builder, loc, combine(combiner, accumulator, mine, theirs), shared,
                                thread);
      });
    }
    // Thread 0 wrote the total itself in the last step.
    ifThread(arith::CmpIPredicate::eq, 0, [&] {
      SmallVector<Value> loops = loopIndices(op, index(0));
      OpOperand *init = op.getDpsInitOperand(0);
      SmallVector<Value> at = indicesAt(builder, loc, op.getMatchingIndexingMap(init), loops);
      Value initial = memref::LoadOp::create(builder, loc, init->get(), at);
      Value total = memref::LoadOp::create(builder, loc, shared, index(0));
      memref::StoreOp::create(builder, loc, combine(combiner, accumulator, initial, total),
                              init->get(), at);
    });
  }

  RowGroup group;
  OpBuilder builder;
  Location loc;
  int64_t threads = 0;
  Value thread;
  SmallVector<Value> rowIndices;
  llvm::DenseMap<Type, Value> partials;
};

/// The row groups of `kernel`, each grown from the first reduction in it
/// that reducesAcrossThreads.
SmallVector<RowGroup> findGroups(func::FuncOp kernel) {
  SmallVector<Operation *> ops =
      llvm::map_to_vector(kernel.getBody().front(), [](Operation &op) { return &op; });
  llvm::DenseSet<Operation *> taken;
  SmallVector<RowGroup> groups;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto op = dyn_cast<linalg::LinalgOp>(ops[i]);
    if (!op || taken.contains(op) || !reducesAcrossThreads(op))
      continue;
    std::optional<RowGroup> group = growGroup(ops, i, taken);
    if (!group)
      continue;
    int64_t rowCount = group->rowCount();
    if (rowCount == 0 || rowCount > INT32_MAX) // no block, or more than a grid's x holds
      continue;
    for (linalg::LinalgOp member : group->ops)
      taken.insert(member);
    groups.push_back(std::move(*group));
  }
  return groups;
}

} // namespace

bool reducesAcrossThreads(linalg::LinalgOp op) {
  if (!isPointwiseEvaluable(op) || op.getNumReductionLoops() == 0 || op.getNumDpsInputs() == 0 ||
      linalg::isaContractionOpInterface(op) || !combinerOf(op))
    return false;
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t terms = 1;
  for (unsigned loop : reductions)
    terms *= ranges[loop];
  if (terms < kMinimumTerms)
    return false;
  int64_t outputs = 1;
  for (auto [loop, range] : llvm::enumerate(ranges))
    if (!llvm::is_contained(reductions, loop))
      outputs *= range;
  if (outputs < kFewOutputs)
    return true;
  // Else the terms a warp reads together are neighbours in the first input.
  AffineMap first = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  if (first.getNumResults() < reductions.size())
    return false;
  for (auto [result, loop] : llvm::zip(first.getResults().take_back(reductions.size()), reductions))
    if (result != getAffineDimExpr(loop, op.getContext()))
      return false;
  return true;
}

void launchRowKernels(ModuleOp kernels) {
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    if (kernel.isDeclaration())
      continue;
    for (RowGroup &group : findGroups(kernel))
      RowKernelBuilder(std::move(group)).build();
  }
}

} // namespace tessel::cuda

//===- AttentionKernels.cpp - softmax(Q·K)·V as one launch ----------------===//
//
// The shared lowering writes attention as five ops on buffers:
//   S = Q·K             a product summing in f32 (S filled with 0 first)
//   m = max over keys   of S's rows (m filled with -inf)
//   l = sum over keys   of exp(S - m) (l filled with 0)
//   P = exp(S - m) / l
//   O = P·V             (O filled with 0)
// Run one after the other, S and P go through global memory: for a
// sequence of n keys, n² scores per head, written and read twice.
//
// Here they are one launch. A block of four warps owns 64 queries of one
// head (each warp 16), and its loop takes the keys 32 at a time:
//   1. its threads stage the tile's keys and values in shared memory,
//      rounded to the products' half-precision type (the queries were
//      staged once, before the loop, and each warp holds their fragments);
//   2. each warp multiplies its queries by the keys with mma.sync and
//      stores its 16 x 32 scores (f32) in shared memory;
//   3. one thread per query row raises the row's maximum by the tile's
//      scores, scales its running sum by exp(old maximum - new), adds the
//      tile's exp(S - maximum), and writes those, rounded, as the tile's
//      probabilities;
//   4. each warp scales its f32 sums of P·V by the row's factor and adds
//      the tile's probabilities times the values with mma.sync.
// At the end each sum is divided by its row's total. Keys past the end
// (the last tile of a length that is not a multiple of 32) get no
// probability, and their values are staged as zeros.
//
// This is FlashAttention's online Softmax: the maximum a probability is
// taken against is the running one, not the row's. Every probability is
// still exp(S - max) ≤ 1 rounded to half precision, and the sum the
// products are divided by is the f32 sum of the same exponentials, so the
// result differs from the five ops' only by where each term is rounded.
//
// The fragment layouts are WarpFragments' (TensorCoreProducts.h): the
// queries and probabilities are A tiles kept [row][k], the keys a B tile
// kept [key][k], the values a B tile kept [key][column], which ldmatrix
// transposes.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/AttentionKernels.h"
#include "targets/cuda/LaunchBuilder.h"
#include "targets/cuda/Loops.h"
#include "targets/cuda/TensorCoreProducts.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

// A block's queries (four warps of 16) and the keys each step takes.
constexpr int64_t kWarpSize = 32, kWarps = 4, kThreads = kWarpSize * kWarps;
constexpr int64_t kWarpRows = 16, kBlockRows = kWarpRows * kWarps, kStepKeys = 32;
// Head dimensions are staged in whole mma reductions (16), and at most 128
// of them: the queries' fragments and the output's sums stay in registers.
// (The tiles must also fit kMaxSharedBytes, which at a head dimension of
// 128 leaves at most 112 output columns.)
constexpr int64_t kMmaK = 16, kMmaN = 8, kMaxHeadDim = 128;
// Shared tiles of halves are padded by 8 elements (16 bytes) per row, as
// the products' are, so ldmatrix's eight rows fall in distinct banks; the
// scores' f32 rows by 4.
constexpr int64_t kHalfPadding = 8, kScorePadding = 4;
// What the static shared memory of a block may hold.
constexpr int64_t kMaxSharedBytes = 48 * 1024;

/// An attention's five ops, and the loops of its two products by role.
struct Attention {
  linalg::LinalgOp scores, rowMax, rowSum, normalize, output;
  /// The fills of S, m, l and O, which the launch makes unnecessary.
  SmallVector<Operation *> fills;
  /// The scores' loops: batch (in order), query row, key, head dimension.
  SmallVector<unsigned> batch;
  unsigned row = 0, key = 0, depth = 0;
  /// The output's loops: its batch loops in the order of `batch`, query
  /// row, output column, key.
  SmallVector<unsigned> outputBatch;
  unsigned outputRow = 0, outputColumn = 0, outputKey = 0;
  SmallVector<int64_t> extents, outputExtents;

  int64_t rows() const { return extents[row]; }
  int64_t keys() const { return extents[key]; }
  int64_t headDim() const { return extents[depth]; }
  int64_t columns() const { return outputExtents[outputColumn]; }
  int64_t batchCount() const {
    int64_t count = 1;
    for (unsigned loop : batch)
      count *= extents[loop];
    return count;
  }
};

/// Whether `value` is a constant float equal to `expected` (-inf included).
bool isConstantFloat(Value value, double expected) {
  APFloat constant(0.0);
  return matchPattern(value, m_ConstantFloat(&constant)) && constant.convertToDouble() == expected;
}

/// The linalg.fill of `buffer` with `expected`, if one writes it.
linalg::FillOp fillOf(Value buffer, double expected) {
  for (Operation *user : buffer.getUsers())
    if (auto fill = dyn_cast<linalg::FillOp>(user))
      if (fill.getOutputs()[0] == buffer && isConstantFloat(fill.getInputs()[0], expected))
        return fill;
  return nullptr;
}

/// The value `op`'s body yields.
Value yielded(linalg::LinalgOp op) { return op.getBlock()->getTerminator()->getOperand(0); }

/// How many ops use `value`.
int64_t userCount(Value value) {
  return std::distance(value.getUsers().begin(), value.getUsers().end());
}

/// Whether `value` is exp(a - b) of block arguments `a` and `b`.
bool isExpOfDifference(Value value, Value a, Value b) {
  auto exp = value.getDefiningOp<math::ExpOp>();
  auto sub = exp ? exp.getOperand().getDefiningOp<arith::SubFOp>() : nullptr;
  return sub && sub.getLhs() == a && sub.getRhs() == b;
}

/// Whether `op`, on rank-`rank` scores, reduces along their last dimension:
/// its first input's map the identity, its others and its output the
/// rows', its last loop the only reduction.
bool reducesRows(linalg::LinalgOp op, unsigned rank) {
  if (op.getNumLoops() != rank || op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return false;
  AffineMap rowsMap = AffineMap::getMultiDimIdentityMap(rank - 1, op.getContext());
  rowsMap = AffineMap::get(rank, 0, rowsMap.getResults(), op.getContext());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  return maps.front().isIdentity() &&
         llvm::all_of(ArrayRef(maps).drop_front(), [&](AffineMap map) { return map == rowsMap; });
}

/// Whether `op` is m = max(m, S) along S's rows, m filled with -inf.
bool isRowMaximum(linalg::LinalgOp op, Value scores, unsigned rank) {
  if (op.getNumDpsInputs() != 1 || op.getDpsInputs()[0] != scores || !reducesRows(op, rank) ||
      !fillOf(op.getDpsInits()[0], -INFINITY))
    return false;
  auto maximum = yielded(op).getDefiningOp<arith::MaximumFOp>();
  Block *body = op.getBlock();
  return maximum && llvm::is_contained(maximum->getOperands(), body->getArgument(0)) &&
         llvm::is_contained(maximum->getOperands(), body->getArgument(1));
}

/// Whether `op` is l = l + exp(S - m) along S's rows, l filled with 0.
bool isRowSum(linalg::LinalgOp op, Value scores, Value maximum, unsigned rank) {
  if (op.getNumDpsInputs() != 2 || op.getDpsInputs()[0] != scores ||
      op.getDpsInputs()[1] != maximum || !reducesRows(op, rank) ||
      !fillOf(op.getDpsInits()[0], 0.0))
    return false;
  auto add = yielded(op).getDefiningOp<arith::AddFOp>();
  Block *body = op.getBlock();
  if (!add)
    return false;
  Value sum = body->getArgument(2);
  Value term = add.getLhs() == sum ? add.getRhs() : add.getRhs() == sum ? add.getLhs() : Value();
  return term && isExpOfDifference(term, body->getArgument(0), body->getArgument(1));
}

/// Whether `op` is P = exp(S - m) / l, elementwise on S's shape.
bool isNormalization(linalg::LinalgOp op, Value scores, Value maximum, Value sum, unsigned rank) {
  if (op.getNumDpsInputs() != 3 || op.getDpsInputs()[0] != scores ||
      op.getDpsInputs()[1] != maximum || op.getDpsInputs()[2] != sum ||
      op.getNumParallelLoops() != rank || op.getNumLoops() != rank)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap rowsMap = AffineMap::get(
      rank, 0, AffineMap::getMultiDimIdentityMap(rank - 1, op.getContext()).getResults(),
      op.getContext());
  if (!maps[0].isIdentity() || maps[1] != rowsMap || maps[2] != rowsMap || !maps[3].isIdentity())
    return false;
  auto divide = yielded(op).getDefiningOp<arith::DivFOp>();
  Block *body = op.getBlock();
  return divide && divide.getRhs() == body->getArgument(2) &&
         isExpOfDifference(divide.getLhs(), body->getArgument(0), body->getArgument(1));
}

/// A product's one row, column and reduction loop, and its batch loops.
struct ProductLoops {
  SmallVector<unsigned> batch;
  unsigned m = 0, n = 0, k = 0;
};

std::optional<ProductLoops> productLoops(linalg::LinalgOp op, ProductPrecision precision) {
  if (!takesTensorCores(op, precision) ||
      getElementTypeOrSelf(op.getDpsInits()[0].getType()) != Float32Type::get(op.getContext()))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 || dims->k.size() != 1)
    return std::nullopt;
  return ProductLoops{llvm::to_vector(dims->batch), dims->m[0], dims->n[0], dims->k[0]};
}

/// The loop of `op` that `map`'s result `i` is, if it is a plain loop.
std::optional<unsigned> loopOf(AffineMap map, unsigned i) {
  if (auto dim = dyn_cast<AffineDimExpr>(map.getResult(i)))
    return dim.getPosition();
  return std::nullopt;
}

/// The attention whose scores `op` computes, if it is one this file
/// launches.
std::optional<Attention> matchAttention(linalg::LinalgOp op, ProductPrecision precision) {
  std::optional<ProductLoops> scoreLoops = productLoops(op, precision);
  if (!scoreLoops)
    return std::nullopt;
  Attention attention;
  attention.scores = op;
  attention.batch = scoreLoops->batch;
  attention.row = scoreLoops->m;
  attention.key = scoreLoops->n;
  attention.depth = scoreLoops->k;
  attention.extents = op.getStaticLoopRanges();

  // S: a temporary that only these ops use, its last dimension the keys.
  Value scores = op.getDpsInits()[0];
  auto scoresType = cast<MemRefType>(scores.getType());
  unsigned rank = scoresType.getRank();
  AffineMap scoresMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!scores.getDefiningOp<memref::AllocOp>() || rank != attention.batch.size() + 2 ||
      loopOf(scoresMap, rank - 1) != attention.key)
    return std::nullopt;
  linalg::FillOp scoresFill = fillOf(scores, 0.0);
  if (!scoresFill)
    return std::nullopt;

  // Its users after the product: the Softmax's three ops, in order.
  SmallVector<linalg::LinalgOp> softmax;
  for (Operation *user : scores.getUsers())
    if (user != op && user != scoresFill)
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user))
        softmax.push_back(linalgOp);
  if (softmax.size() != 3 || userCount(scores) != 5 ||
      llvm::any_of(softmax,
                   [&](linalg::LinalgOp user) { return user->getBlock() != op->getBlock(); }))
    return std::nullopt;
  llvm::sort(softmax, [](linalg::LinalgOp x, linalg::LinalgOp y) { return x->isBeforeInBlock(y); });
  auto [rowMax, rowSum, normalize] = std::tuple(softmax[0], softmax[1], softmax[2]);
  if (!op->isBeforeInBlock(rowMax) || !isRowMaximum(rowMax, scores, rank))
    return std::nullopt;
  Value maximum = rowMax.getDpsInits()[0];
  if (!isRowSum(rowSum, scores, maximum, rank))
    return std::nullopt;
  Value sum = rowSum.getDpsInits()[0];
  if (!isNormalization(normalize, scores, maximum, sum, rank))
    return std::nullopt;
  Value probabilities = normalize.getDpsInits()[0];
  for (Value temporary : {maximum, sum, probabilities})
    if (!temporary.getDefiningOp<memref::AllocOp>())
      return std::nullopt;
  if (userCount(maximum) != 4 || userCount(sum) != 3 || !probabilities.hasNUses(2))
    return std::nullopt;

  // O = P·V, P its first operand, P's dimensions its loops as they are S's.
  auto reader =
      llvm::find_if(probabilities.getUsers(), [&](Operation *user) { return user != normalize; });
  auto output = reader == probabilities.getUsers().end() ? linalg::LinalgOp()
                                                         : dyn_cast<linalg::LinalgOp>(*reader);
  std::optional<ProductLoops> outputLoops = output ? productLoops(output, precision) : std::nullopt;
  if (!outputLoops || output.getDpsInputs()[0] != probabilities ||
      output->getBlock() != op->getBlock() || outputLoops->batch.size() != attention.batch.size())
    return std::nullopt;
  AffineMap probabilitiesMap = output.getMatchingIndexingMap(output.getDpsInputOperand(0));
  SmallVector<unsigned> outputBatch(attention.batch.size());
  for (unsigned dim = 0; dim < rank; ++dim) {
    std::optional<unsigned> scoreLoop = loopOf(scoresMap, dim);
    std::optional<unsigned> outputLoop = loopOf(probabilitiesMap, dim);
    if (!scoreLoop || !outputLoop)
      return std::nullopt;
    if (*scoreLoop == attention.key) {
      if (*outputLoop != outputLoops->k)
        return std::nullopt;
    } else if (*scoreLoop == attention.row) {
      if (*outputLoop != outputLoops->m)
        return std::nullopt;
    } else {
      auto position = llvm::find(attention.batch, *scoreLoop) - attention.batch.begin();
      if (position == static_cast<long>(attention.batch.size()) ||
          !llvm::is_contained(outputLoops->batch, *outputLoop))
        return std::nullopt;
      outputBatch[position] = *outputLoop;
    }
  }
  attention.output = output;
  attention.outputBatch = outputBatch;
  attention.outputRow = outputLoops->m;
  attention.outputColumn = outputLoops->n;
  attention.outputKey = outputLoops->k;
  attention.outputExtents = output.getStaticLoopRanges();
  attention.rowMax = rowMax;
  attention.rowSum = rowSum;
  attention.normalize = normalize;

  // Between the products, only the Softmax and fills; O filled with 0
  // last before the output product, which then owns it.
  linalg::FillOp outputFill = fillOf(output.getDpsInits()[0], 0.0);
  if (!outputFill || outputFill->getBlock() != op->getBlock() ||
      !outputFill->isBeforeInBlock(output))
    return std::nullopt;
  Value outputBuffer = rootBuffer(output.getDpsInits()[0]);
  for (Operation *between = outputFill->getNextNode(); between != output.getOperation();
       between = between->getNextNode())
    if (llvm::any_of(between->getOperands(),
                     [&](Value operand) { return rootBuffer(operand) == outputBuffer; }))
      return std::nullopt;
  attention.fills = {scoresFill, fillOf(maximum, -INFINITY), fillOf(sum, 0.0), outputFill};
  for (Operation *between = op->getNextNode(); between != output.getOperation();
       between = between->getNextNode()) {
    bool isSoftmax = between == rowMax.getOperation() || between == rowSum.getOperation() ||
                     between == normalize.getOperation();
    if (!isSoftmax && !llvm::is_contained(attention.fills, between) && !leavesBuffersAlone(between))
      return std::nullopt;
  }

  // What a block holds, and the grid's limit on heads.
  int64_t headDim = llvm::alignTo(attention.headDim(), kMmaK);
  int64_t columns = llvm::alignTo(attention.columns(), kMmaK);
  int64_t sharedBytes = 2 * (kBlockRows + kStepKeys) * (headDim + kHalfPadding) +
                        2 * kStepKeys * (columns + kHalfPadding) +
                        4 * kBlockRows * (kStepKeys + kScorePadding) +
                        2 * kBlockRows * (kStepKeys + kHalfPadding) + 3 * 4 * kBlockRows;
  if (headDim > kMaxHeadDim || columns > kMaxHeadDim || sharedBytes > kMaxSharedBytes ||
      attention.batchCount() > 65535)
    return std::nullopt;
  return attention;
}

/// Builds the launch of one attention.
class AttentionKernelBuilder : LaunchBuilder {
public:
  AttentionKernelBuilder(Attention attention, ProductPrecision precision)
      : LaunchBuilder(attention.output), attention(attention),
        operandType(operandTypeOf(builder.getContext(), precision)),
        headDim(llvm::alignTo(attention.headDim(), kMmaK)),
        columns(llvm::alignTo(attention.columns(), kMmaK)) {}

  void build() {
    auto workgroup = gpu::AddressSpaceAttr::get(builder.getContext(), gpu::AddressSpace::Workgroup);
    auto shared = [&](int64_t rows, int64_t width, Type type) {
      return MemRefType::get({rows, width}, type, MemRefLayoutAttrInterface(), workgroup);
    };
    Type f32 = builder.getF32Type();
    auto rowValues = MemRefType::get({kBlockRows}, f32, MemRefLayoutAttrInterface(), workgroup);
    auto launch = gpu::LaunchOp::create(
        builder, loc, index(llvm::divideCeil(attention.rows(), kBlockRows)),
        index(attention.batchCount()), index(1), index(kThreads), index(1), index(1),
        /*dynamicSharedMemorySize=*/Value(), /*asyncTokenType=*/Type(),
        /*asyncDependencies=*/ValueRange(),
        /*workgroupAttributions=*/
        TypeRange{shared(kBlockRows, headDim + kHalfPadding, operandType),
                  shared(kStepKeys, headDim + kHalfPadding, operandType),
                  shared(kStepKeys, columns + kHalfPadding, operandType),
                  shared(kBlockRows, kStepKeys + kScorePadding, f32),
                  shared(kBlockRows, kStepKeys + kHalfPadding, operandType), rowValues, rowValues,
                  rowValues});
    enterLaunch(builder, launch);
    ArrayRef<BlockArgument> tiles = launch.getWorkgroupAttributions();
    queries = tiles[0];
    keys = tiles[1];
    values = tiles[2];
    scores = tiles[3];
    probabilities = tiles[4];
    rowMaxima = tiles[5];
    rowSums = tiles[6];
    rowScales = tiles[7];

    thread = launch.getThreadIds().x;
    Value lane = rem(thread, kWarpSize);
    warpRow = mul(div(thread, kWarpSize), kWarpRows);
    group = div(lane, 4);
    inGroup = rem(lane, 4);
    blockRow = mul(launch.getBlockIds().x, kBlockRows);
    fragments.emplace(builder, loc, operandType, lane);
    scoreLoops.assign(attention.scores.getNumLoops(), index(0));
    outputLoops.assign(attention.output.getNumLoops(), index(0));
    Value rest = launch.getBlockIds().y;
    for (auto [loop, outputLoop] :
         llvm::reverse(llvm::zip(attention.batch, attention.outputBatch))) {
      scoreLoops[loop] = rem(rest, attention.extents[loop]);
      outputLoops[outputLoop] = scoreLoops[loop];
      rest = div(rest, attention.extents[loop]);
    }

    stageQueries();
    emitStatisticsStart();
    gpu::BarrierOp::create(builder, loc);
    SmallVector<SmallVector<Value, 4>> queryFragments;
    for (int64_t k = 0; k < headDim; k += kMmaK)
      queryFragments.push_back(fragments->loadA(queries, warpRow, index(k), /*byK=*/true));
    Value zero = constantF32(0.0);
    SmallVector<Value> sums(columns / kMmaN * 4, zero);
    auto loop =
        scf::ForOp::create(builder, loc, index(0), index(attention.keys()), index(kStepKeys), sums);
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> carried(loop.getRegionIterArgs());
      emitStep(loop.getInductionVar(), queryFragments, carried);
      scf::YieldOp::create(builder, loc, carried);
    }
    emitOutputs(loop.getResults());
    for (Operation *fill : attention.fills)
      fill->erase();
    SmallVector<Value> temporaries{
        attention.scores.getDpsInits()[0], attention.rowMax.getDpsInits()[0],
        attention.rowSum.getDpsInits()[0], attention.normalize.getDpsInits()[0]};
    for (linalg::LinalgOp op : {attention.output, attention.normalize, attention.rowSum,
                                attention.rowMax, attention.scores})
      op->erase();
    for (Value temporary : temporaries)
      if (temporary.use_empty())
        temporary.getDefiningOp()->erase();
  }

private:
  Value constantF32(double value) {
    return arith::ConstantOp::create(builder, loc, builder.getF32FloatAttr(value));
  }

  /// Stages `tile` ([row][column], `tileRows` x `tileColumns`) from input
  /// `input` of `op`, whose loops are `loops`: tile element (r, c) is the
  /// operand's element where loop `rowLoop` is rowBase + r and loop
  /// `columnLoop` is c, rounded to the operand type, and zero past either
  /// loop's extent. Neighbouring threads take neighbouring elements of the
  /// operand's innermost dimension, so that a warp's loads are contiguous.
  void stage(linalg::LinalgOp op, unsigned input, SmallVector<Value> &loops, unsigned rowLoop,
             unsigned columnLoop, Value rowBase, Value tile, int64_t tileRows,
             int64_t tileColumns) {
    OpOperand *operand = op.getDpsInputOperand(input);
    AffineMap map = op.getMatchingIndexingMap(operand);
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    int64_t rowExtent = extents[rowLoop], columnExtent = extents[columnLoop];
    bool columnsInnermost =
        map.getNumResults() > 0 && map.getResults().back().isFunctionOfDim(columnLoop);
    Type elementType = getElementTypeOrSelf(operand->get().getType());
    Value zero = arith::ConstantOp::create(builder, loc, builder.getZeroAttr(operandType));
    for (int64_t i = 0; i < tileRows * tileColumns / kThreads; ++i) {
      Value flat = add(thread, i * kThreads);
      Value r = columnsInnermost ? div(flat, tileColumns) : rem(flat, tileRows);
      Value c = columnsInnermost ? rem(flat, tileColumns) : div(flat, tileRows);
      Value row = add(rowBase, r);
      // Past the end, the last row or column is read (every load stays
      // inside the operand, without a branch) and replaced by zero.
      loops[rowLoop] = minimum(row, rowExtent - 1);
      loops[columnLoop] = minimum(c, columnExtent - 1);
      Value value =
          memref::LoadOp::create(builder, loc, operand->get(), indicesAt(builder, loc, map, loops));
      if (elementType != operandType)
        value = arith::TruncFOp::create(builder, loc, operandType, value);
      Value inside = below(c, columnExtent);
      inside = arith::AndIOp::create(builder, loc, inside, below(row, rowExtent));
      value = arith::SelectOp::create(builder, loc, inside, value, zero);
      memref::StoreOp::create(builder, loc, value, tile, ValueRange{r, c});
    }
  }

  void stageQueries() {
    stage(attention.scores, 0, scoreLoops, attention.row, attention.depth, blockRow, queries,
          kBlockRows, headDim);
  }

  /// Each row starts with maximum -inf and sum 0 (one thread per row).
  void emitStatisticsStart() {
    onlyIf(below(thread, kBlockRows), [&] {
      memref::StoreOp::create(builder, loc, constantF32(-INFINITY), rowMaxima, thread);
      memref::StoreOp::create(builder, loc, constantF32(0.0), rowSums, thread);
    });
  }

  /// One step of the loop over keys: the keys from `keyBase` on.
  void emitStep(Value keyBase, ArrayRef<SmallVector<Value, 4>> queryFragments,
                SmallVector<Value> &sums) {
    stage(attention.scores, 1, scoreLoops, attention.key, attention.depth, keyBase, keys, kStepKeys,
          headDim);
    stage(attention.output, 1, outputLoops, attention.outputKey, attention.outputColumn, keyBase,
          values, kStepKeys, columns);
    gpu::BarrierOp::create(builder, loc);
    emitScores(queryFragments);
    gpu::BarrierOp::create(builder, loc);
    onlyIf(below(thread, kBlockRows), [&] { emitRowSoftmax(keyBase); });
    gpu::BarrierOp::create(builder, loc);
    emitWeightedValues(sums);
    // The next step's staging overwrites what the warps read here.
    gpu::BarrierOp::create(builder, loc);
  }

  /// The warp's 16 x 32 scores into the shared scores tile.
  void emitScores(ArrayRef<SmallVector<Value, 4>> queryFragments) {
    Value zero = constantF32(0.0);
    SmallVector<Value> tileSums(kStepKeys / kMmaN * 4, zero);
    for (int64_t k = 0; k < headDim; k += kMmaK)
      for (int64_t j = 0; j < kStepKeys / kMmaN; j += 2) {
        auto [first, second] = fragments->loadBPair(keys, index(j * kMmaN), index(k), true);
        fragments->multiply(queryFragments[k / kMmaK], first,
                            MutableArrayRef<Value>(&tileSums[j * 4], 4));
        fragments->multiply(queryFragments[k / kMmaK], second,
                            MutableArrayRef<Value>(&tileSums[(j + 1) * 4], 4));
      }
    forEachAccumulator(kStepKeys, [&](int64_t i, Value row, Value column) {
      memref::StoreOp::create(builder, loc, tileSums[i], scores, ValueRange{row, column});
    });
  }

  /// Calls `body` with each accumulator of this thread's mma tiles across
  /// `width` columns: its index, its row in the block and its column.
  void forEachAccumulator(int64_t width, llvm::function_ref<void(int64_t, Value, Value)> body) {
    for (int64_t j = 0; j < width / kMmaN; ++j)
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t c = 0; c < 2; ++c)
          body(j * 4 + half * 2 + c, add(add(warpRow, group), half * 8),
               add(mul(inGroup, 2), j * kMmaN + c));
  }

  /// The Softmax of this thread's row over the step's keys, online: the
  /// row's maximum raised, its sum scaled to it, the step's probabilities
  /// exp(S - maximum) rounded into the probabilities tile, and the factor
  /// the output's sums are scaled by kept for the warps.
  void emitRowSoftmax(Value keyBase) {
    Value row = thread;
    Value keysLeft = arith::SubIOp::create(builder, loc, index(attention.keys()), keyBase);
    Value present = arith::MinUIOp::create(builder, loc, keysLeft, index(kStepKeys));
    Value old = memref::LoadOp::create(builder, loc, rowMaxima, row);
    auto maximumLoop =
        scf::ForOp::create(builder, loc, index(0), index(kStepKeys), index(1), ValueRange{old});
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(maximumLoop.getBody());
      Value key = maximumLoop.getInductionVar();
      Value running = maximumLoop.getRegionIterArgs()[0];
      Value score = memref::LoadOp::create(builder, loc, scores, ValueRange{row, key});
      Value raised = arith::MaximumFOp::create(builder, loc, running, score);
      scf::YieldOp::create(
          builder, loc,
          ValueRange{arith::SelectOp::create(builder, loc, below(key, present), raised, running)});
    }
    Value maximum = maximumLoop.getResult(0);
    // Before the first step the sums are zero and the maximum -inf: the
    // factor is 0 (exp(-inf - maximum) is not computed as such).
    Value first =
        arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::OEQ, old, constantF32(-INFINITY));
    Value factor =
        math::ExpOp::create(builder, loc, arith::SubFOp::create(builder, loc, old, maximum));
    Value zero = constantF32(0.0);
    factor = arith::SelectOp::create(builder, loc, first, zero, factor);
    Value scaledSum = arith::MulFOp::create(
        builder, loc, memref::LoadOp::create(builder, loc, rowSums, row), factor);
    auto sumLoop = scf::ForOp::create(builder, loc, index(0), index(kStepKeys), index(1),
                                      ValueRange{scaledSum});
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(sumLoop.getBody());
      Value key = sumLoop.getInductionVar();
      Value score = memref::LoadOp::create(builder, loc, scores, ValueRange{row, key});
      Value probability =
          math::ExpOp::create(builder, loc, arith::SubFOp::create(builder, loc, score, maximum));
      probability = arith::SelectOp::create(builder, loc, below(key, present), probability, zero);
      memref::StoreOp::create(builder, loc,
                              arith::TruncFOp::create(builder, loc, operandType, probability),
                              probabilities, ValueRange{row, key});
      scf::YieldOp::create(builder, loc,
                           ValueRange{arith::AddFOp::create(
                               builder, loc, sumLoop.getRegionIterArgs()[0], probability)});
    }
    memref::StoreOp::create(builder, loc, maximum, rowMaxima, row);
    memref::StoreOp::create(builder, loc, sumLoop.getResult(0), rowSums, row);
    memref::StoreOp::create(builder, loc, factor, rowScales, row);
  }

  /// sums = sums * the row's factor + the step's probabilities · values.
  void emitWeightedValues(SmallVector<Value> &sums) {
    Value upper = memref::LoadOp::create(builder, loc, rowScales, add(warpRow, group));
    Value lower = memref::LoadOp::create(builder, loc, rowScales, add(add(warpRow, group), 8));
    for (size_t i = 0; i < sums.size(); ++i)
      sums[i] = arith::MulFOp::create(builder, loc, sums[i], i % 4 < 2 ? upper : lower);
    for (int64_t k = 0; k < kStepKeys; k += kMmaK) {
      SmallVector<Value, 4> weights =
          fragments->loadA(probabilities, warpRow, index(k), /*byK=*/true);
      for (int64_t j = 0; j < columns / kMmaN; j += 2) {
        auto [first, second] = fragments->loadBPair(values, index(j * kMmaN), index(k), false);
        fragments->multiply(weights, first, MutableArrayRef<Value>(&sums[j * 4], 4));
        fragments->multiply(weights, second, MutableArrayRef<Value>(&sums[(j + 1) * 4], 4));
      }
    }
  }

  /// O = each sum / its row's total, inside O.
  void emitOutputs(ValueRange sums) {
    OpOperand *output = attention.output.getDpsInitOperand(0);
    AffineMap map = attention.output.getMatchingIndexingMap(output);
    outputLoops[attention.outputKey] = index(0);
    forEachAccumulator(columns, [&](int64_t i, Value row, Value column) {
      Value blockRowValue = add(blockRow, row);
      Value inside = arith::AndIOp::create(builder, loc, below(blockRowValue, attention.rows()),
                                           below(column, attention.columns()));
      onlyIf(inside, [&] {
        Value total = memref::LoadOp::create(builder, loc, rowSums, row);
        Value value = arith::DivFOp::create(builder, loc, sums[i], total);
        outputLoops[attention.outputRow] = blockRowValue;
        outputLoops[attention.outputColumn] = column;
        memref::StoreOp::create(builder, loc, value, output->get(),
                                indicesAt(builder, loc, map, outputLoops));
      });
    });
  }

  Attention attention;
  Type operandType;
  /// The head and output dimensions, padded to whole mma reductions.
  int64_t headDim, columns;
  std::optional<WarpFragments> fragments;
  Value queries, keys, values, scores, probabilities, rowMaxima, rowSums, rowScales;
  Value thread, warpRow, group, inGroup, blockRow;
  /// The value of every loop of each product where the kernel reads or
  /// writes.
  SmallVector<Value> scoreLoops, outputLoops;
};

} // namespace

void launchAttentionKernels(ModuleOp kernels, ProductPrecision precision) {
  if (precision == ProductPrecision::F32)
    return;
  kernels.getContext()
      ->loadDialect<affine::AffineDialect, gpu::GPUDialect, LLVM::LLVMDialect, math::MathDialect,
                    NVVM::NVVMDialect, nvgpu::NVGPUDialect, vector::VectorDialect>();
  std::vector<Attention> attentions;
  // An attention's output may look like the next one's scores (attention
  // over attention's output): each op goes to the first attention that
  // claims it, and a match that would share one is left to the loops.
  llvm::DenseSet<Operation *> claimed;
  kernels.walk([&](linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics() || !isa<func::FuncOp>(op->getParentOp()))
      return;
    std::optional<Attention> attention = matchAttention(op, precision);
    if (!attention)
      return;
    SmallVector<Operation *> ops(attention->fills);
    for (linalg::LinalgOp member : {attention->scores, attention->rowMax, attention->rowSum,
                                    attention->normalize, attention->output})
      ops.push_back(member);
    if (llvm::any_of(ops, [&](Operation *member) { return claimed.contains(member); }))
      return;
    claimed.insert(ops.begin(), ops.end());
    attentions.push_back(std::move(*attention));
  });
  for (const Attention &attention : attentions)
    AttentionKernelBuilder(attention, precision).build();
}

} // namespace tessel::cuda

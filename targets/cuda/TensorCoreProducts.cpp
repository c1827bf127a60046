//===- TensorCoreProducts.cpp - Matrix products on tensor cores -----------===//
//
// A product C += A·B (batched or not, any operand layout the op's indexing
// maps describe) becomes one launch whose blocks each own a kBlockM x
// kBlockN tile of C. A convolution is such a product too (an implicit
// GEMM): its output pixels are the rows of C, its output channels the
// columns, and its filter taps and input channels the reduction; each
// element a block stages is read from the image where the indexing maps
// put it, so the image is never copied into a matrix.
//
// Per step of 64 bytes along the reduction (32 halves), the block's
// threads load both operands' tiles from global memory, round them to half
// precision and store them in shared memory; each of its eight warps then
// multiplies its 64 x 32 part with mma.sync (m16n8k16), keeping the sums
// in f32 registers. The next step's tiles are loaded into registers while
// the warps multiply the current ones, so global latency overlaps the math.
// Where neither operand needs rounding (an fp16 model's at fp16, or 8-bit
// integers laid out along k), both are read in place (no padded image, no
// packed weight) and both load as whole 16-byte vectors, the threads
// instead copy the next step's tiles straight into a second stage
// of shared tiles with cp.async, which spends neither registers nor stores
// on them, and a step needs one barrier instead of two.
//
// The fragment layouts are those of PTX's mma.m16n8k16 with A row-major
// and B column-major: a thread (lane = 4 * group + t) holds
//   A: rows group and group + 8, columns 2t, 2t + 1, 2t + 8, 2t + 9;
//   B: column group, rows 2t, 2t + 1, 2t + 8, 2t + 9;
//   C: rows group and group + 8, columns 2t and 2t + 1.
// Shared memory keeps an operand whose innermost dimension is k as
// [row][k] (A as [m][k], B as [n][k]): then each register of a fragment is
// a pair of neighbouring values of a row of 8 x 8 matrices, and one
// ldmatrix loads four such matrices per warp. An operand whose innermost
// dimension is its rows (a weight [k][n]) is kept as [k][row], so that its
// staging stores stay whole vectors, and ldmatrix transposes it.
//
// An INT8 model's products (8-bit operands, s8 or u8, summed in i32) take
// mma.sync m16n8k32 the same way, at every precision since they are exact:
// a step is 64 integers, and in bytes their fragments are those above (A:
// rows group and group + 8, bytes 4t .. 4t + 3 of each 16-byte half of k;
// B alike along its column; C the same, in i32). ldmatrix moves 16-bit
// elements, so it loads these unchanged but cannot transpose bytes: an
// integer operand is always kept as [row][k], stored element by element
// when it was loaded along its rows.
//
// An operand that its kernel copies just before the product (an image into
// a padded buffer, a weight the x86 layout packed into a plain one) is
// read where it is copied from (PaddedOperands.h, UnpackedOperands.h), and
// the copies go. For a packed weight, "innermost" above means the
// dimension its panels keep innermost.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/TensorCoreProducts.h"
#include "targets/cuda/LaunchBuilder.h"
#include "targets/cuda/Loops.h"
#include "targets/cuda/PaddedOperands.h"
#include "targets/cuda/ProductEpilogues.h"
#include "targets/cuda/UnpackedOperands.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

// The tile of C a block computes.
constexpr int64_t kBlockM = 128, kBlockN = 128;
// Each reduction step stages 64 bytes of every row of both operands (32
// halves, or 64 integers), and each mma reads 32 bytes of k (m16n8k16 of
// halves, m16n8k32 of integers): in bytes, the tiles, the fragments and
// the ldmatrix addresses are the same for either.
constexpr int64_t kStepBytes = 64, kMmaKBytes = 32;
// The block's warps as a 2 x 4 grid, each computing a 64 x 32 part of the
// tile: 4 x 4 mma tiles, 64 f32 accumulators per thread.
constexpr int64_t kWarpSize = 32, kWarpsM = 2, kWarpsN = 4;
constexpr int64_t kThreads = kWarpSize * kWarpsM * kWarpsN;
constexpr int64_t kWarpTileM = kBlockM / kWarpsM, kWarpTileN = kBlockN / kWarpsN;
constexpr int64_t kMmaM = 16, kMmaN = 8;
constexpr int64_t kTilesM = kWarpTileM / kMmaM, kTilesN = kWarpTileN / kMmaN;
// Each mma tile's 16 x 8 f32 sums are four per thread.
constexpr int64_t kAccumulators = kTilesM * kTilesN * 4;
// One ldmatrix loads two neighbouring B tiles.
static_assert(kTilesN % 2 == 0, "B tiles come in pairs");
// A shared tile's rows are padded by 16 bytes: the 80-byte ([row][k]) or
// 272-byte ([k][row] of halves) stride puts the eight rows an ldmatrix
// reads at once in distinct banks, and keeps every row 16-byte aligned.
constexpr int64_t kSharedPaddingBytes = 16;
// Staging loads 16 bytes at a time where the operand allows: 4 f32, 8
// halves of an operand already in the precision the mma reads, or 16
// integers.
constexpr int64_t kVectorBytes = 16;
// A product whose output tiles are too few to keep a GPU's SMs busy (108
// on an A100, 132 on an H100 or H200) and whose reduction is at least
// kMinimumSplitDepth steps splits it among up to kTargetBlocks / tiles
// blocks, each at least kMinimumSplitSteps steps deep (a convolution at
// batch 1: ResNet-50's 7 x 7 layers are 4 tiles of 4608 terms, 144 steps).
// The partial sums cost a second launch and a pass over them, which a
// shorter reduction would not win back (a judgement: no GPU has measured
// it yet).
constexpr int64_t kTargetBlocks = 128, kMinimumSplitDepth = 32, kMinimumSplitSteps = 8;
// Operands copied by cp.async have two stages of tiles, one that the warps
// multiply and one being filled: 37 to 40 KiB (a third would pass the 48
// KiB that a kernel may hold without asking the driver for more).
constexpr int64_t kCopyStages = 2;
// Products smaller than one warp's mma tiles in M or N, or than one mma in
// K, waste most of each mma; they stay on the FMA loops. So does a
// convolution whose filter has fewer terms than kMinimumFilterTerms.
constexpr int64_t kMinimumRows = 32, kMinimumColumns = 32, kMinimumFilterTerms = 32;

/// A product the tensor cores take: its loops by role and their extents.
/// `batch` holds every loop each block takes one value of: the batch loops,
/// and the M and N loops but the innermost (a MatMul of [1, 128, 768] by
/// [768, 768] has two M loops). `m`, `n` and `k` are the loops flattened
/// into the rows, the columns and the reduction, outermost first: one each
/// for a matrix product; for a convolution (an implicit GEMM) the batch and
/// output image loops are the rows, the output channels the columns, and
/// the filter and input channel loops the reduction.
struct Product {
  linalg::LinalgOp op;
  SmallVector<unsigned> batch, m, n, k;
  SmallVector<int64_t> extents;
  /// What the tensor cores read the operands as: the precision's f16 or
  /// bf16, or i8 for an integer product (which sums in i32).
  Type operandType;
  /// For an integer product, whether A and B are unsigned (u8, else s8).
  bool aUnsigned = false, bUnsigned = false;

  bool isInteger() const { return operandType.isInteger(8); }
  /// The bytes of one operand element on the tensor cores.
  int64_t operandBytes() const { return operandType.getIntOrFloatBitWidth() / 8; }
  /// The k of one mma, in elements.
  int64_t mmaK() const { return kMmaKBytes / operandBytes(); }

  /// The iterations of `loops` together.
  int64_t count(ArrayRef<unsigned> loops) const {
    int64_t total = 1;
    for (unsigned loop : loops)
      total *= extents[loop];
    return total;
  }
};

/// Whether `value` is block argument `argument`, or it extended to f32 (a
/// half-precision operand summed in f32).
bool isOperand(Value value, Value argument) {
  if (auto extended = value.getDefiningOp<arith::ExtFOp>())
    value = extended.getIn();
  return value == argument;
}

/// Whether `op`'s body is out + a * b (in either order), its operands
/// perhaps extended to f32 first.
bool isMultiplyAccumulate(linalg::LinalgOp op) {
  Block &body = op->getRegion(0).front();
  if (body.getOperations().size() > 5 || body.getNumArguments() != 3)
    return false;
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1), out = body.getArgument(2);
  auto isProduct = [&](Value value) {
    auto mul = value.getDefiningOp<arith::MulFOp>();
    return mul && ((isOperand(mul.getLhs(), a) && isOperand(mul.getRhs(), b)) ||
                   (isOperand(mul.getLhs(), b) && isOperand(mul.getRhs(), a)));
  };
  return (add.getLhs() == out && isProduct(add.getRhs())) ||
         (add.getRhs() == out && isProduct(add.getLhs()));
}

/// Whether `value` is the 8-bit `argument` widened to i32; sets
/// `isUnsigned` by how.
bool isWidenedOperand(Value value, Value argument, bool &isUnsigned) {
  if (auto extended = value.getDefiningOp<arith::ExtSIOp>()) {
    isUnsigned = false;
    return extended.getIn() == argument;
  }
  if (auto extended = value.getDefiningOp<arith::ExtUIOp>()) {
    isUnsigned = true;
    return extended.getIn() == argument;
  }
  return false;
}

/// Whether A and B are unsigned, when `op`'s body is out + a * b (in either
/// order) in i32, with a and b 8-bit integers widened (an INT8 model's
/// product, its zero points folded into the accumulator's start).
std::optional<std::pair<bool, bool>> matchIntegerMultiplyAccumulate(linalg::LinalgOp op) {
  Block &body = op->getRegion(0).front();
  if (body.getOperations().size() > 5 || body.getNumArguments() != 3)
    return std::nullopt;
  Value a = body.getArgument(0), b = body.getArgument(1), out = body.getArgument(2);
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddIOp>();
  if (!add || !a.getType().isInteger(8) || !b.getType().isInteger(8) ||
      !out.getType().isInteger(32))
    return std::nullopt;
  Value product = add.getLhs() == out ? add.getRhs() : add.getRhs() == out ? add.getLhs() : Value();
  auto mul = product ? product.getDefiningOp<arith::MulIOp>() : arith::MulIOp();
  bool aUnsigned = false, bUnsigned = false;
  if (mul && ((isWidenedOperand(mul.getLhs(), a, aUnsigned) &&
               isWidenedOperand(mul.getRhs(), b, bUnsigned)) ||
              (isWidenedOperand(mul.getLhs(), b, bUnsigned) &&
               isWidenedOperand(mul.getRhs(), a, aUnsigned))))
    return std::make_pair(aUnsigned, bUnsigned);
  return std::nullopt;
}

/// `op` as a matrix product (named or generic contraction) with one
/// reduction loop.
std::optional<Product> matchContraction(linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.size() != 1 ||
      dims->batch.size() + dims->m.size() + dims->n.size() + 1 != op.getNumLoops())
    return std::nullopt;
  Product product{op,
                  SmallVector<unsigned>(dims->batch.begin(), dims->batch.end()),
                  {dims->m.back()},
                  {dims->n.back()},
                  {dims->k.front()},
                  op.getStaticLoopRanges(),
                  /*operandType=*/Type(), // set by matchProduct
                  /*aUnsigned=*/false,
                  /*bUnsigned=*/false};
  product.batch.append(dims->m.begin(), dims->m.end() - 1);
  product.batch.append(dims->n.begin(), dims->n.end() - 1);
  return product;
}

/// `op` as an implicit GEMM: a convolution with input and output channels
/// (not depthwise), whose output pixels are the rows and whose filter
/// window and input channels are the reduction. The loops of each stay in
/// the op's order, so that a filter [kh][kw][c][f] is a plain [k][n]
/// matrix.
std::optional<Product> matchConvolution(linalg::LinalgOp op) {
  if (!linalg::isaConvolutionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ConvolutionDimensions> dims = linalg::inferConvolutionDims(op);
  if (failed(dims) || !dims->depth.empty() || dims->outputChannel.empty() ||
      dims->inputChannel.empty())
    return std::nullopt;
  auto sorted = [](ArrayRef<unsigned> first, ArrayRef<unsigned> second) {
    SmallVector<unsigned> loops(first);
    loops.append(second.begin(), second.end());
    llvm::sort(loops);
    return loops;
  };
  Product product{op,
                  {},
                  sorted(dims->batch, dims->outputImage),
                  SmallVector<unsigned>(dims->outputChannel.begin(), dims->outputChannel.end()),
                  sorted(dims->filterLoop, dims->inputChannel),
                  op.getStaticLoopRanges(),
                  /*operandType=*/Type(), // set by matchProduct
                  /*aUnsigned=*/false,
                  /*bUnsigned=*/false};
  if (product.m.size() + product.n.size() + product.k.size() != op.getNumLoops())
    return std::nullopt;
  // A filter of fewer terms than one step (3 x 3 over 3 channels: 27) does
  // too little work per output for the staging and the epilogue to pay;
  // such a kernel (SqueezeNet's first) also spilled on sm_90.
  if (product.count(product.k) < kMinimumFilterTerms)
    return std::nullopt;
  return product;
}

/// The product `op` is when the tensor cores take it at `precision`, on
/// tensors or buffers alike: an integer product of 8-bit operands summing
/// in i32 (exact, so at every precision); or, at fp16 or bf16, a float
/// product summing in f32 whose operands are f32, rounded as they are
/// staged, or already of the precision's type.
std::optional<Product> matchProduct(linalg::LinalgOp op, ProductPrecision precision) {
  if (op.hasDynamicShape() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  Type operandType;
  bool aUnsigned = false, bUnsigned = false;
  if (std::optional<std::pair<bool, bool>> signedness = matchIntegerMultiplyAccumulate(op)) {
    operandType = IntegerType::get(op.getContext(), 8);
    std::tie(aUnsigned, bUnsigned) = *signedness;
  } else {
    if (precision == ProductPrecision::F32 || !isMultiplyAccumulate(op))
      return std::nullopt;
    operandType = operandTypeOf(op.getContext(), precision);
    for (OpOperand &operand : op->getOpOperands()) {
      Type element = getElementTypeOrSelf(operand.get().getType());
      if (!element.isF32() && (op.isDpsInit(&operand) || element != operandType))
        return std::nullopt;
    }
  }
  std::optional<Product> product = matchContraction(op);
  if (!product)
    product = matchConvolution(op);
  if (!product)
    return std::nullopt;
  product->operandType = operandType;
  product->aUnsigned = aUnsigned;
  product->bUnsigned = bUnsigned;
  if (product->count(product->m) < kMinimumRows || product->count(product->n) < kMinimumColumns ||
      product->count(product->k) < product->mmaK() || product->count(product->batch) > 65535 ||
      llvm::divideCeil(product->count(product->m), kBlockM) > 65535)
    return std::nullopt;
  return product;
}

/// Builds the launch of one product. Values are named after the PTX
/// fragment layout in the file comment.
class ProductKernelBuilder : LaunchBuilder {
public:
  explicit ProductKernelBuilder(const Product &product)
      : LaunchBuilder(product.op), product(product), op(product.op),
        operandType(product.operandType), blockK(kStepBytes / product.operandBytes()) {}

  void build() {
    Value output = op.getDpsInits()[0];
    // The staging reads a padded image or an unpacked weight from where it
    // was copied. Those copies write neither C nor what fills it, so the
    // epilogue may take a fill that comes before them, unless they read C
    // (a packed weight never is C: nothing in the kernel writes it).
    std::optional<PaddedOperand> paddings[2];
    std::optional<UnpackedOperand> unpackings[2];
    SmallVector<Operation *> copyingOps;
    for (unsigned input : {0, 1}) {
      OpOperand *operand = op.getDpsInputOperand(input);
      if ((paddings[input] = findPadding(op, operand))) {
        if (rootBuffer(paddings[input]->source) != rootBuffer(output))
          copyingOps.append({paddings[input]->filling, paddings[input]->copying});
      } else if ((unpackings[input] = findUnpacking(op, operand))) {
        copyingOps.append({unpackings[input]->transposing, unpackings[input]->copying});
      }
    }
    epilogue = findEpilogue(op, copyingOps);
    int64_t rows = product.count(product.m), columns = product.count(product.n);
    int64_t batchCount = product.count(product.batch);
    chooseSplits();
    auto workgroup = gpu::AddressSpaceAttr::get(builder.getContext(),
                                                gpu::AddressSpace::Workgroup);
    // A tile is [row][k] when k is its operand's innermost dimension, else
    // [k][row] (for halves: see tiledByK), so that the staging stores are
    // whole vectors either way; each row is padded by kSharedPaddingBytes.
    // Each operand has a tile per stage.
    int64_t padding = kSharedPaddingBytes / product.operandBytes();
    auto tileType = [&](int64_t tileRows, bool byK) {
      int64_t stages = copiesAsync ? kCopyStages : 1;
      SmallVector<int64_t> shape = byK ? SmallVector<int64_t>{stages, tileRows, blockK + padding}
                                       : SmallVector<int64_t>{stages, blockK, tileRows + padding};
      return MemRefType::get(shape, operandType, MemRefLayoutAttrInterface(), workgroup);
    };
    bool aKFastest = isKFastest(op.getDpsInputOperand(0), unpackings[0], product.m);
    bool bKFastest = isKFastest(op.getDpsInputOperand(1), unpackings[1], product.n);
    auto staged = [&](unsigned input, ArrayRef<unsigned> rowLoops, int64_t tileRows,
                      bool kFastest) {
      Staged staged;
      staged.operand = op.getDpsInputOperand(input);
      staged.rowLoops = rowLoops;
      staged.tileRows = tileRows;
      staged.kFastest = kFastest;
      staged.tiledByK = kFastest || product.isInteger();
      staged.elementType = getElementTypeOrSelf(staged.operand->get().getType());
      staged.padding = paddings[input];
      staged.unpacking = unpackings[input];
      staged.width = vectorWidth(staged);
      return staged;
    };
    a = staged(0, product.m, kBlockM, aKFastest);
    b = staged(1, product.n, kBlockN, bKFastest);
    copiesAsync = copiesWhole(a) && copiesWhole(b);
    auto launch = gpu::LaunchOp::create(
        builder, loc, index(llvm::divideCeil(columns, kBlockN)),
        index(llvm::divideCeil(rows, kBlockM) * splits), index(batchCount), index(kThreads),
        index(1), index(1), /*dynamicSharedMemorySize=*/Value(), /*asyncTokenType=*/Type(),
        /*asyncDependencies=*/ValueRange(),
        /*workgroupAttributions=*/
        TypeRange{tileType(kBlockM, a.tiledByK), tileType(kBlockN, b.tiledByK)});
    enterLaunch(builder, launch);

    Value thread = launch.getThreadIds().x;
    Value warp = div(thread, kWarpSize);
    lane = rem(thread, kWarpSize);
    group = div(lane, 4);
    inGroup = rem(lane, 4);
    warpRow = mul(div(warp, kWarpsN), kWarpTileM);
    warpColumn = mul(rem(warp, kWarpsN), kWarpTileN);
    // The grid's y is the row tile, and with splits the split too: where
    // there is one row tile (as there mostly is when the reduction is
    // split), y is the split and the row tile a constant, so that the
    // loop, which has no register to spare, holds no more than without.
    Value rowTile = launch.getBlockIds().y;
    int64_t rowTiles = llvm::divideCeil(rows, kBlockM);
    if (splits > 1) {
      split = rowTiles == 1 ? rowTile : div(rowTile, rowTiles);
      rowTile = rowTiles == 1 ? index(0) : rem(rowTile, rowTiles);
    }
    blockRow = mul(rowTile, kBlockM);
    blockColumn = mul(launch.getBlockIds().x, kBlockN);
    loops.assign(op.getNumLoops(), index(0));
    assignBatchLoops(launch.getBlockIds().z);

    ArrayRef<BlockArgument> tiles = launch.getWorkgroupAttributions();
    a.blockBase = blockRow;
    a.tile = tiles[0];
    b.blockBase = blockColumn;
    b.tile = tiles[1];
    emitMainLoop(thread);
    if (splits > 1) {
      builder.setInsertionPointAfter(launch);
      emitSplitSums();
    }
    op->erase();
    eraseFused(epilogue, output);
    for (const Staged &operand : {a, b}) {
      if (operand.padding)
        erasePadding(*operand.padding);
      if (operand.unpacking)
        eraseUnpacking(*operand.unpacking);
    }
  }

private:
  /// One operand's staging: its rows are the loops `rowLoops` (m for A, n
  /// for B), its tile in shared memory `tile`.
  struct Staged {
    OpOperand *operand = nullptr;
    ArrayRef<unsigned> rowLoops;
    int64_t tileRows = 0;
    Value blockBase, tile;
    /// Whether k is the operand's innermost dimension: then neighbouring
    /// threads load neighbouring k and each stage's tile is [row][k], else
    /// they load neighbouring rows and it is [k][row], so that a warp's
    /// loads and stores are contiguous either way.
    bool kFastest = false;
    /// Whether each stage's tile is [row][k]. Integers are, whatever the operand's
    /// layout, since ldmatrix transposes 16-bit elements only: then each
    /// element loaded along the rows is stored on its own.
    bool tiledByK = false;
    /// Elements per load: the widest vector, 16 bytes at most, that the
    /// contiguous dimension's rows hold whole (aligned to its size), else 1.
    int64_t width = 1;
    /// The operand's own element type: f32, or already operandType.
    Type elementType;
    /// Where the operand is a padded copy of another buffer (an image),
    /// that buffer, which the staging reads instead.
    std::optional<PaddedOperand> padding;
    /// Where the operand is an unpacked copy of a weight the x86 layout
    /// packed, the packed weight, which the staging reads instead.
    std::optional<UnpackedOperand> unpacking;
  };

  int64_t extent(unsigned loop) const { return product.extents[loop]; }

  /// Sets `splits` and `stepsPerSplit`: how many blocks share each output
  /// tile's reduction, and how many steps each takes (the same for all, so
  /// that each block's loop has a constant trip count). A product with
  /// splits has a workspace of partial sums, [split][batch loops...][row]
  /// [column].
  void chooseSplits() {
    int64_t rows = product.count(product.m), columns = product.count(product.n);
    int64_t batchCount = product.count(product.batch);
    int64_t tiles =
        llvm::divideCeil(rows, kBlockM) * llvm::divideCeil(columns, kBlockN) * batchCount;
    int64_t steps = llvm::divideCeil(product.count(product.k), blockK);
    int64_t wanted =
        std::min({int64_t(llvm::divideCeil(kTargetBlocks, tiles)), steps / kMinimumSplitSteps,
                  int64_t(65535 / llvm::divideCeil(rows, kBlockM))});
    if (2 * tiles > kTargetBlocks || steps < kMinimumSplitDepth)
      return;
    while (wanted >= 2 && steps % wanted != 0)
      --wanted;
    if (wanted < 2)
      return;
    splits = wanted;
    stepsPerSplit = steps / splits;
    OpBuilder::InsertionGuard guard(builder);
    Block &entry = op->getParentOfType<func::FuncOp>().getBody().front();
    builder.setInsertionPointToStart(&entry);
    SmallVector<int64_t> shape{splits};
    for (unsigned loop : product.batch)
      shape.push_back(extent(loop));
    shape.append({rows, columns});
    workspace = memref::AllocOp::create(builder, loc, MemRefType::get(shape, accumulatorType()));
  }

  /// The workspace's indices of the partial sum at (row, column) of split
  /// `splitIndex`, in the batch the loops hold.
  SmallVector<Value> workspaceIndices(Value splitIndex, Value row, Value column) {
    SmallVector<Value> indices{splitIndex};
    for (unsigned loop : product.batch)
      indices.push_back(loops[loop]);
    indices.append({row, column});
    return indices;
  }

  /// Sets the batch loops to the values whose flattened index is `flat`.
  void assignBatchLoops(Value flat) {
    for (unsigned loop : llvm::reverse(product.batch)) {
      loops[loop] = rem(flat, extent(loop));
      flat = div(flat, extent(loop));
    }
  }

  /// The dimension of `operand` whose neighbouring elements are
  /// neighbours in the memory the staging reads: its innermost, or the one
  /// the packed weight it is unpacked from keeps innermost.
  unsigned contiguousDim(OpOperand *operand, const std::optional<UnpackedOperand> &unpacking) {
    return unpacking ? unpacking->contiguousDim
                     : cast<MemRefType>(operand->get().getType()).getRank() - 1;
  }

  /// Whether the operand's contiguous dimension follows the innermost
  /// reduction loop and not its innermost row loop (an image's columns
  /// follow both: its rows are the faster).
  bool isKFastest(OpOperand *operand, const std::optional<UnpackedOperand> &unpacking,
                  ArrayRef<unsigned> rowLoops) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    if (map.getNumResults() == 0)
      return false;
    AffineExpr contiguous = map.getResult(contiguousDim(operand, unpacking));
    return contiguous.isFunctionOfDim(product.k.back()) &&
           !contiguous.isFunctionOfDim(rowLoops.back());
  }

  /// The elements of the widest vector, 16 bytes at most, when `staged`'s
  /// operand is a plain row-major buffer whose contiguous dimension is the
  /// innermost loop of k or of the rows, in whole vectors (and contiguous
  /// in the packed weight it is unpacked from), else 1. A vector then never
  /// crosses that loop's end, since the flattened index it starts at is a
  /// multiple of its width.
  int64_t vectorWidth(const Staged &staged) {
    AffineMap map = op.getMatchingIndexingMap(staged.operand);
    auto type = cast<MemRefType>(staged.operand->get().getType());
    unsigned dim = contiguousDim(staged.operand, staged.unpacking);
    auto contiguous = dyn_cast<AffineDimExpr>(map.getResult(dim));
    unsigned loop = staged.kFastest ? product.k.back() : staged.rowLoops.back();
    if (!type.getLayout().isIdentity() || !contiguous || contiguous.getPosition() != loop ||
        (staged.padding && !innermostUnpadded(*staged.padding)))
      return 1;
    int64_t width = kVectorBytes / (staged.elementType.getIntOrFloatBitWidth() / 8);
    while (width > 1 && (type.getShape()[dim] % width != 0 || extent(loop) % width != 0 ||
                         (staged.unpacking && !packedVectorsContiguous(*staged.unpacking, width))))
      width /= 2;
    return width;
  }

  /// Sets the loops `group` to the values whose flattened index is `flat`.
  void assignLoops(ArrayRef<unsigned> group, Value flat) {
    for (unsigned loop : llvm::reverse(group.drop_front())) {
      loops[loop] = extent(loop) == 1 ? index(0) : rem(flat, extent(loop));
      flat = extent(loop) == 1 ? flat : div(flat, extent(loop));
    }
    loops[group.front()] = flat;
  }

  /// The element of `operand` at the loop values `loops`.
  SmallVector<Value> indicesOf(OpOperand *operand) {
    return indicesAt(builder, loc, op.getMatchingIndexingMap(operand), loops);
  }

  /// x && y, where a null condition holds always.
  Value both(Value x, Value y) {
    if (!x || !y)
      return x ? x : y;
    return arith::AndIOp::create(builder, loc, x, y);
  }

  /// The (row, k) of the first element of the `i`th vector a thread
  /// stages; the vector runs along k or along the rows (kFastest).
  std::pair<Value, Value> stagedVector(const Staged &staged, Value thread, int64_t i) {
    Value vector = add(thread, i * kThreads);
    if (staged.kFastest) {
      int64_t perRow = blockK / staged.width;
      return {div(vector, perRow), mul(rem(vector, perRow), staged.width)};
    }
    int64_t perK = staged.tileRows / staged.width;
    return {mul(rem(vector, perK), staged.width), div(vector, perK)};
  }

  /// min(x, bound - width): the last whole vector's start.
  Value clampBelow(Value x, int64_t bound, int64_t width = 1) { return minimum(x, bound - width); }

  /// Where a vector a thread stages lies: its (row, k) in the tile, and its
  /// k in the reduction.
  struct VectorPlace {
    Value tileRow, tileK, k;
  };

  /// Points the loops at the first element of the `i`th vector this
  /// thread stages at reduction offset `kBase`, and returns where it lies.
  /// Every vector is read inside the operand, without
  /// a branch: a row past the operand's edge reads the last rows instead,
  /// which only reach outputs that are never stored, and a k past the
  /// reduction reads the last k, whose values the staging replaces by zeros.
  /// So the step after the last may be staged too: its tiles are never
  /// multiplied.
  VectorPlace pointAtVector(const Staged &staged, Value thread, Value kBase, int64_t i) {
    int64_t rows = product.count(staged.rowLoops), depth = product.count(product.k);
    auto [tileRow, tileK] = stagedVector(staged, thread, i);
    Value row = add(staged.blockBase, tileRow);
    Value k = add(kBase, tileK);
    int64_t rowWidth = staged.kFastest ? 1 : staged.width;
    int64_t kWidth = staged.kFastest ? staged.width : 1;
    assignLoops(staged.rowLoops, rows % staged.tileRows ? clampBelow(row, rows, rowWidth) : row);
    assignLoops(product.k, clampBelow(k, depth, kWidth));
    return {tileRow, tileK, k};
  }

  /// Whether the vector at reduction offset `k` lies inside the reduction;
  /// null where every step's does.
  Value insideReduction(Value k) {
    int64_t depth = product.count(product.k);
    return depth % blockK ? below(k, depth) : Value();
  }

  /// The vectors this thread stages of each step's tile.
  int64_t vectorsPerThread(const Staged &staged) {
    return staged.tileRows * blockK / (kThreads * staged.width);
  }

  /// Loads this thread's share of `staged`'s tile at reduction offset
  /// `kBase` (pointAtVector), vector by vector, rounded to the operand type
  /// (unless it has that type already), zeros past the reduction.
  void loadTile(const Staged &staged, Value thread, Value kBase, SmallVector<Value> &values) {
    int64_t width = staged.width;
    auto loaded = VectorType::get({width}, staged.elementType);
    auto rounded = VectorType::get({width}, operandType);
    Value zeros = arith::ConstantOp::create(builder, loc, builder.getZeroAttr(rounded));
    for (int64_t i = 0; i < vectorsPerThread(staged); ++i) {
      Value k = pointAtVector(staged, thread, kBase, i).k;
      llvm::Align alignment(staged.elementType.getIntOrFloatBitWidth() / 8 * width);
      Value value = loadElements(staged, loaded, alignment);
      if (staged.elementType != operandType)
        value = arith::TruncFOp::create(builder, loc, rounded, value);
      if (Value inside = insideReduction(k))
        value = arith::SelectOp::create(builder, loc, inside, value, zeros);
      values.push_back(value);
    }
  }

  /// Issues the cp.async copies of this thread's share of `staged`'s tile
  /// at reduction offset `kBase` (pointAtVector) into stage `stage`'s tile;
  /// appends their tokens to `copies`. A vector past the reduction copies
  /// no bytes, so that cp.async fills it with zeros.
  void copyTile(const Staged &staged, Value thread, Value kBase, Value stage,
                SmallVector<Value> &copies) {
    auto token = nvgpu::DeviceAsyncTokenType::get(builder.getContext());
    for (int64_t i = 0; i < vectorsPerThread(staged); ++i) {
      auto [tileRow, tileK, k] = pointAtVector(staged, thread, kBase, i);
      Value sourceElements;
      if (Value inside = insideReduction(k))
        sourceElements =
            arith::SelectOp::create(builder, loc, inside, index(staged.width), index(0));
      copies.push_back(nvgpu::DeviceAsyncCopyOp::create(
          builder, loc, token, staged.tile, tileIndices(staged, stage, tileRow, tileK),
          staged.operand->get(), indicesOf(staged.operand), builder.getIndexAttr(staged.width),
          sourceElements, /*bypassL1=*/builder.getUnitAttr()));
    }
  }

  /// The indices of (row, k) in stage `stage`'s tile of `staged`.
  SmallVector<Value> tileIndices(const Staged &staged, Value stage, Value row, Value k) {
    return staged.tiledByK ? SmallVector<Value>{stage, row, k} : SmallVector<Value>{stage, k, row};
  }

  /// The `vectorType` at the loop values `loops` of `staged`'s operand,
  /// read where the operand was copied from if it is a copy.
  Value loadElements(const Staged &staged, VectorType vectorType, llvm::Align alignment) {
    SmallVector<Value> indices = indicesOf(staged.operand);
    if (staged.padding)
      return loadPadded(builder, loc, *staged.padding, vectorType, indices, alignment);
    if (staged.unpacking)
      return loadUnpacked(builder, loc, *staged.unpacking, vectorType, indices, alignment);
    return vector::LoadOp::create(builder, loc, vectorType, staged.operand->get(), indices,
                                  /*nontemporal=*/false, alignment);
  }

  /// Stores what loadTile loaded into stage `stage`'s tile, [row][k] or
  /// [k][row]: a vector that runs along the tile's rows as a whole, one that
  /// runs across them (integers loaded along the rows) element by element.
  void storeTile(const Staged &staged, Value thread, Value stage, ValueRange values) {
    for (auto [i, value] : llvm::enumerate(values)) {
      auto [row, k] = stagedVector(staged, thread, i);
      if (staged.kFastest || !staged.tiledByK) {
        vector::StoreOp::create(
            builder, loc, value, staged.tile, tileIndices(staged, stage, row, k),
            /*nontemporal=*/false, llvm::Align(product.operandBytes() * staged.width));
        continue;
      }
      for (int64_t e = 0; e < staged.width; ++e) {
        Value element = vector::ExtractOp::create(builder, loc, value, ArrayRef<int64_t>{e});
        memref::StoreOp::create(builder, loc, element, staged.tile,
                                tileIndices(staged, stage, add(row, e), k));
      }
    }
  }

  /// Whether `staged`'s tile can go from global to shared memory as it
  /// lies, 16 bytes at a time with cp.async: the operand has the operand
  /// type already, is read in place (not through a padding or unpacking),
  /// and each of its vectors is one run of a tile row.
  bool copiesWhole(const Staged &staged) {
    return staged.elementType == operandType && !staged.padding && !staged.unpacking &&
           staged.width * product.operandBytes() == kVectorBytes &&
           (staged.kFastest || !staged.tiledByK);
  }

  /// The 2-D tile of stage `stage` of a staged tile.
  Value stageTile(Value tile, Value stage) {
    auto type = cast<MemRefType>(tile.getType());
    SmallVector<OpFoldResult> offsets{stage, builder.getIndexAttr(0), builder.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{builder.getIndexAttr(1),
                                    builder.getIndexAttr(type.getDimSize(1)),
                                    builder.getIndexAttr(type.getDimSize(2))};
    SmallVector<OpFoldResult> strides(3, builder.getIndexAttr(1));
    auto stageType = memref::SubViewOp::inferRankReducedResultType(type.getShape().drop_front(),
                                                                   type, offsets, sizes, strides);
    return memref::SubViewOp::create(builder, loc, cast<MemRefType>(stageType), tile, offsets,
                                     sizes, strides);
  }

  /// The warp's mma tiles for one mma's slice of k of the shared tiles;
  /// each tile's accumulators are four consecutive values of
  /// `accumulators`.
  void multiplySlice(Value aTile, Value bTile, int64_t kOffset, SmallVector<Value> &accumulators) {
    WarpFragments fragments(builder, loc, operandType, lane);
    SmallVector<SmallVector<Value, 4>> aFragments;
    SmallVector<SmallVector<Value, 2>> bFragments;
    for (int64_t i = 0; i < kTilesM; ++i)
      aFragments.push_back(
          fragments.loadA(aTile, add(warpRow, i * kMmaM), index(kOffset), a.tiledByK));
    for (int64_t j = 0; j < kTilesN; j += 2) {
      auto [first, second] =
          fragments.loadBPair(bTile, add(warpColumn, j * kMmaN), index(kOffset), b.tiledByK);
      bFragments.push_back(first);
      bFragments.push_back(second);
    }
    for (int64_t i = 0; i < kTilesM; ++i)
      for (int64_t j = 0; j < kTilesN; ++j)
        fragments.multiply(aFragments[i], bFragments[j],
                           MutableArrayRef<Value>(&accumulators[(i * kTilesN + j) * 4], 4),
                           product.aUnsigned, product.bUnsigned);
  }

  /// What the mma sums in: i32 for an integer product, else f32.
  Type accumulatorType() {
    return product.isInteger() ? Type(builder.getI32Type()) : Type(builder.getF32Type());
  }

  void emitMainLoop(Value thread) {
    // The block's share of the reduction: all of it, or its split's steps.
    int64_t depth = product.count(product.k);
    Value kBegin = index(0), kEnd = index(depth);
    if (splits > 1) {
      // The last split's last step may be partial, as the whole reduction's
      // is: its k past the reduction are zeros.
      kBegin = mul(split, stepsPerSplit * blockK);
      kEnd = add(kBegin, stepsPerSplit * blockK);
    }
    scf::ForOp loop =
        copiesAsync ? emitCopyingLoop(thread, kBegin, kEnd) : emitStagingLoop(thread, kBegin, kEnd);
    if (splits > 1)
      // The split again, from the loop's bound, for the epilogue: with the
      // value computed from the block index before the loop instead,
      // ptxas spilled 4 bytes in ResNet-50's 3 x 3 convolutions at sm_80,
      // whose register allocation is that close.
      split = arith::SubIOp::create(builder, loc, div(kEnd, stepsPerSplit * blockK), index(1));
    emitEpilogue(loop.getResults().take_front(kAccumulators));
  }

  /// The reduction's loop when an operand is rounded on its way to shared
  /// memory: each thread loads the next step's tiles into registers while
  /// the warps multiply the current ones, and stores them after a barrier.
  scf::ForOp emitStagingLoop(Value thread, Value kBegin, Value kEnd) {
    Value stage = index(0);
    SmallVector<Value> staged;
    loadTile(a, thread, kBegin, staged);
    size_t aCount = staged.size();
    loadTile(b, thread, kBegin, staged);

    SmallVector<Value> initial(kAccumulators, zeroSum());
    initial.append(staged);
    auto loop = scf::ForOp::create(builder, loc, kBegin, kEnd, index(blockK), initial);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(loop.getBody());
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> accumulators(carried.take_front(kAccumulators));
    ValueRange current = carried.drop_front(kAccumulators);
    storeTile(a, thread, stage, current.take_front(aCount));
    storeTile(b, thread, stage, current.drop_front(aCount));
    gpu::BarrierOp::create(builder, loc);

    // The next step's tiles, loaded while the warps multiply these.
    SmallVector<Value> next;
    Value nextK = add(loop.getInductionVar(), blockK);
    loadTile(a, thread, nextK, next);
    loadTile(b, thread, nextK, next);
    multiplyStep(stage, accumulators);
    gpu::BarrierOp::create(builder, loc);
    SmallVector<Value> yielded(accumulators);
    yielded.append(next);
    scf::YieldOp::create(builder, loc, yielded);
    return loop;
  }

  /// The reduction's loop when both operands are copied by cp.async: the
  /// copies of the next step go to the other stage's tiles while the warps
  /// multiply this step's, and are waited for before the barrier that ends
  /// the step, its only one (the copies into a stage's tiles start after
  /// the barrier that ends the last step that read them).
  scf::ForOp emitCopyingLoop(Value thread, Value kBegin, Value kEnd) {
    waitForCopies(copyStep(thread, kBegin, index(0)));
    SmallVector<Value> initial(kAccumulators, zeroSum());
    initial.push_back(index(0)); // the stage the step multiplies
    auto loop = scf::ForOp::create(builder, loc, kBegin, kEnd, index(blockK), initial);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(loop.getBody());
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> accumulators(carried.take_front(kAccumulators));
    Value stage = carried.back();
    Value nextStage = rem(add(stage, 1), kCopyStages);
    Value copies = copyStep(thread, add(loop.getInductionVar(), blockK), nextStage);
    multiplyStep(stage, accumulators);
    waitForCopies(copies);
    SmallVector<Value> yielded(accumulators);
    yielded.push_back(nextStage);
    scf::YieldOp::create(builder, loc, yielded);
    return loop;
  }

  /// The accumulators' first value.
  Value zeroSum() {
    return arith::ConstantOp::create(builder, loc, builder.getZeroAttr(accumulatorType()));
  }

  /// The warps' mma tiles for one step, from stage `stage`'s tiles.
  void multiplyStep(Value stage, SmallVector<Value> &accumulators) {
    Value aTile = stageTile(a.tile, stage), bTile = stageTile(b.tile, stage);
    for (int64_t kOffset = 0; kOffset < blockK; kOffset += product.mmaK())
      multiplySlice(aTile, bTile, kOffset, accumulators);
  }

  /// Issues the copies of both operands' tiles at reduction offset `k`
  /// into stage `stage`'s tiles, as one group, which it returns.
  Value copyStep(Value thread, Value k, Value stage) {
    SmallVector<Value> copies;
    copyTile(a, thread, k, stage, copies);
    copyTile(b, thread, k, stage, copies);
    auto token = nvgpu::DeviceAsyncTokenType::get(builder.getContext());
    return nvgpu::DeviceAsyncCreateGroupOp::create(builder, loc, token, copies);
  }

  /// Waits for this thread's group of copies `copies`, then at a barrier
  /// for every thread's.
  void waitForCopies(Value copies) {
    nvgpu::DeviceAsyncWaitOp::create(builder, loc, copies, builder.getI32IntegerAttr(0));
    gpu::BarrierOp::create(builder, loc);
  }

  /// The second launch of a product with splits, a thread per output: its
  /// splits' partial sums added up, then the epilogue's store.
  void emitSplitSums() {
    int64_t rows = product.count(product.m), columns = product.count(product.n);
    int64_t outputs = product.count(product.batch) * rows * columns;
    constexpr int64_t kSumThreads = 256;
    auto launch = gpu::LaunchOp::create(builder, loc, index(llvm::divideCeil(outputs, kSumThreads)),
                                        index(1), index(1), index(kSumThreads), index(1), index(1));
    enterLaunch(builder, launch);
    Value flat = add(mul(launch.getBlockIds().x, kSumThreads), launch.getThreadIds().x);
    onlyIf(below(flat, outputs), [&] {
      Value column = rem(flat, columns), row = rem(div(flat, columns), rows);
      assignBatchLoops(div(div(flat, columns), rows));
      Value first =
          memref::LoadOp::create(builder, loc, workspace, workspaceIndices(index(0), row, column));
      auto sum = scf::ForOp::create(builder, loc, index(1), index(splits), index(1), first);
      {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointToStart(sum.getBody());
        Value partial = memref::LoadOp::create(
            builder, loc, workspace, workspaceIndices(sum.getInductionVar(), row, column));
        scf::YieldOp::create(builder, loc, addSums(sum.getRegionIterArgs()[0], partial));
      }
      storeOutput(row, column, sum.getResult(0));
    });
  }

  /// x + y in the accumulator type.
  Value addSums(Value x, Value y) {
    return product.isInteger() ? arith::AddIOp::create(builder, loc, x, y).getResult()
                               : arith::AddFOp::create(builder, loc, x, y).getResult();
  }

  /// C += `sum` at (row, column) of the batch the loops hold; where the
  /// epilogue took over the op that fills C, its value instead of C's, and
  /// where it took over C's consumer, the consumer's value stored in its
  /// output instead of C.
  void storeOutput(Value row, Value column, Value sum) {
    OpOperand *output = op.getDpsInitOperand(0);
    for (unsigned loop : product.k)
      loops[loop] = index(0);
    assignLoops(product.m, row);
    assignLoops(product.n, column);
    SmallVector<Value> indices = indicesOf(output);
    Value old = epilogue.init ? emitInitValue(builder, loc, epilogue.init, indices)
                              : memref::LoadOp::create(builder, loc, output->get(), indices);
    Value updated = addSums(old, sum);
    if (epilogue.consumer)
      emitConsumer(builder, loc, epilogue, indices, updated);
    else
      memref::StoreOp::create(builder, loc, updated, output->get(), indices);
  }

  /// The accumulators, element by element, inside C: added to C by
  /// storeOutput, or with splits stored as the block's partial sums.
  void emitEpilogue(ValueRange accumulators) {
    int64_t rows = product.count(product.m), columns = product.count(product.n);
    for (int64_t i = 0; i < kTilesM; ++i)
      for (int64_t j = 0; j < kTilesN; ++j)
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t c = 0; c < 2; ++c) {
            Value row = add(add(add(blockRow, warpRow), i * kMmaM + half * 8), group);
            Value column =
                add(add(add(blockColumn, warpColumn), j * kMmaN + c), mul(inGroup, 2));
            Value sum = accumulators[(i * kTilesN + j) * 4 + half * 2 + c];
            Value inside = both(rows % kBlockM ? below(row, rows) : Value(),
                                columns % kBlockN ? below(column, columns) : Value());
            auto store = [&] {
              if (splits > 1)
                memref::StoreOp::create(builder, loc, sum, workspace,
                                        workspaceIndices(split, row, column));
              else
                storeOutput(row, column, sum);
            };
            onlyIf(inside, store);
          }
  }

  const Product &product;
  linalg::LinalgOp op;
  Type operandType;
  /// The reduction step, in elements (kStepBytes).
  int64_t blockK;
  Staged a, b;
  /// Whether both operands go to shared memory by cp.async (copiesWhole).
  bool copiesAsync = false;
  ProductEpilogue epilogue;
  /// The value of every loop of the op where the kernel reads or writes.
  SmallVector<Value> loops;
  /// Blocks per output tile, each summing `stepsPerSplit` steps of the
  /// reduction into `workspace` (chooseSplits); the block's split.
  int64_t splits = 1, stepsPerSplit = 0;
  Value workspace, split;
  Value lane, group, inGroup, warpRow, warpColumn, blockRow, blockColumn;
};

} // namespace

WarpFragments::WarpFragments(OpBuilder &builder, Location loc, Type operandType, Value lane)
    : builder(builder), loc(loc), operandType(operandType) {
  auto index = [&](int64_t value) { return arith::ConstantIndexOp::create(builder, loc, value); };
  Value matrix = arith::DivUIOp::create(builder, loc, lane, index(8));
  rowInMatrix = arith::RemUIOp::create(builder, loc, lane, index(8));
  matrixIsOdd = arith::MulIOp::create(
      builder, loc, arith::RemUIOp::create(builder, loc, matrix, index(2)), index(8));
  matrixHalf = arith::MulIOp::create(
      builder, loc, arith::DivUIOp::create(builder, loc, matrix, index(2)), index(8));
}

int64_t WarpFragments::operandBytes() const { return operandType.getIntOrFloatBitWidth() / 8; }

Value WarpFragments::add(Value x, Value y) { return arith::AddIOp::create(builder, loc, x, y); }

Value WarpFragments::inElements(Value eightRowsOrBytes) {
  // Sixteen bytes of a row of matrices are 8 halves or 16 integers.
  if (operandBytes() == 2)
    return eightRowsOrBytes;
  return arith::MulIOp::create(builder, loc, eightRowsOrBytes,
                               arith::ConstantIndexOp::create(builder, loc, 2 / operandBytes()));
}

SmallVector<Value, 4> WarpFragments::loadMatrices(Value tile, Value row, Value column,
                                                  bool transpose) {
  auto registers = VectorType::get({4, 4 / operandBytes()}, operandType);
  Value matrices = nvgpu::LdMatrixOp::create(builder, loc, registers, tile, ValueRange{row, column},
                                             transpose, /*numTiles=*/4);
  SmallVector<Value, 4> fragment;
  for (int64_t i = 0; i < 4; ++i) {
    Value pair = vector::ExtractOp::create(builder, loc, matrices, ArrayRef<int64_t>{i});
    if (operandType.isF16()) {
      fragment.push_back(pair);
      continue;
    }
    // mma.sync takes bf16x2 and four integers as 32 bits.
    auto word = VectorType::get({1}, builder.getI32Type());
    Value bits = vector::BitCastOp::create(builder, loc, word, pair);
    fragment.push_back(vector::ExtractOp::create(builder, loc, bits, ArrayRef<int64_t>{0}));
  }
  return fragment;
}

SmallVector<Value, 4> WarpFragments::loadA(Value tile, Value row, Value k, bool byK) {
  // In bytes, an A tile is the matrices (m 0-7, k 0-15), (8-15, 0-15),
  // (0-7, 16-31) and (8-15, 16-31): the mma's a0..a3. A [k][row] tile (of
  // halves) holds them transposed, which ldmatrix undoes.
  Value rows = matrixIsOdd, columns = inElements(matrixHalf);
  if (byK)
    return loadMatrices(tile, add(add(row, rowInMatrix), rows), add(columns, k), false);
  return loadMatrices(tile, add(add(columns, rowInMatrix), k), add(row, rows), true);
}

std::pair<SmallVector<Value, 2>, SmallVector<Value, 2>>
WarpFragments::loadBPair(Value tile, Value column, Value k, bool byK) {
  // Two neighbouring B tiles are (n 0-7, k 0-15), (0-7, 16-31), (8-15,
  // 0-15) and (8-15, 16-31), in bytes: b0, b1 of each.
  Value rows = matrixHalf, columns = inElements(matrixIsOdd);
  SmallVector<Value, 4> matrices =
      byK ? loadMatrices(tile, add(add(column, rowInMatrix), rows), add(columns, k), false)
          : loadMatrices(tile, add(add(columns, rowInMatrix), k), add(column, rows), true);
  return {{matrices[0], matrices[1]}, {matrices[2], matrices[3]}};
}

void WarpFragments::multiply(ArrayRef<Value> a, ArrayRef<Value> b, MutableArrayRef<Value> sums,
                             bool aUnsigned, bool bUnsigned) {
  bool integers = operandType.isInteger(8);
  Type sumType = integers ? Type(builder.getI32Type()) : Type(builder.getF32Type());
  auto resultType =
      LLVM::LLVMStructType::getLiteral(builder.getContext(), {sumType, sumType, sumType, sumType});
  std::array<NVVM::MMATypes, 2> types;
  // An integer product wraps, as the linalg op's i32 sums do.
  std::optional<NVVM::MMAIntOverflow> overflow;
  if (integers) {
    auto integer = [](bool isUnsigned) {
      return isUnsigned ? NVVM::MMATypes::u8 : NVVM::MMATypes::s8;
    };
    types = {integer(aUnsigned), integer(bUnsigned)};
    overflow = NVVM::MMAIntOverflow::wrapped;
  } else {
    NVVM::MMATypes half = operandType.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    types = {half, half};
  }
  auto mma = NVVM::MmaOp::create(
      builder, loc, resultType, a, b, sums,
      ArrayRef<int64_t>{kMmaM, kMmaN, kMmaKBytes / operandBytes()}, /*b1Op=*/std::nullopt, overflow,
      types, std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
  for (int64_t e = 0; e < 4; ++e)
    sums[e] = LLVM::ExtractValueOp::create(builder, loc, mma.getRes(), e);
}

/// The operand type `precision` gives the tensor cores.
Type operandTypeOf(MLIRContext *context, ProductPrecision precision) {
  return precision == ProductPrecision::F16 ? Type(Float16Type::get(context))
                                            : Type(BFloat16Type::get(context));
}

bool takesTensorCores(Operation *op, ProductPrecision precision) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && matchProduct(linalgOp, precision).has_value();
}

LogicalResult launchProductsOnTensorCores(ModuleOp kernels, ProductPrecision precision) {
  kernels.getContext()
      ->loadDialect<affine::AffineDialect, gpu::GPUDialect, LLVM::LLVMDialect, NVVM::NVVMDialect,
                    nvgpu::NVGPUDialect, vector::VectorDialect>();
  std::vector<Product> products;
  kernels.walk([&](linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics() || !isa<func::FuncOp>(op->getParentOp()))
      return;
    if (std::optional<Product> product = matchProduct(op, precision))
      products.push_back(std::move(*product));
  });
  for (const Product &product : products)
    ProductKernelBuilder(product).build();
  return success();
}

} // namespace tessel::cuda

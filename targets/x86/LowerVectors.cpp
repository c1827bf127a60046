//===- LowerVectors.cpp - Vector ops down to what LLVM maps well ----------===//

#include "targets/x86/ByteLookup.h"
#include "targets/x86/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorTransforms.h"
#include "mlir/Dialect/Vector/Utils/VectorUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86LOWERVECTORSPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// Whether `transpose` swaps the two axes of a block of 32-bit elements.
bool isTransposeOf32BitBlock(vector::TransposeOp transpose) {
  return succeeded(vector::isTranspose2DSlice(transpose)) &&
         transpose.getSourceVectorType().getElementTypeBitWidth() == 32;
}

struct TesselX86LowerVectorsPass : impl::TesselX86LowerVectorsPassBase<TesselX86LowerVectorsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    MLIRContext *context = &getContext();
    // Accumulators read and written in every k step move out of the loop.
    linalg::hoistRedundantVectorTransfers(function);

    auto apply = [&](auto populate) {
      RewritePatternSet patterns(context);
      populate(patterns);
      return applyPatternsGreedily(function, std::move(patterns));
    };
    if (failed(apply([&](RewritePatternSet &patterns) {
          // With k = 1 a contraction is an elementwise multiply-add; the
          // outer-product lowering scalarized row-vector (m = 1) blocks and
          // was 9x slower on a 256x512x512 matmul.
          vector::populateVectorContractLoweringPatterns(
              patterns, vector::VectorContractLowering::ParallelArith);
          vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
          vector::populateVectorMultiReductionLoweringPatterns(
              patterns, vector::VectorMultiReductionLowering::InnerParallel);
          vector::populateVectorBroadcastLoweringPatterns(patterns);
          vector::populateVectorShapeCastLoweringPatterns(patterns);
          vector::populateVectorMaskOpLoweringPatterns(patterns);
          if (bytePermutes)
            populateByteLookupPatterns(patterns);
        })))
      return signalPassFailure();
    // A block transpose of 32-bit elements becomes shuffles: a 16 x 16 one
    // four rounds of in-register shuffles (unpacks, then 128-bit lane
    // permutes), others one flat shuffle, rather than an extract and insert
    // per element. NCHW <-> NHWC transposes of a 64 x 56 x 56 image ran in
    // 0.08 and 0.10 ms instead of 0.13 and 0.15. Narrower elements stay
    // element-wise: as one flat shuffle, the 16 x 3 blocks of an INT8
    // model's input image ran slower.
    SmallVector<Operation *> blockTransposes;
    function.walk([&](vector::TransposeOp transpose) {
      if (isTransposeOf32BitBlock(transpose))
        blockTransposes.push_back(transpose);
    });
    RewritePatternSet shuffles(context);
    vector::populateVectorTransposeLoweringPatterns(shuffles,
                                                    vector::VectorTransposeLowering::Shuffle16x16);
    if (!blockTransposes.empty() &&
        failed(applyOpPatternsGreedily(blockTransposes, std::move(shuffles))))
      return signalPassFailure();
    if (failed(apply([&](RewritePatternSet &patterns) {
          vector::populateVectorTransposeLoweringPatterns(patterns,
                                                          vector::VectorTransposeLowering::EltWise);
          vector::populateVectorShapeCastLoweringPatterns(patterns);
        })))
      return signalPassFailure();
    if (failed(apply([&](RewritePatternSet &patterns) {
          vector::populateVectorOuterProductLoweringPatterns(patterns);
          vector::populateVectorTransferLoweringPatterns(patterns,
                                                         /*maxTransferRank=*/1);
          vector::populateVectorShapeCastLoweringPatterns(patterns);
        })))
      return signalPassFailure();
  }
};

} // namespace
} // namespace tessel::x86

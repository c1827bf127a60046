//===- LoweringConfig.h - Per-op code generation choices --------*- C++ -*-===//
//
// What code generation decides for one register-blocked op (a contraction or
// an NHWC window op) is decided once, by tessel-x86-choose-lowering, and
// recorded on the op as a dictionary attribute that every later pass reads
// (IREE's lowering_config is the model):
//
//   tessel.lowering_config = {register_block = array<i64: 1, 4, 8, 16>,
//                             dot_product = "pmaddubsw"}
//
// PackWeights stores the op's constant weight in panels as wide as the
// block's last axis, TileAndFuse gives each workgroup whole blocks, and the
// blocking emitters compute the blocks. Because the attribute is the only
// place the choice lives, a lit test (or a tuner) can pin it by writing the
// attribute into its input; tiling copies it onto every tile of the op.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_LOWERINGCONFIG_H
#define TESSEL_TARGETS_X86_LOWERINGCONFIG_H

#include "targets/x86/DotProduct.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace tessel::x86 {

inline constexpr llvm::StringLiteral kLoweringConfigAttr = "tessel.lowering_config";

struct LoweringConfig {
  /// Per axis of the op's result, the extent of one register block: rows
  /// and columns of a contraction (1 along its batch axes), (1, pixel rows,
  /// pixel columns, channels) of a window op. The last axis, columns or
  /// channels, is a whole number of vectors, and its extent is the width of
  /// the panels the op's packed weight is stored in.
  llvm::SmallVector<int64_t> registerBlock;
  /// The dot-product instruction of an INT8 or bf16 op's blocks.
  std::optional<DotProductKind> dotProduct;

  int64_t panelWidth() const { return registerBlock.back(); }
};

/// The config recorded on `op`, if it has a well-formed one.
std::optional<LoweringConfig> loweringConfigOf(mlir::Operation *op);

void setLoweringConfig(mlir::Operation *op, const LoweringConfig &config);

/// Checks a config recorded on `op` (which a test may have written): `op`
/// is a contraction or an NHWC window op, the config has one positive
/// extent per result axis, 1 along batch axes, the last a multiple of
/// `width` lanes, and a dot product exactly when the op computes INT8 or
/// bf16 dot products, one that multiplies its elements. Emits an error on
/// `op` otherwise.
mlir::LogicalResult verifyLoweringConfig(mlir::linalg::LinalgOp op, int64_t width);

/// The positions that one workgroup computes along a kernel's length axis
/// (tessel.length_axis), whose bound is `bound`: about an eighth of it and
/// at least 8, dividing it, so that a run at a short length skips most
/// workgroups while each still holds whole register blocks of rows (which
/// are chosen for this many rows).
int64_t lengthTile(int64_t bound);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_LOWERINGCONFIG_H

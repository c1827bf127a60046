//===- LoweringConfig.cpp - Per-op code generation choices ----------------===//

#include "targets/x86/LoweringConfig.h"
#include "targets/x86/AmxTiles.h"
#include "targets/x86/BlockingUtils.h"
#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/ContractionBlocking.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace tessel::x86 {

namespace {
constexpr llvm::StringLiteral kRegisterBlock = "register_block";
constexpr llvm::StringLiteral kDotProduct = "dot_product";
} // namespace

std::optional<LoweringConfig> loweringConfigOf(Operation *op) {
  auto dictionary = op->getAttrOfType<DictionaryAttr>(kLoweringConfigAttr);
  if (!dictionary)
    return std::nullopt;
  auto block = dictionary.getAs<DenseI64ArrayAttr>(kRegisterBlock);
  if (!block || block.empty())
    return std::nullopt;
  LoweringConfig config;
  config.registerBlock.assign(block.asArrayRef().begin(), block.asArrayRef().end());
  if (Attribute dot = dictionary.get(kDotProduct)) {
    auto name = dyn_cast<StringAttr>(dot);
    config.dotProduct = name ? parseDotProduct(name.getValue()) : std::nullopt;
    if (!config.dotProduct)
      return std::nullopt;
  }
  return config;
}

void setLoweringConfig(Operation *op, const LoweringConfig &config) {
  Builder b(op->getContext());
  SmallVector<NamedAttribute> entries{
      b.getNamedAttr(kRegisterBlock, b.getDenseI64ArrayAttr(config.registerBlock))};
  if (config.dotProduct)
    entries.push_back(
        b.getNamedAttr(kDotProduct, b.getStringAttr(dotProductName(*config.dotProduct))));
  op->setAttr(kLoweringConfigAttr, b.getDictionaryAttr(entries));
}

LogicalResult verifyLoweringConfig(linalg::LinalgOp op, int64_t width) {
  std::optional<ContractionLoops> loops = matchContraction(op);
  if (!loops && !matchChannelsLastWindow(op))
    return op->emitError(kLoweringConfigAttr)
           << " on an op that is neither a contraction nor an NHWC window op";
  bool dot = loops ? loops->dot : isDotConvolution(op);
  std::optional<LoweringConfig> config = loweringConfigOf(op);
  if (!config)
    return op->emitError("malformed ")
           << kLoweringConfigAttr << ": expected {" << kRegisterBlock
           << " = array<i64: ...>} with an optional " << kDotProduct
           << " of \"vnni\", \"pmaddwd\", \"pmaddubsw\", \"dpbf16ps\", \"bf16-fma\" or \"amx\"";
  int64_t rank = cast<ShapedType>(op->getResult(0).getType()).getRank();
  if (static_cast<int64_t>(config->registerBlock.size()) != rank)
    return op->emitError(kRegisterBlock)
           << " has " << config->registerBlock.size() << " extents for a result of rank "
           << rank;
  if (llvm::any_of(config->registerBlock, [](int64_t extent) { return extent <= 0; }))
    return op->emitError(kRegisterBlock) << " extents must be positive";
  if (config->panelWidth() % width != 0)
    return op->emitError(kRegisterBlock)
           << "'s last extent, " << config->panelWidth()
           << ", is not a whole number of " << width << "-lane vectors";
  // Blocks hold one batch entry: a contraction's batch axes, or dimension
  // 0 of a window op's (n, oh, ow, channel) result.
  SmallVector<unsigned> batchAxes{0};
  if (loops) {
    AffineMap resultMap = op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)));
    batchAxes.clear();
    for (auto [axis, result] : llvm::enumerate(resultMap.getResults())) {
      unsigned loop = cast<AffineDimExpr>(result).getPosition();
      if (loop != loops->m && loop != loops->n)
        batchAxes.push_back(axis);
    }
  }
  for (unsigned axis : batchAxes)
    if (config->registerBlock[axis] != 1)
      return op->emitError(kRegisterBlock)
             << "'s extent along batch axis " << axis << " is "
             << config->registerBlock[axis] << "; blocks hold one batch entry";
  if (dot != config->dotProduct.has_value())
    return op->emitError(kDotProduct)
           << (dot ? " is required for an INT8 or bf16 op" : " is only for INT8 and bf16 ops");
  if (dot && isBf16(*config->dotProduct) != dotBodyElement(op).isBF16())
    return op->emitError(kDotProduct)
           << " \"" << dotProductName(*config->dotProduct) << "\" does not multiply "
           << (dotBodyElement(op).isBF16() ? "bf16" : "bytes");
  if (config->dotProduct == DotProductKind::Amx) {
    if (loops ? !contractionFitsAmxTiles(op, *loops) : !convolutionFitsAmxTiles(op))
      return op->emitError(kDotProduct)
             << " \"amx\" is for INT8 products whose reduction is whole groups of four "
                "bytes";
    // A window op's pixels of one row, or a contraction's rows, by columns.
    ArrayRef<int64_t> block = config->registerBlock;
    int64_t rows = loops ? contractionBlockOf(op, *loops).rows : block[2];
    int64_t columns = loops ? amxContractionColumns(op, *loops, rows)
                            : amxConvolutionChannels(op, rows);
    if ((!loops && block[1] != 1) || rows > kTileRows || block.back() % kTileColumns != 0 ||
        block.back() > columns)
      return op->emitError(kRegisterBlock)
             << " of an \"amx\" block must have at most " << kTileRows
             << " rows (pixels of one output row) and " << kTileColumns << " to " << columns
             << " columns in steps of " << kTileColumns
             << " (tiles of every shape its blocks take must fit the " << kTileRegisters
             << " tile registers)";
  }
  return success();
}

int64_t lengthTile(int64_t bound) {
  constexpr int64_t kLeastTile = 8, kTilesAtBound = 8;
  for (int64_t tile = std::max(kLeastTile, bound / kTilesAtBound); tile < bound; ++tile)
    if (bound % tile == 0)
      return tile;
  return bound;
}

} // namespace tessel::x86

//===- Indexing.cpp - Expand, slice, gathers, scatters, pad and cumsum ----===//
//
// Ops whose result elements read the operand at computed positions. Most
// are a parallel linalg.generic over the result whose body computes the
// position with linalg.index and reads it with tensor.extract; positions are
// clamped into the operand, so that no index, whatever the input data,
// reads outside the buffer; an index that clamping moved never reaches the
// caller, since the importer guards each with a run-time check
// (tessel.count_out_of_range, tessel.check_zero) that fails the run.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

using namespace mlir;

namespace tessel {
namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// `index` clamped into [0, size).
Value clampIndex(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value low = arith::MaxSIOp::create(b, loc, index, indexConstant(b, loc, 0));
  return arith::MinSIOp::create(b, loc, low, indexConstant(b, loc, size - 1));
}

/// An integer index element as an index, negative ones counted from `size`,
/// clamped into [0, size).
Value normalizedIndex(OpBuilder &b, Location loc, Value element, int64_t size) {
  Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index,
                                         indexConstant(b, loc, 0));
  Value wrapped = arith::AddIOp::create(b, loc, index, indexConstant(b, loc, size));
  index = arith::SelectOp::create(b, loc, negative, wrapped, index);
  return clampIndex(b, loc, index, size);
}

/// A parallel generic over `resultType` whose body computes each element
/// from the loop indices (and the elements of `inputs`, read through
/// `inputMaps`).
Value buildIndexedGeneric(
    OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps,
    function_ref<Value(OpBuilder &, Location, ValueRange indices, ValueRange args)>
        body) {
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, resultType, inputs, emptyTensor(b, loc, resultType), maps,
             iterators,
             [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
               SmallVector<Value> indices;
               for (int64_t d = 0; d < rank; ++d)
                 indices.push_back(linalg::IndexOp::create(nested, nestedLoc, d));
               linalg::YieldOp::create(nested, nestedLoc,
                                       body(nested, nestedLoc, indices, args));
             })
      .getResult(0);
}

RankedTensorType convertedType(const TypeConverter *converter, Type type) {
  return converter->convertType<RankedTensorType>(type);
}

struct ExpandLowering : OpConversionPattern<ExpandOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildElementwise(
                               rewriter, op.getLoc(),
                               convertedType(getTypeConverter(), op.getType()),
                               adaptor.getInput(),
                               [](OpBuilder &, Location, ValueRange args) {
                                 return args[0];
                               }));
    return success();
  }
};

/// Forward slices are tensor.extract_slice (a view after bufferization);
/// reversed ones read element by element.
struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = convertedType(getTypeConverter(), op.getType());
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
    Value input = adaptor.getInput();
    if (llvm::all_of(steps, [](int64_t step) { return step > 0; })) {
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, resultType, input, ValueRange{}, ValueRange{}, ValueRange{}, starts,
          resultType.getShape(), steps);
      return success();
    }
    ArrayRef<int64_t> inputShape = op.getInput().getType().getShape();
    Value result = buildIndexedGeneric(
        rewriter, loc, resultType, {}, {},
        [&](OpBuilder &b, Location nestedLoc, ValueRange indices, ValueRange) {
          SmallVector<Value> source;
          for (auto [d, index] : llvm::enumerate(indices)) {
            Value scaled = arith::MulIOp::create(b, nestedLoc, index,
                                                 indexConstant(b, nestedLoc, steps[d]));
            Value position = arith::AddIOp::create(
                b, nestedLoc, scaled, indexConstant(b, nestedLoc, starts[d]));
            source.push_back(clampIndex(b, nestedLoc, position, inputShape[d]));
          }
          return tensor::ExtractOp::create(b, nestedLoc, input, source).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertedType(getTypeConverter(), op.getType());
    int64_t axis = op.getAxis();
    int64_t indexRank = op.getIndices().getType().getRank();
    ArrayRef<int64_t> dataShape = op.getData().getType().getShape();
    // The indices are read at the result's loops [axis, axis + indexRank).
    SmallVector<AffineExpr> indexExprs;
    for (int64_t d = 0; d < indexRank; ++d)
      indexExprs.push_back(rewriter.getAffineDimExpr(axis + d));
    AffineMap indexMap = AffineMap::get(resultType.getRank(), 0, indexExprs,
                                        rewriter.getContext());
    Value data = adaptor.getData();
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), resultType, adaptor.getIndices(), indexMap,
        [&](OpBuilder &b, Location loc, ValueRange indices, ValueRange args) {
          SmallVector<Value> source(indices.take_front(axis));
          source.push_back(normalizedIndex(b, loc, args[0], dataShape[axis]));
          llvm::append_range(source, indices.drop_front(axis + indexRank));
          return tensor::ExtractOp::create(b, loc, data, source).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatherElementsLowering : OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertedType(getTypeConverter(), op.getType());
    int64_t axis = op.getAxis();
    int64_t size = op.getData().getType().getDimSize(axis);
    Value data = adaptor.getData();
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), resultType, adaptor.getIndices(),
        rewriter.getMultiDimIdentityMap(resultType.getRank()),
        [&](OpBuilder &b, Location loc, ValueRange indices, ValueRange args) {
          SmallVector<Value> source(indices);
          source[axis] = normalizedIndex(b, loc, args[0], size);
          return tensor::ExtractOp::create(b, loc, data, source).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Each result position maps back to `position - leading pad`; constant
/// mode selects the pad value outside the operand, the other modes fold the
/// position back in (clamped, mirrored or wrapped).
struct PadLowering : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertedType(getTypeConverter(), op.getType());
    ArrayRef<int64_t> shape = op.getInput().getType().getShape();
    ArrayRef<int64_t> pads = op.getPads();
    StringRef mode = op.getMode();
    Value input = adaptor.getInput();
    AffineMap scalarMap = AffineMap::get(resultType.getRank(), 0, {},
                                         rewriter.getContext());
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), resultType, adaptor.getValue(), scalarMap,
        [&](OpBuilder &b, Location loc, ValueRange indices, ValueRange args) {
          SmallVector<Value> source;
          Value inside = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
          for (auto [d, index] : llvm::enumerate(indices)) {
            int64_t size = shape[d];
            Value position = arith::SubIOp::create(b, loc, index,
                                                   indexConstant(b, loc, pads[d]));
            if (mode == "constant") {
              Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                                  position, indexConstant(b, loc, 0));
              Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                                  position, indexConstant(b, loc, size));
              inside = arith::AndIOp::create(b, loc, inside,
                                             arith::AndIOp::create(b, loc, above, below));
            } else if (mode == "reflect" && size > 1) {
              // Mirror without repeating the edge: period 2 * (size - 1).
              int64_t period = 2 * (size - 1);
              Value folded = arith::RemSIOp::create(b, loc, position,
                                                    indexConstant(b, loc, period));
              folded = arith::AddIOp::create(b, loc, folded, indexConstant(b, loc, period));
              folded = arith::RemSIOp::create(b, loc, folded,
                                              indexConstant(b, loc, period));
              Value mirrored = arith::SubIOp::create(b, loc, indexConstant(b, loc, period),
                                                     folded);
              Value low = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                                folded, indexConstant(b, loc, size));
              position = arith::SelectOp::create(b, loc, low, folded, mirrored);
            } else if (mode == "wrap") {
              Value folded = arith::RemSIOp::create(b, loc, position,
                                                    indexConstant(b, loc, size));
              folded = arith::AddIOp::create(b, loc, folded, indexConstant(b, loc, size));
              position = arith::RemSIOp::create(b, loc, folded,
                                                indexConstant(b, loc, size));
            }
            source.push_back(clampIndex(b, loc, position, size));
          }
          Value element = tensor::ExtractOp::create(b, loc, input, source);
          if (mode != "constant")
            return element;
          return arith::SelectOp::create(b, loc, inside, element, args[0]).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// result[i] = sum (or product) over j along the axis of x[j] where j <= i
/// (j < i when exclusive, mirrored when reversed): a masked reduction,
/// quadratic in the axis length, which keeps it a plain generic that
/// targets tile.
template <typename OpTy, bool isProduct>
struct CumulativeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = convertedType(this->getTypeConverter(), op.getType());
    Type elementType = resultType.getElementType();
    int64_t rank = resultType.getRank(), axis = op.getAxis();
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    MLIRContext *context = rewriter.getContext();
    // Loops: the result's, then j along the axis.
    SmallVector<AffineExpr> inputExprs;
    for (int64_t d = 0; d < rank; ++d)
      inputExprs.push_back(rewriter.getAffineDimExpr(d == axis ? rank : d));
    AffineMap inputMap = AffineMap::get(rank + 1, 0, inputExprs, context);
    AffineMap resultMap = rewriter.getMultiDimIdentityMap(rank + 1).dropResult(rank);
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    bool isUnsigned = hasUnsignedElements(op.getType());
    double identity = isProduct ? 1.0 : 0.0;
    ScalarBuilder scalar(rewriter, loc, elementType, isUnsigned);
    Value init = filledTensor(rewriter, loc, resultType, scalar.constant(identity));
    using P = arith::CmpIPredicate;
    P predicate = reverse ? (exclusive ? P::sgt : P::sge) : (exclusive ? P::slt : P::sle);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, resultType, adaptor.getInput(), init,
            ArrayRef<AffineMap>{inputMap, resultMap}, iterators,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              ScalarBuilder inner(b, nestedLoc, elementType, isUnsigned);
              Value j = linalg::IndexOp::create(b, nestedLoc, rank);
              Value i = linalg::IndexOp::create(b, nestedLoc, axis);
              Value counts = arith::CmpIOp::create(b, nestedLoc, predicate, j, i);
              Value term = arith::SelectOp::create(b, nestedLoc, counts, args[0],
                                                   inner.constant(identity));
              linalg::YieldOp::create(b, nestedLoc, isProduct ? inner.mul(args[1], term)
                                                              : inner.add(args[1], term));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// How a scatter combines an update with the element already there.
Value combineScatter(OpBuilder &b, Location loc, StringRef reduction, Value current,
                     Value update, bool isUnsigned) {
  ScalarBuilder scalar(b, loc, current.getType(), isUnsigned);
  if (reduction == "add")
    return scalar.add(current, update);
  if (reduction == "mul")
    return scalar.mul(current, update);
  if (reduction == "max")
    return scalar.max(current, update);
  if (reduction == "min")
    return scalar.min(current, update);
  return update;
}

/// Scatters are reductions over the updates: every result element visits
/// each update in row-major order and takes (or combines) those whose
/// target is itself, so later updates win as ONNX specifies. The cost is
/// |result| x |updates|, fine for the small scatters of inference graphs.
struct ScatterElementsLowering : OpConversionPattern<ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = convertedType(getTypeConverter(), op.getType());
    int64_t rank = resultType.getRank(), axis = op.getAxis();
    int64_t size = resultType.getDimSize(axis);
    // Loops: the result's (parallel), then the updates' (reduction).
    AffineMap resultMap = AffineMap::getMultiDimIdentityMap(2 * rank, getContext())
                              .getSliceMap(0, rank);
    AffineMap updateMap = AffineMap::getMultiDimIdentityMap(2 * rank, getContext())
                              .getSliceMap(rank, rank);
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.append(rank, utils::IteratorType::reduction);
    StringRef reduction = op.getReduction();
    bool isUnsigned = hasUnsignedElements(op.getType());
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, resultType, ValueRange{adaptor.getIndices(), adaptor.getUpdates()},
            adaptor.getData(), ArrayRef<AffineMap>{updateMap, updateMap, resultMap},
            iterators,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              Value target = normalizedIndex(b, nestedLoc, args[0], size);
              Value hits = arith::CmpIOp::create(
                  b, nestedLoc, arith::CmpIPredicate::eq, target,
                  linalg::IndexOp::create(b, nestedLoc, axis));
              for (int64_t d = 0; d < rank; ++d) {
                if (d == axis)
                  continue;
                Value same = arith::CmpIOp::create(
                    b, nestedLoc, arith::CmpIPredicate::eq,
                    linalg::IndexOp::create(b, nestedLoc, d),
                    linalg::IndexOp::create(b, nestedLoc, rank + d));
                hits = arith::AndIOp::create(b, nestedLoc, hits, same);
              }
              Value combined =
                  combineScatter(b, nestedLoc, reduction, args[2], args[1], isUnsigned);
              linalg::YieldOp::create(
                  b, nestedLoc,
                  arith::SelectOp::create(b, nestedLoc, hits, combined, args[2]).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ScatterNDLowering : OpConversionPattern<ScatterNDOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = convertedType(getTypeConverter(), op.getType());
    ArrayRef<int64_t> shape = resultType.getShape();
    int64_t rank = resultType.getRank();
    int64_t depth = op.getIndices().getType().getShape().back();
    int64_t tuples = op.getIndices().getType().getRank() - 1;
    // Loops: the result's (parallel), then the index tuples' (reduction).
    int64_t loops = rank + tuples;
    AffineMap resultMap =
        AffineMap::getMultiDimIdentityMap(loops, getContext()).getSliceMap(0, rank);
    SmallVector<AffineExpr> updateExprs;
    for (int64_t u = 0; u < tuples; ++u)
      updateExprs.push_back(rewriter.getAffineDimExpr(rank + u));
    for (int64_t d = depth; d < rank; ++d)
      updateExprs.push_back(rewriter.getAffineDimExpr(d));
    AffineMap updateMap = AffineMap::get(loops, 0, updateExprs, getContext());
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.append(tuples, utils::IteratorType::reduction);
    StringRef reduction = op.getReduction();
    bool isUnsigned = hasUnsignedElements(op.getType());
    Value indices = adaptor.getIndices();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, resultType, adaptor.getUpdates(), adaptor.getData(),
            ArrayRef<AffineMap>{updateMap, resultMap}, iterators,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              SmallVector<Value> tuple;
              for (int64_t u = 0; u < tuples; ++u)
                tuple.push_back(linalg::IndexOp::create(b, nestedLoc, rank + u));
              tuple.push_back(Value());
              Value hits = arith::ConstantOp::create(b, nestedLoc, b.getBoolAttr(true));
              for (int64_t j = 0; j < depth; ++j) {
                tuple.back() = indexConstant(b, nestedLoc, j);
                Value entry = tensor::ExtractOp::create(b, nestedLoc, indices, tuple);
                Value target = normalizedIndex(b, nestedLoc, entry, shape[j]);
                Value same = arith::CmpIOp::create(b, nestedLoc, arith::CmpIPredicate::eq,
                                                   target,
                                                   linalg::IndexOp::create(b, nestedLoc, j));
                hits = arith::AndIOp::create(b, nestedLoc, hits, same);
              }
              Value combined =
                  combineScatter(b, nestedLoc, reduction, args[1], args[0], isUnsigned);
              linalg::YieldOp::create(
                  b, nestedLoc,
                  arith::SelectOp::create(b, nestedLoc, hits, combined, args[1]).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A full reduction over the indices: each one outside [-extent, extent)
/// of its axis adds one to the count.
struct CountOutOfRangeLowering : OpConversionPattern<CountOutOfRangeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(CountOutOfRangeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    int64_t rank = op.getIndices().getType().getRank();
    ArrayRef<int64_t> extents = op.getExtents();
    Type i64 = rewriter.getI64Type();
    auto i64Constant = [&](OpBuilder &b, Location at, int64_t value) -> Value {
      return arith::ConstantOp::create(b, at, b.getI64IntegerAttr(value));
    };
    Value zero = filledTensor(rewriter, loc, resultType, i64Constant(rewriter, loc, 0));
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank),
                                   AffineMap::get(rank, 0, {}, getContext())};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::reduction);
    Value count =
        linalg::GenericOp::create(
            rewriter, loc, resultType, adaptor.getIndices(), zero, maps, iterators,
            [&](OpBuilder &b, Location at, ValueRange args) {
              Value index = args[0];
              if (index.getType() != i64)
                index = arith::ExtSIOp::create(b, at, i64, index);
              // The extent of the tuple entry this index is.
              Value extent = i64Constant(b, at, extents[0]);
              if (extents.size() > 1) {
                Value entry = linalg::IndexOp::create(b, at, rank - 1);
                for (auto [j, other] : llvm::enumerate(extents.drop_front())) {
                  Value here = arith::CmpIOp::create(b, at, arith::CmpIPredicate::eq, entry,
                                                     indexConstant(b, at, j + 1));
                  extent = arith::SelectOp::create(b, at, here, i64Constant(b, at, other), extent);
                }
              }
              Value below = arith::CmpIOp::create(
                  b, at, arith::CmpIPredicate::slt, index,
                  arith::SubIOp::create(b, at, i64Constant(b, at, 0), extent));
              Value above = arith::CmpIOp::create(b, at, arith::CmpIPredicate::sge, index, extent);
              Value outside = arith::OrIOp::create(b, at, below, above);
              Value one = arith::ExtUIOp::create(b, at, i64, outside);
              linalg::YieldOp::create(b, at,
                                      arith::AddIOp::create(b, at, args[1], one).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, count);
    return success();
  }
};

} // namespace

void populateIndexingToLinalgPatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns) {
  patterns.add<ExpandLowering, SliceLowering, GatherLowering, GatherElementsLowering, PadLowering,
               CumulativeLowering<CumSumOp, false>, CumulativeLowering<CumProdOp, true>,
               ScatterElementsLowering, ScatterNDLowering, CountOutOfRangeLowering>(
      converter, patterns.getContext());
}

} // namespace tessel

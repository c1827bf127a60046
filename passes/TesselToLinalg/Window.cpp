//===- Window.cpp - Convolution and pooling to linalg ---------------------===//
//
// 2-D convolutions without groups and depthwise ones become linalg's named
// NCHW ops, which targets know how to decompose and vectorize. Other ranks
// and groupings, and all pooling, become generics over an explicit window
// iteration space. Padding is a tensor.pad that targets fuse into tiles.
//
//===----------------------------------------------------------------------===//

#include "passes/TesselToLinalg/WindowUtils.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace tessel {

Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> padsBegin, ArrayRef<int64_t> padsEnd,
                 Value value, bool channelsLast) {
  if (llvm::all_of(padsBegin, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(padsEnd, [](int64_t p) { return p == 0; }))
    return input;
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> low{0}, high{0};
  if (!channelsLast) {
    low.push_back(0);
    high.push_back(0);
  }
  llvm::append_range(low, padsBegin);
  llvm::append_range(high, padsEnd);
  if (channelsLast) {
    low.push_back(0);
    high.push_back(0);
  }
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < shape.size(); ++i)
    shape[i] += low[i] + high[i];
  auto paddedType = RankedTensorType::get(shape, type.getElementType());
  return tensor::PadOp::create(b, loc, paddedType, input,
                               getAsIndexOpFoldResult(b.getContext(), low),
                               getAsIndexOpFoldResult(b.getContext(), high),
                               value);
}

ArrayRef<int64_t> spatialExtents(RankedTensorType type, bool channelsLast) {
  return channelsLast ? type.getShape().drop_front().drop_back()
                      : type.getShape().drop_front(2);
}

Value broadcastAlongAxis(OpBuilder &b, Location loc, Value vector,
                         RankedTensorType type, int64_t axis) {
  BroadcastOperand operand =
      indexOperand(b, loc, vector, {axis}, type.getShape());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, operand.value, emptyTensor(b, loc, type),
             ArrayRef<AffineMap>{operand.map,
                                 b.getMultiDimIdentityMap(type.getRank())},
             iterators,
             [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
               linalg::YieldOp::create(nested, nestedLoc, args[0]);
             })
      .getResult(0);
}

AffineMap windowInputMap(MLIRContext *context, ArrayRef<int64_t> inputLeadingDims,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                         int64_t outputStart, int64_t windowStart, int64_t numDims) {
  SmallVector<AffineExpr> exprs;
  for (int64_t dim : inputLeadingDims)
    exprs.push_back(getAffineDimExpr(dim, context));
  for (size_t i = 0; i < strides.size(); ++i)
    exprs.push_back(getAffineDimExpr(outputStart + i, context) * strides[i] +
                    getAffineDimExpr(windowStart + i, context) * dilations[i]);
  return AffineMap::get(numDims, 0, exprs, context);
}

Value buildGroupedConvolution(OpBuilder &b, Location loc, Value input, Value weight,
                              Value init, ArrayRef<int64_t> strides,
                              ArrayRef<int64_t> dilations, int64_t group,
                              MultiplyAccumulateFn body) {
  auto resultType = cast<RankedTensorType>(init.getType());
  int64_t rank = resultType.getRank(), spatialRank = rank - 2;
  auto split = [&](Value value, int64_t axis) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] /= group;
    shape.insert(shape.begin() + axis, group);
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (i < axis)
        groups.push_back({i});
      else if (i == axis)
        groups.push_back({i, i + 1});
      else
        groups.push_back({i + 1});
    }
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), value, groups);
  };
  Value groupedInput = split(input, 1);   // [N, G, C/G, I...]
  Value groupedWeight = split(weight, 0); // [G, F/G, C/G, K...]
  Value groupedInit = split(init, 1);     // [N, G, F/G, O...]

  // Dimensions: n, g, f, o..., c, w...
  enum { n = 0, g = 1, f = 2 };
  int64_t outputStart = 3, c = 3 + spatialRank, windowStart = c + 1;
  int64_t numDims = windowStart + spatialRank;
  MLIRContext *context = b.getContext();
  AffineMap inputMap = windowInputMap(context, {n, g, c}, strides, dilations, outputStart,
                                      windowStart, numDims);
  SmallVector<AffineExpr> weightExprs{b.getAffineDimExpr(g), b.getAffineDimExpr(f),
                                      b.getAffineDimExpr(c)};
  SmallVector<AffineExpr> outExprs{b.getAffineDimExpr(n), b.getAffineDimExpr(g),
                                   b.getAffineDimExpr(f)};
  for (int64_t i = 0; i < spatialRank; ++i) {
    weightExprs.push_back(b.getAffineDimExpr(windowStart + i));
    outExprs.push_back(b.getAffineDimExpr(outputStart + i));
  }
  SmallVector<utils::IteratorType> iterators(numDims, utils::IteratorType::parallel);
  for (int64_t i = c; i < numDims; ++i)
    iterators[i] = utils::IteratorType::reduction;
  auto generic = linalg::GenericOp::create(
      b, loc, groupedInit.getType(), ValueRange{groupedInput, groupedWeight}, groupedInit,
      ArrayRef<AffineMap>{inputMap, AffineMap::get(numDims, 0, weightExprs, context),
                          AffineMap::get(numDims, 0, outExprs, context)},
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                body(nested, nestedLoc, args[0], args[1], args[2]));
      });
  SmallVector<ReassociationIndices> merge{{0}, {1, 2}};
  for (int64_t i = 0; i < spatialRank; ++i)
    merge.push_back({3 + i});
  return tensor::CollapseShapeOp::create(b, loc, resultType, generic.getResult(0), merge);
}

Value buildChannelsLastConvolution(OpBuilder &b, Location loc, Value input, Value weight,
                                   Value init, ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> dilations, bool depthwise,
                                   MultiplyAccumulateFn body) {
  MLIRContext *context = b.getContext();
  // (n, oh, ow, f, kh, kw[, c])
  int64_t numDims = depthwise ? 6 : 7;
  auto d = [&](int64_t dim) { return getAffineDimExpr(dim, context); };
  AffineExpr channel = depthwise ? d(3) : d(6);
  AffineMap inputMap = AffineMap::get(
      numDims, 0,
      {d(0), d(1) * strides[0] + d(4) * dilations[0], d(2) * strides[1] + d(5) * dilations[1],
       channel},
      context);
  AffineMap weightMap =
      depthwise ? AffineMap::get(numDims, 0, {d(4), d(5), d(3)}, context)
                : AffineMap::get(numDims, 0, {d(4), d(5), d(6), d(3)}, context);
  AffineMap outputMap = AffineMap::get(numDims, 0, {d(0), d(1), d(2), d(3)}, context);
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(numDims - 4, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{input, weight}, init,
             ArrayRef<AffineMap>{inputMap, weightMap, outputMap}, iterators,
             [&](OpBuilder &nested, Location at, ValueRange args) {
               linalg::YieldOp::create(nested, at, body(nested, at, args[0], args[1], args[2]));
             })
      .getResult(0);
}

Value floatMultiplyAccumulate(OpBuilder &b, Location loc, Value x, Value w, Value sum) {
  Type type = sum.getType();
  if (x.getType() != type) {
    x = arith::ExtFOp::create(b, loc, type, x);
    w = arith::ExtFOp::create(b, loc, type, w);
  }
  ScalarBuilder scalar(b, loc, type, false);
  return scalar.add(sum, scalar.mul(x, w));
}

namespace {

/// Extra end padding so that ceil_mode windows that run past the input
/// read padding: the window span of the last output position minus the
/// padded input extent.
SmallVector<int64_t> ceilModeExtra(ArrayRef<int64_t> input,
                                   ArrayRef<int64_t> output,
                                   ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> pads,
                                   ArrayRef<int64_t> dilations) {
  size_t rank = kernel.size();
  SmallVector<int64_t> extra;
  for (size_t i = 0; i < rank; ++i) {
    int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    int64_t needed = (output[i] - 1) * strides[i] + span;
    int64_t available = input[i] + pads[i] + pads[rank + i];
    extra.push_back(std::max<int64_t>(0, needed - available));
  }
  return extra;
}


//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvLowering : OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Integer convolutions are QuantizedProducts.cpp's.
    if (isQuantized(op.getType()))
      return failure();
    Location loc = op.getLoc();
    // An f16 convolution widens its operands and sums in f32 (the f32
    // kernels, blocked like any other), rounding each output once.
    RankedTensorType resultType = productSumType(op.getType());
    Type elementType = resultType.getElementType();
    auto widened = [&](Value operand) -> Value {
      auto type = cast<RankedTensorType>(operand.getType());
      if (!type.getElementType().isF16())
        return operand;
      return buildElementwise(rewriter, loc, type.clone(elementType), {operand},
                              [&](OpBuilder &nested, Location at, ValueRange args) -> Value {
                                return arith::ExtFOp::create(nested, at, elementType, args[0]);
                              });
    };
    Value inputOperand = widened(adaptor.getInput());
    Value weightOperand = widened(adaptor.getWeight());
    Value biasOperand = adaptor.getBias() ? widened(adaptor.getBias()) : Value();
    ScalarBuilder scalar(rewriter, loc, elementType, false);
    size_t spatialRank = resultType.getRank() - 2;
    ArrayRef<int64_t> pads = op.getPads();
    bool channelsLast = op.getChannelsLast();
    // bf16 operands of an f32 result (tessel-bf16-products): generics whose
    // bodies widen them, which targets recognize as bf16 dot products.
    Type inputElement = cast<RankedTensorType>(inputOperand.getType()).getElementType();
    bool widening = inputElement != elementType;
    if (widening && channelsLast && op.getGroup() != 1)
      return rewriter.notifyMatchFailure(op, "bf16 operands of a grouped NHWC convolution");
    Value input = padSpatial(rewriter, loc, inputOperand, pads.take_front(spatialRank),
                             pads.drop_front(spatialRank),
                             ScalarBuilder(rewriter, loc, inputElement, false).constant(0.0),
                             channelsLast);
    int64_t channelAxis = channelsLast ? resultType.getRank() - 1 : 1;
    Value init = biasOperand
                     ? broadcastAlongAxis(rewriter, loc, biasOperand, resultType, channelAxis)
                     : filledTensor(rewriter, loc, resultType, scalar.constant(0.0));
    auto replace = [&](Value result) {
      rewriter.replaceOp(op, roundProductSum(rewriter, loc, result, op.getType()));
      return success();
    };
    if (channelsLast)
      return replace(widening ? buildChannelsLastConvolution(
                                    rewriter, loc, input, weightOperand, init, op.getStrides(),
                                    op.getDilations(), /*depthwise=*/false,
                                    floatMultiplyAccumulate)
                              : channelsLastConvolution(rewriter, loc, op.getGroup(), input,
                                                        weightOperand, init, op.getStrides(),
                                                        op.getDilations()));

    RankedTensorType weightType = cast<RankedTensorType>(weightOperand.getType());
    int64_t group = op.getGroup();
    int64_t channels = op.getInput().getType().getDimSize(1);
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    Value result;
    if (widening) {
      result = buildGroupedConvolution(rewriter, loc, input, weightOperand, init,
                                       op.getStrides(), op.getDilations(), group,
                                       floatMultiplyAccumulate);
    } else if (spatialRank == 2 && group == 1) {
      result = linalg::Conv2DNchwFchwOp::create(rewriter, loc, resultType,
                                                ValueRange{input, weightOperand}, init, strides,
                                                dilations)
                   .getResult(0);
    } else if (spatialRank == 2 && group == channels &&
               weightType.getDimSize(0) == channels) {
      // Depthwise, one filter per channel: weight [C, 1, KH, KW] -> [C, KH, KW].
      auto depthwiseType = RankedTensorType::get(
          {channels, weightType.getDimSize(2), weightType.getDimSize(3)},
          elementType);
      Value weight = tensor::CollapseShapeOp::create(
          rewriter, loc, depthwiseType, weightOperand,
          ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
      result = linalg::DepthwiseConv2DNchwChwOp::create(
                   rewriter, loc, resultType, ValueRange{input, weight}, init,
                   strides, dilations)
                   .getResult(0);
    } else {
      result = buildGroupedConvolution(rewriter, loc, input, weightOperand, init,
                                       op.getStrides(), op.getDilations(), group,
                                       floatMultiplyAccumulate);
    }
    return replace(result);
  }

  /// NHWC: a regular convolution with an HWCF weight, or a depthwise one
  /// with an HW1C weight (the pass forms no other channels-last grouping).
  static Value channelsLastConvolution(OpBuilder &b, Location loc, int64_t group, Value input,
                                       Value weight, Value init, ArrayRef<int64_t> strideValues,
                                       ArrayRef<int64_t> dilationValues) {
    auto resultType = cast<RankedTensorType>(init.getType());
    auto strides = b.getI64TensorAttr(strideValues);
    auto dilations = b.getI64TensorAttr(dilationValues);
    if (group == 1)
      return linalg::Conv2DNhwcHwcfOp::create(b, loc, resultType, ValueRange{input, weight},
                                              init, strides, dilations)
          .getResult(0);
    auto weightType = cast<RankedTensorType>(weight.getType());
    auto depthwiseType = RankedTensorType::get(
        {weightType.getDimSize(0), weightType.getDimSize(1), weightType.getDimSize(3)},
        weightType.getElementType());
    Value depthwiseWeight = tensor::CollapseShapeOp::create(
        b, loc, depthwiseType, weight, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    return linalg::DepthwiseConv2DNhwcHwcOp::create(b, loc, resultType,
                                                    ValueRange{input, depthwiseWeight},
                                                    init, strides, dilations)
        .getResult(0);
  }

};

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Reduces each window of the padded input with `combine` into `init`.
Value buildWindowReduction(OpBuilder &b, Location loc, Value padded,
                           Value init, ArrayRef<int64_t> kernel,
                           ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations, bool isMax,
                           bool isUnsigned) {
  auto resultType = cast<RankedTensorType>(init.getType());
  int64_t spatialRank = kernel.size();
  int64_t outputStart = 2, windowStart = 2 + spatialRank;
  int64_t numDims = windowStart + spatialRank;
  MLIRContext *context = b.getContext();
  AffineMap inputMap = windowInputMap(context, {0, 1}, strides, dilations,
                                      outputStart, windowStart, numDims);
  // The window operand only gives the window dimensions their extents.
  Value window = tensor::EmptyOp::create(b, loc, kernel, resultType.getElementType());
  SmallVector<AffineExpr> windowExprs, outExprs{b.getAffineDimExpr(0),
                                                b.getAffineDimExpr(1)};
  for (int64_t i = 0; i < spatialRank; ++i) {
    windowExprs.push_back(b.getAffineDimExpr(windowStart + i));
    outExprs.push_back(b.getAffineDimExpr(outputStart + i));
  }
  SmallVector<utils::IteratorType> iterators(numDims,
                                             utils::IteratorType::parallel);
  for (int64_t i = windowStart; i < numDims; ++i)
    iterators[i] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{padded, window}, init,
             ArrayRef<AffineMap>{inputMap,
                                 AffineMap::get(numDims, 0, windowExprs, context),
                                 AffineMap::get(numDims, 0, outExprs, context)},
             iterators,
             [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
               ScalarBuilder scalar(nested, nestedLoc, args[0].getType(),
                                    isUnsigned);
               Value combined = isMax ? scalar.max(args[2], args[0])
                                      : scalar.add(args[2], args[0]);
               linalg::YieldOp::create(nested, nestedLoc, combined);
             })
      .getResult(0);
}

/// The NHWC form of buildWindowReduction: linalg's named pooling ops,
/// which targets block along the channels.
Value buildChannelsLastWindowReduction(OpBuilder &b, Location loc, Value padded,
                                       Value init, ArrayRef<int64_t> kernel,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> dilations, bool isMax,
                                       bool isUnsigned) {
  auto resultType = cast<RankedTensorType>(init.getType());
  Value window = tensor::EmptyOp::create(b, loc, kernel, resultType.getElementType());
  auto strideAttr = b.getI64TensorAttr(strides);
  auto dilationAttr = b.getI64TensorAttr(dilations);
  SmallVector<Value> inputs{padded, window};
  if (isMax && isUnsigned)
    return linalg::PoolingNhwcMaxUnsignedOp::create(b, loc, resultType, inputs, init,
                                                    strideAttr, dilationAttr)
        .getResult(0);
  if (isMax)
    return linalg::PoolingNhwcMaxOp::create(b, loc, resultType, inputs, init, strideAttr,
                                            dilationAttr)
        .getResult(0);
  return linalg::PoolingNhwcSumOp::create(b, loc, resultType, inputs, init, strideAttr,
                                          dilationAttr)
      .getResult(0);
}

struct MaxPoolLowering : OpConversionPattern<MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        getTypeConverter()->convertType<RankedTensorType>(op.getType());
    bool isUnsigned = hasUnsignedElements(op.getType());
    ScalarBuilder scalar(rewriter, loc, resultType.getElementType(), isUnsigned);
    size_t rank = op.getKernelShape().size();
    ArrayRef<int64_t> pads = op.getPads();
    bool channelsLast = op.getChannelsLast();
    SmallVector<int64_t> extra = ceilModeExtra(
        spatialExtents(op.getInput().getType(), channelsLast),
        spatialExtents(resultType, channelsLast), op.getKernelShape(),
        op.getStrides(), pads, op.getDilations());
    SmallVector<int64_t> padsEnd(pads.drop_front(rank));
    for (size_t i = 0; i < rank; ++i)
      padsEnd[i] += extra[i];
    Value padded = padSpatial(rewriter, loc, adaptor.getInput(), pads.take_front(rank),
                              padsEnd, scalar.lowest(), channelsLast);
    Value init = filledTensor(rewriter, loc, resultType, scalar.lowest());
    if (channelsLast) {
      rewriter.replaceOp(op, buildChannelsLastWindowReduction(
                                 rewriter, loc, padded, init, op.getKernelShape(),
                                 op.getStrides(), op.getDilations(), /*isMax=*/true,
                                 isUnsigned));
      return success();
    }
    rewriter.replaceOp(op, buildWindowReduction(
                               rewriter, loc, padded, init, op.getKernelShape(),
                               op.getStrides(), op.getDilations(),
                               /*isMax=*/true, isUnsigned));
    return success();
  }
};

/// Carries (largest value, its flat input index) through each window; a
/// position counts if it lies inside the input and beats the value so far
/// (the first largest wins, as in ONNX's reference).
struct MaxPoolIndicesLowering : OpConversionPattern<MaxPoolIndicesOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MaxPoolIndicesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    RankedTensorType inputType = op.getInput().getType();
    auto indicesType = cast<RankedTensorType>(op.getType());
    Type elementType = getTypeConverter()->convertType(inputType.getElementType());
    bool isUnsigned = hasUnsignedElements(inputType);
    ScalarBuilder scalar(rewriter, loc, elementType, isUnsigned);
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides();
    ArrayRef<int64_t> dilations = op.getDilations(), pads = op.getPads();
    int64_t rank = kernel.size();
    SmallVector<int64_t> extra =
        ceilModeExtra(inputType.getShape().drop_front(2), indicesType.getShape().drop_front(2),
                      kernel, strides, pads, dilations);
    SmallVector<int64_t> padsEnd(pads.drop_front(rank));
    for (int64_t i = 0; i < rank; ++i)
      padsEnd[i] += extra[i];
    Value padded = padSpatial(rewriter, loc, adaptor.getInput(), pads.take_front(rank),
                              padsEnd, scalar.lowest());

    int64_t outputStart = 2, windowStart = 2 + rank, numDims = windowStart + rank;
    AffineMap inputMap =
        windowInputMap(context, {0, 1}, strides, dilations, outputStart, windowStart, numDims);
    SmallVector<AffineExpr> windowExprs, outExprs{rewriter.getAffineDimExpr(0),
                                                  rewriter.getAffineDimExpr(1)};
    for (int64_t i = 0; i < rank; ++i) {
      windowExprs.push_back(rewriter.getAffineDimExpr(windowStart + i));
      outExprs.push_back(rewriter.getAffineDimExpr(outputStart + i));
    }
    AffineMap outMap = AffineMap::get(numDims, 0, outExprs, context);
    SmallVector<utils::IteratorType> iterators(numDims, utils::IteratorType::parallel);
    for (int64_t i = windowStart; i < numDims; ++i)
      iterators[i] = utils::IteratorType::reduction;
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, elementType);
    auto valuesType = RankedTensorType::get(indicesType.getShape(), elementType);
    Value values = filledTensor(rewriter, loc, valuesType, scalar.lowest());
    Value indices = filledTensor(
        rewriter, loc, indicesType,
        arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(-1)));

    ArrayRef<int64_t> spatial = inputType.getShape().drop_front(2);
    // Spatial strides of the flat index: row-major, or reversed.
    SmallVector<int64_t> spatialStrides(rank, 1);
    int64_t spatialSize = 1;
    for (int64_t step = 0; step < rank; ++step) {
      int64_t axis = op.getColumnMajor() ? step : rank - 1 - step;
      spatialStrides[axis] = spatialSize;
      spatialSize *= spatial[axis];
    }
    int64_t channels = inputType.getDimSize(1);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valuesType, indicesType}, ValueRange{padded, window},
        ValueRange{values, indices},
        ArrayRef<AffineMap>{inputMap, AffineMap::get(numDims, 0, windowExprs, context),
                            outMap, outMap},
        iterators, [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          auto i64 = [&](int64_t value) {
            return arith::ConstantOp::create(b, nestedLoc, b.getI64IntegerAttr(value));
          };
          auto indexOf = [&](int64_t dim) -> Value {
            Value index = linalg::IndexOp::create(b, nestedLoc, dim);
            return arith::IndexCastOp::create(b, nestedLoc, b.getI64Type(), index);
          };
          auto mulAdd = [&](Value a, int64_t factor, Value c) -> Value {
            return arith::AddIOp::create(
                b, nestedLoc, arith::MulIOp::create(b, nestedLoc, a, i64(factor)), c);
          };
          // ((n * C + c) * spatial size) + the spatial offset.
          Value flat = arith::MulIOp::create(
              b, nestedLoc, mulAdd(indexOf(0), channels, indexOf(1)), i64(spatialSize));
          Value inside = arith::ConstantOp::create(b, nestedLoc, b.getBoolAttr(true));
          for (int64_t i = 0; i < rank; ++i) {
            // o * stride + w * dilation - the leading pad.
            Value position = mulAdd(indexOf(outputStart + i), strides[i],
                                    mulAdd(indexOf(windowStart + i), dilations[i],
                                           i64(-pads[i])));
            Value low = arith::CmpIOp::create(b, nestedLoc, arith::CmpIPredicate::sge,
                                              position, i64(0));
            Value high = arith::CmpIOp::create(b, nestedLoc, arith::CmpIPredicate::slt,
                                               position, i64(spatial[i]));
            inside = arith::AndIOp::create(
                b, nestedLoc, inside, arith::AndIOp::create(b, nestedLoc, low, high));
            flat = mulAdd(position, spatialStrides[i], flat);
          }
          Value larger =
              isa<FloatType>(elementType)
                  ? arith::CmpFOp::create(b, nestedLoc, arith::CmpFPredicate::OGT, args[0],
                                          args[2])
                        .getResult()
                  : arith::CmpIOp::create(b, nestedLoc,
                                          isUnsigned ? arith::CmpIPredicate::ugt
                                                     : arith::CmpIPredicate::sgt,
                                          args[0], args[2])
                        .getResult();
          Value first = arith::CmpIOp::create(b, nestedLoc, arith::CmpIPredicate::slt,
                                              args[3], i64(0));
          Value wins = arith::AndIOp::create(
              b, nestedLoc, inside, arith::OrIOp::create(b, nestedLoc, larger, first));
          linalg::YieldOp::create(
              b, nestedLoc,
              ValueRange{arith::SelectOp::create(b, nestedLoc, wins, args[0], args[2]),
                         arith::SelectOp::create(b, nestedLoc, wins, flat, args[3])});
        });
    rewriter.replaceOp(op, generic.getResult(1));
    return success();
  }
};

/// How many positions of each window count towards an average: those
/// inside the input, or inside the explicitly padded input with
/// count_include_pad. Positions that ceil_mode adds never count.
SmallVector<SmallVector<int64_t>> averageCounts(AveragePoolOp op) {
  ArrayRef<int64_t> input = spatialExtents(op.getInput().getType(), op.getChannelsLast());
  ArrayRef<int64_t> output = spatialExtents(op.getType(), op.getChannelsLast());
  ArrayRef<int64_t> kernel = op.getKernelShape(), pads = op.getPads();
  size_t rank = kernel.size();
  SmallVector<SmallVector<int64_t>> counts(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t low = op.getCountIncludePad() ? -pads[i] : 0;
    int64_t high = op.getCountIncludePad() ? input[i] + pads[rank + i] : input[i];
    for (int64_t o = 0; o < output[i]; ++o) {
      int64_t count = 0;
      for (int64_t w = 0; w < kernel[i]; ++w) {
        int64_t position = o * op.getStrides()[i] - pads[i] + w * op.getDilations()[i];
        count += position >= low && position < high;
      }
      counts[i].push_back(count);
    }
  }
  return counts;
}

struct AveragePoolLowering : OpConversionPattern<AveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    Type elementType = resultType.getElementType();
    ScalarBuilder scalar(rewriter, loc, elementType, false);
    size_t rank = op.getKernelShape().size();
    ArrayRef<int64_t> pads = op.getPads();
    bool channelsLast = op.getChannelsLast();
    ArrayRef<int64_t> outputSpatial = spatialExtents(resultType, channelsLast);
    SmallVector<int64_t> extra = ceilModeExtra(
        spatialExtents(op.getInput().getType(), channelsLast), outputSpatial,
        op.getKernelShape(), op.getStrides(), pads, op.getDilations());
    SmallVector<int64_t> padsEnd(pads.drop_front(rank));
    for (size_t i = 0; i < rank; ++i)
      padsEnd[i] += extra[i];
    Value padded = padSpatial(rewriter, loc, adaptor.getInput(), pads.take_front(rank),
                              padsEnd, scalar.constant(0.0), channelsLast);
    Value init = filledTensor(rewriter, loc, resultType, scalar.constant(0.0));
    Value sums = channelsLast
                     ? buildChannelsLastWindowReduction(
                           rewriter, loc, padded, init, op.getKernelShape(),
                           op.getStrides(), op.getDilations(), /*isMax=*/false,
                           /*isUnsigned=*/false)
                     : buildWindowReduction(rewriter, loc, padded, init,
                                            op.getKernelShape(), op.getStrides(),
                                            op.getDilations(), /*isMax=*/false,
                                            /*isUnsigned=*/false);

    // The divisor of every output position, as a constant [O...] tensor
    // unless all windows count the same.
    SmallVector<SmallVector<int64_t>> counts = averageCounts(op);
    SmallVector<double> divisors{1.0};
    for (const SmallVector<int64_t> &axisCounts : counts) {
      SmallVector<double> next;
      for (double prefix : divisors)
        for (int64_t count : axisCounts)
          next.push_back(prefix * count);
      divisors = std::move(next);
    }
    bool uniform = llvm::all_equal(divisors);
    SmallVector<Value> operands{sums};
    if (!uniform) {
      // [O...], or [O..., 1] to broadcast over trailing channels.
      SmallVector<int64_t> divisorShape(outputSpatial);
      if (channelsLast)
        divisorShape.push_back(1);
      auto divisorType = RankedTensorType::get(divisorShape, elementType);
      SmallVector<Attribute> values;
      for (double divisor : divisors)
        values.push_back(rewriter.getFloatAttr(elementType, divisor));
      operands.push_back(arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(divisorType, values)));
    }
    double divisor = divisors.front();
    Value result = buildElementwise(
        rewriter, loc, resultType, operands,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          ScalarBuilder inner(b, nestedLoc, elementType, false);
          return inner.div(args[0], uniform ? inner.constant(divisor) : args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GlobalAveragePoolLowering : OpConversionPattern<GlobalAveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GlobalAveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType inputType = op.getInput().getType();
    RankedTensorType resultType = op.getType();
    Type elementType = resultType.getElementType();
    int64_t rank = inputType.getRank();
    ScalarBuilder scalar(rewriter, loc, elementType, false);

    // sums[n, c] = sum over the spatial axes.
    bool channelsLast = op.getChannelsLast();
    int64_t channelAxis = channelsLast ? rank - 1 : 1;
    auto sumType = RankedTensorType::get(
        {inputType.getDimSize(0), inputType.getDimSize(channelAxis)}, elementType);
    Value init = filledTensor(rewriter, loc, sumType, scalar.constant(0.0));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    iterators[0] = iterators[channelAxis] = utils::IteratorType::parallel;
    AffineMap sumMap = AffineMap::get(
        rank, 0, {rewriter.getAffineDimExpr(0), rewriter.getAffineDimExpr(channelAxis)},
        rewriter.getContext());
    Value sums =
        linalg::GenericOp::create(
            rewriter, loc, sumType, adaptor.getInput(), init,
            ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank), sumMap},
            iterators,
            [](OpBuilder &b, Location nestedLoc, ValueRange args) {
              ScalarBuilder inner(b, nestedLoc, args[0].getType(), false);
              linalg::YieldOp::create(b, nestedLoc, inner.add(args[1], args[0]));
            })
            .getResult(0);

    double count = 1;
    for (int64_t dim : spatialExtents(inputType, channelsLast))
      count *= dim;
    BroadcastOperand operand =
        indexOperand(rewriter, loc, sums, {0, channelAxis}, resultType.getShape());
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, resultType, operand.value,
            emptyTensor(rewriter, loc, resultType),
            ArrayRef<AffineMap>{operand.map, rewriter.getMultiDimIdentityMap(rank)},
            parallel,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              ScalarBuilder inner(b, nestedLoc, elementType, false);
              linalg::YieldOp::create(
                  b, nestedLoc, inner.div(args[0], inner.constant(count)));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateWindowToLinalgPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns) {
  patterns.add<ConvLowering, MaxPoolLowering, MaxPoolIndicesLowering, AveragePoolLowering,
               GlobalAveragePoolLowering>(converter, patterns.getContext());
}

} // namespace tessel

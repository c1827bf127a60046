//===- Quantization.cpp - Quantize, dequantize and lookups to linalg ------===//
//
// Quantized tensors lower to their storage integers (signless); the
// parameters of their types become constants of the generics that convert
// them. Every formula follows ONNX's reference step by step, in the
// expressed type, so that the results agree with it bit for bit.
//
//===----------------------------------------------------------------------===//

#include "passes/TesselToLinalg/QuantizationUtils.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace tessel {

Value channelConstant(OpBuilder &b, Location loc, Type elementType, ArrayRef<double> values,
                      int64_t axis, int64_t rank) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = values.size();
  SmallVector<Attribute> elements;
  for (double value : values)
    elements.push_back(isa<FloatType>(elementType)
                           ? Attribute(b.getFloatAttr(elementType, value))
                           : Attribute(b.getIntegerAttr(elementType, int64_t(value))));
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(RankedTensorType::get(shape, elementType), elements));
}

ChannelParameters::ChannelParameters(OpBuilder &b, Location loc, RankedTensorType type,
                                     Type real)
    : type(getQuantizedType(type)), real(real) {
  std::optional<int32_t> axis = quantizedAxis(this->type);
  if (!axis || hasUniformParams(this->type))
    return;
  SmallVector<double> scales, zeroPoints;
  for (int64_t channel = 0; channel < quantChannelCount(this->type); ++channel) {
    scales.push_back(quantParams(this->type, channel).scale);
    zeroPoints.push_back(quantParams(this->type, channel).zeroPoint);
  }
  scaleTensor = channelConstant(b, loc, real, scales, *axis, type.getRank());
  zeroPointTensor = channelConstant(b, loc, real, zeroPoints, *axis, type.getRank());
}

void ChannelParameters::addOperands(SmallVectorImpl<Value> &operands) {
  if (!scaleTensor)
    return;
  firstOperand = operands.size();
  operands.append({scaleTensor, zeroPointTensor});
}

Value ChannelParameters::scale(OpBuilder &b, Location loc, ValueRange args) const {
  if (scaleTensor)
    return args[firstOperand];
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(real, quantParams(type).scale));
}

Value ChannelParameters::zeroPoint(OpBuilder &b, Location loc, ValueRange args) const {
  if (zeroPointTensor)
    return args[firstOperand + 1];
  return arith::ConstantOp::create(b, loc,
                                   b.getFloatAttr(real, double(quantParams(type).zeroPoint)));
}

Value extendToI32(OpBuilder &b, Location loc, Value integer, bool isUnsigned) {
  Type i32 = b.getI32Type();
  if (integer.getType() == i32)
    return integer;
  if (isUnsigned)
    return arith::ExtUIOp::create(b, loc, i32, integer);
  return arith::ExtSIOp::create(b, loc, i32, integer);
}

Value storageConstant(OpBuilder &b, Location loc, quant::QuantizedType type,
                      int64_t value) {
  unsigned width = type.getStorageTypeIntegralWidth();
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(b.getIntegerType(width), APInt(width, value, type.isSigned())));
}

Value saturateToStorage(OpBuilder &b, Location loc, Value real,
                        quant::QuantizedType type) {
  Type realType = real.getType();
  auto bound = [&](int64_t value) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(realType, double(value)));
  };
  // maxnumf/minnumf: a NaN saturates to the minimum, as the reference's
  // integer conversion of NaN does.
  Value clamped = arith::MaxNumFOp::create(b, loc, real, bound(type.getStorageTypeMin()));
  clamped = arith::MinNumFOp::create(b, loc, clamped, bound(type.getStorageTypeMax()));
  Value integer = arith::FPToSIOp::create(b, loc, b.getI32Type(), clamped);
  Type storage = b.getIntegerType(type.getStorageTypeIntegralWidth());
  if (storage == integer.getType())
    return integer;
  return arith::TruncIOp::create(b, loc, storage, integer);
}

Value saturateI32ToStorage(OpBuilder &b, Location loc, Value real, quant::QuantizedType type) {
  Type i32 = b.getI32Type();
  auto bound = [&](int64_t value) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
  };
  Value integer = arith::FPToSIOp::create(b, loc, i32, real);
  integer = arith::MaxSIOp::create(b, loc, integer, bound(type.getStorageTypeMin()));
  integer = arith::MinSIOp::create(b, loc, integer, bound(type.getStorageTypeMax()));
  Type storage = b.getIntegerType(type.getStorageTypeIntegralWidth());
  if (storage == i32)
    return integer;
  return arith::TruncIOp::create(b, loc, storage, integer);
}

namespace {

/// x / scale, rounded half to even, plus the zero point, saturated (ONNX's
/// QuantizeLinear: np.rint(x / y_scale), then + zero point, then clip).
struct QuantizeLowering : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Type real = op.getInput().getType().getElementType();
    ChannelParameters parameters(rewriter, loc, op.getType(), real);
    SmallVector<Value> operands{adaptor.getInput()};
    parameters.addOperands(operands);
    Value result = buildElementwise(
        rewriter, loc, resultType, operands,
        [&](OpBuilder &b, Location at, ValueRange args) {
          Value scaled = arith::DivFOp::create(b, at, args[0], parameters.scale(b, at, args));
          Value rounded = math::RoundEvenOp::create(b, at, scaled);
          Value shifted =
              arith::AddFOp::create(b, at, rounded, parameters.zeroPoint(b, at, args));
          return saturateToStorage(b, at, shifted, parameters.type);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// (q - zero point) * scale in the expressed type (ONNX's DequantizeLinear:
/// x.astype(float32) - zero point, times the scale).
struct DequantizeLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    Type real = resultType.getElementType();
    ChannelParameters parameters(rewriter, loc, op.getInput().getType(), real);
    bool isUnsigned = !parameters.type.isSigned();
    SmallVector<Value> operands{adaptor.getInput()};
    parameters.addOperands(operands);
    Value result = buildElementwise(
        rewriter, loc, resultType, operands,
        [&](OpBuilder &b, Location at, ValueRange args) {
          Value integer = extendToI32(b, at, args[0], isUnsigned);
          Value value = arith::SIToFPOp::create(b, at, real, integer);
          Value centered =
              arith::SubFOp::create(b, at, value, parameters.zeroPoint(b, at, args));
          return arith::MulFOp::create(b, at, centered, parameters.scale(b, at, args));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// table[storage - storage minimum], the table read with tensor.extract.
struct LookupLowering : OpConversionPattern<LookupOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LookupOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    quant::QuantizedType input = getQuantizedType(op.getInput().getType());
    bool isUnsigned = !input.isSigned();
    int64_t offset = -input.getStorageTypeMin();
    Value table = adaptor.getTable();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getInput(),
        [&](OpBuilder &b, Location at, ValueRange args) -> Value {
          Value integer = extendToI32(b, at, args[0], isUnsigned);
          if (offset)
            integer = arith::AddIOp::create(
                b, at, integer,
                arith::ConstantOp::create(b, at, b.getI32IntegerAttr(offset)));
          Value index = arith::IndexCastOp::create(b, at, b.getIndexType(), integer);
          return tensor::ExtractOp::create(b, at, table, index);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// max(q, zero point): the quantized value of 0, exact since quantization
/// is monotone.
struct QuantizedReluLowering : OpConversionPattern<ReluOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    quant::QuantizedType type = getQuantizedType(op.getType());
    if (!type)
      return failure();
    auto resultType = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getInput(),
        [&](OpBuilder &b, Location at, ValueRange args) {
          Value zeroPoint = storageConstant(b, at, type, quantParams(type).zeroPoint);
          ScalarBuilder scalar(b, at, args[0].getType(), !type.isSigned());
          return scalar.max(args[0], zeroPoint);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateQuantizationToLinalgPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<QuantizeLowering, DequantizeLowering, LookupLowering, QuantizedReluLowering>(
      converter, patterns.getContext());
}

} // namespace tessel

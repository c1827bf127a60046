//===- QuantizationFloat.h - Quantized ops as float formulas ----*- C++ -*-===//
//
// The form of ONNX's quantized operators that quantized types cannot hold
// (QuantizationFloat.cpp): each handler imports its node as float
// arithmetic computing the operator's reference result.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_OPS_QUANTIZATIONFLOAT_H
#define TESSEL_COMPILER_ONNX_OPS_QUANTIZATIONFLOAT_H

#include "compiler/onnx/NodeImporter.h"

namespace tessel::onnx_import {

mlir::LogicalResult importFloatQuantizeLinear(NodeImporter &node);
mlir::LogicalResult importFloatDequantizeLinear(NodeImporter &node);
mlir::LogicalResult importFloatQLinearMatMul(NodeImporter &node);
mlir::LogicalResult importFloatQLinearConv(NodeImporter &node);
mlir::LogicalResult importFloatMatMulInteger(NodeImporter &node);
mlir::LogicalResult importFloatConvInteger(NodeImporter &node);
mlir::LogicalResult importFloatDynamicQuantizeLinear(NodeImporter &node);

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_OPS_QUANTIZATIONFLOAT_H

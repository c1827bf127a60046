// RUN: tessel-opt %s --tessel-expand-quantized-ops --split-input-file | FileCheck %s --check-prefix=FLOAT
// RUN: tessel-opt %s --tessel-expand-quantized-ops=all --canonicalize --split-input-file | FileCheck %s --check-prefix=ALL

// A quantized add means quantize(dequantize(a) + dequantize(b)); every
// quantized op becomes float arithmetic on storage integers with `all`.
// FLOAT-LABEL: @add
// FLOAT: %[[A:.+]] = tessel.dequantize %arg0
// FLOAT: %[[B:.+]] = tessel.dequantize %arg1
// FLOAT: %[[S:.+]] = tessel.add %[[A]], %[[B]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// FLOAT: tessel.quantize %[[S]]
// ALL-LABEL: @add
// ALL-NOT: tessel.quantize
// ALL-NOT: tessel.dequantize
// ALL: tessel.div
// ALL: tessel.round
// ALL: tessel.clip
// ALL: tessel.cast {{.*}} -> tensor<4xui8>
func.func @add(%a: tensor<4x!quant.uniform<u8:f32, 0.1:3>>, %b: tensor<4x!quant.uniform<u8:f32, 0.2>>)
    -> tensor<4x!quant.uniform<u8:f32, 0.25:5>> {
  %0 = tessel.add %a, %b : (tensor<4x!quant.uniform<u8:f32, 0.1:3>>, tensor<4x!quant.uniform<u8:f32, 0.2>>)
      -> tensor<4x!quant.uniform<u8:f32, 0.25:5>>
  return %0 : tensor<4x!quant.uniform<u8:f32, 0.25:5>>
}

// -----

// The oracle of a quantized matmul: the f32 product of the centred storage
// values, times 0.5 * 0.25 / 1.0, rounded, shifted by the zero point 3,
// saturated to [0, 255]. The integer matmul stays without `all`.
// FLOAT-LABEL: @matmul
// FLOAT: tessel.matmul %arg0, %{{.+}} : (tensor<2x3x!quant.uniform
// ALL-LABEL: @matmul
// ALL-DAG: %[[SCALE:.+]] = tessel.constant dense<1.250000e-01> : tensor<f32>
// ALL-DAG: %[[ZERO:.+]] = tessel.constant dense<1.280000e+02> : tensor<f32>
// ALL: %[[A:.+]] = tessel.cast %{{.+}} : tensor<2x3xui8> -> tensor<2x3xf32>
// ALL: %[[CA:.+]] = tessel.sub %[[A]], %[[ZERO]]
// ALL: %[[P:.+]] = tessel.matmul %[[CA]], %{{.+}} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
// ALL: %[[M:.+]] = tessel.mul %[[P]], %[[SCALE]]
// ALL: tessel.round %[[M]]
// ALL: tessel.clip
// ALL: tessel.cast {{.*}} -> tensor<2x2xui8>
func.func @matmul(%a: tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2x2x!quant.uniform<u8:f32, 1.0:3>> {
  %w = tessel.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.25>>
  %0 = tessel.matmul %a, %w : (tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, tensor<3x2x!quant.uniform<i8:f32, 0.25>>)
      -> tensor<2x2x!quant.uniform<u8:f32, 1.0:3>>
  return %0 : tensor<2x2x!quant.uniform<u8:f32, 1.0:3>>
}

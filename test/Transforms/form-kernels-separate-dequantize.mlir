// RUN: tessel-opt %s --tessel-form-kernels="separate-dequantize=true" | FileCheck %s
// RUN: tessel-opt %s --tessel-form-kernels | FileCheck %s --check-prefix=FUSED

// A quantized product whose result is dequantized and added to: with
// separate-dequantize the product ends its kernel with its quantized result
// (what the NPU runs) and the dequantize starts the next, which the add
// joins; by default all three are one kernel.
// CHECK-LABEL: func.func private @k0_matmul
// CHECK-SAME: -> tensor<2x2x!quant.uniform<u8:f32, 1.000000e+00:3>>
// CHECK-NOT: tessel.dequantize
// CHECK: return
// CHECK-LABEL: func.func private @k1_dequantize_add
// CHECK: tessel.dequantize
// CHECK: tessel.add
// CHECK-LABEL: func.func @matmul
// CHECK: call @k0_matmul
// CHECK: call @k1_dequantize_add
// FUSED-LABEL: func.func private @k0_matmul_dequantize_add
// FUSED-NOT: func.func private @k1
func.func @matmul(%a: tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w = tessel.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.25>>
  %0 = tessel.matmul %a, %w : (tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, tensor<3x2x!quant.uniform<i8:f32, 0.25>>)
      -> tensor<2x2x!quant.uniform<u8:f32, 1.0:3>>
  %1 = tessel.dequantize %0 : tensor<2x2x!quant.uniform<u8:f32, 1.0:3>> -> tensor<2x2xf32>
  %2 = tessel.add %1, %b : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %2 : tensor<2x2xf32>
}

// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// Quantized tensors carry MLIR's uniform quant types; every op that computes
// on them round-trips with its types.

!x = !quant.uniform<u8:f32, 0.05:128>
!w = !quant.uniform<i8:f32:0, {0.01, 0.02}>
!b = !quant.uniform<i32:f32:0, {5.0e-04, 1.0e-03}>
!y = !quant.uniform<u8:f32, 0.1:3>

// CHECK-LABEL: @quantize_dequantize
// CHECK: tessel.quantize %{{.*}} : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 5.000000e-02:128>>
// CHECK: tessel.requantize %{{.*}} -> tensor<4x!quant.uniform<i8:f32, 2.000000e-01:-3>>
// CHECK: tessel.dequantize %{{.*}} : tensor<4x!quant.uniform<i8:f32, 2.000000e-01:-3>> -> tensor<4xf32>
func.func @quantize_dequantize(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = tessel.quantize %x : tensor<4xf32> -> tensor<4x!x>
  %r = tessel.requantize %q : tensor<4x!x> -> tensor<4x!quant.uniform<i8:f32, 0.2:-3>>
  %d = tessel.dequantize %r : tensor<4x!quant.uniform<i8:f32, 0.2:-3>> -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// CHECK-LABEL: @quantized_constant
// CHECK: tessel.constant dense<[-3, 7]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32:0, {1.000000e-02,2.000000e-02}>>
// CHECK: tessel.constant dense<1.000000e+00> : tensor<2xf32>
func.func @quantized_constant() -> (tensor<2x!w>, tensor<2xf32>) {
  %0 = tessel.constant dense<[-3, 7]> : tensor<2xi8> -> tensor<2x!w>
  %1 = tessel.constant dense<1.0> : tensor<2xf32>
  return %0, %1 : tensor<2x!w>, tensor<2xf32>
}

// CHECK-LABEL: @quantized_conv
// CHECK: tessel.conv %{{.*}}, %{{.*}}, %{{.*}} {{.*}} -> tensor<1x2x4x4x!quant.uniform<u8:f32, 1.000000e-01:3>>
// CHECK: tessel.relu %{{.*}} : tensor<1x2x4x4x!quant.uniform<u8:f32, 1.000000e-01:3>>
func.func @quantized_conv(%x: tensor<1x3x4x4x!x>, %w: tensor<2x3x3x3x!w>, %b: tensor<2x!b>)
    -> tensor<1x2x4x4x!y> {
  %0 = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
                               pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x4x4x!x>, tensor<2x3x3x3x!w>, tensor<2x!b>) -> tensor<1x2x4x4x!y>
  %1 = tessel.relu %0 : tensor<1x2x4x4x!y>
  return %1 : tensor<1x2x4x4x!y>
}

// An i32 result is the accumulator itself (ONNX ConvInteger, MatMulInteger).
// CHECK-LABEL: @accumulator_matmul
// CHECK: tessel.matmul {{.*}} -> tensor<3x2x!quant.uniform<i32:f32:1, {5.000000e-04,1.000000e-03}>>
func.func @accumulator_matmul(%a: tensor<3x4x!x>, %b: tensor<4x2x!quant.uniform<i8:f32:1, {0.01, 0.02}>>)
    -> tensor<3x2x!quant.uniform<i32:f32:1, {5.0e-04, 1.0e-03}>> {
  %0 = tessel.matmul %a, %b : (tensor<3x4x!x>, tensor<4x2x!quant.uniform<i8:f32:1, {0.01, 0.02}>>)
      -> tensor<3x2x!quant.uniform<i32:f32:1, {5.0e-04, 1.0e-03}>>
  return %0 : tensor<3x2x!quant.uniform<i32:f32:1, {5.0e-04, 1.0e-03}>>
}

// CHECK-LABEL: @residual_and_pools
// CHECK: tessel.add {{.*}} -> tensor<1x2x4x4x!quant.uniform<u8:f32, 2.000000e-01>>
// CHECK: tessel.max_pool {{.*}} -> tensor<1x2x2x2x!quant.uniform<u8:f32, 2.000000e-01>>
// CHECK: tessel.global_average_pool {{.*}} -> tensor<1x2x1x1x!quant.uniform<u8:f32, 5.000000e-02>>
func.func @residual_and_pools(%a: tensor<1x2x4x4x!y>, %b: tensor<1x2x4x4x!x>)
    -> (tensor<1x2x2x2x!quant.uniform<u8:f32, 0.2>>, tensor<1x2x1x1x!quant.uniform<u8:f32, 0.05>>) {
  %0 = tessel.add %a, %b : (tensor<1x2x4x4x!y>, tensor<1x2x4x4x!x>) -> tensor<1x2x4x4x!quant.uniform<u8:f32, 0.2>>
  %1 = tessel.max_pool %0 {ceil_mode = false, dilations = array<i64: 1, 1>,
                           kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                           strides = array<i64: 2, 2>}
      : (tensor<1x2x4x4x!quant.uniform<u8:f32, 0.2>>) -> tensor<1x2x2x2x!quant.uniform<u8:f32, 0.2>>
  %2 = tessel.global_average_pool %0 : (tensor<1x2x4x4x!quant.uniform<u8:f32, 0.2>>)
      -> tensor<1x2x1x1x!quant.uniform<u8:f32, 0.05>>
  return %1, %2 : tensor<1x2x2x2x!quant.uniform<u8:f32, 0.2>>, tensor<1x2x1x1x!quant.uniform<u8:f32, 0.05>>
}

// CHECK-LABEL: @lookup
// CHECK: tessel.lookup %{{.*}}, %{{.*}} : (tensor<8x!quant.uniform<u8:f32, 5.000000e-02:128>>, tensor<256x!quant.uniform<u8:f32, 3.906250e-03>>)
func.func @lookup(%x: tensor<8x!x>, %table: tensor<256x!quant.uniform<u8:f32, 0.00390625>>)
    -> tensor<8x!quant.uniform<u8:f32, 0.00390625>> {
  %0 = tessel.lookup %x, %table : (tensor<8x!x>, tensor<256x!quant.uniform<u8:f32, 0.00390625>>)
      -> tensor<8x!quant.uniform<u8:f32, 0.00390625>>
  return %0 : tensor<8x!quant.uniform<u8:f32, 0.00390625>>
}

// CHECK-LABEL: @storage_cast
// CHECK: tessel.bitcast %{{.*}} : tensor<4xui8> -> tensor<4x!quant.uniform<u8:f32, 5.000000e-02:128>>
func.func @storage_cast(%x: tensor<4xui8>) -> tensor<4x!x> {
  %0 = tessel.bitcast %x : tensor<4xui8> -> tensor<4x!x>
  return %0 : tensor<4x!x>
}

// RUN: tessel-opt %s --tessel-fold-batch-norm --split-input-file | FileCheck %s

// A batch norm after a convolution with constant weights scales the
// weights and shifts the bias. With variance 0 and epsilon 1, the scale is
// s = [2, 4] and the shift t = bias - mean * s = [1 - 4, 0 - 0] = [-3, 0]:
// weights [0.5, -2] * s = [1, -8], bias [1, 6] * s + t = [-1, 24].
// CHECK-LABEL: @into_conv
func.func @into_conv(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // CHECK-DAG: %[[W:.+]] = tessel.constant dense<{{\[}}[{{\[}}[1.000000e+00]]], {{\[}}[{{\[}}-8.000000e+00]]]]> : tensor<2x1x1x1xf32>
  // CHECK-DAG: %[[B:.+]] = tessel.constant dense<[-1.000000e+00, 2.400000e+01]> : tensor<2xf32>
  // CHECK: %[[C:.+]] = tessel.conv %arg0, %[[W]], %[[B]]
  // CHECK-NOT: tessel.batch_norm
  // CHECK: return %[[C]]
  %w = tessel.constant dense<[[[[0.5]]], [[[-2.0]]]]> : tensor<2x1x1x1xf32>
  %b = tessel.constant dense<[1.0, 6.0]> : tensor<2xf32>
  %c = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %scale = tessel.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = tessel.constant dense<[2.0, 0.0]> : tensor<2xf32>
  %var = tessel.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %0 = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : tensor<1x2x4x4xf32>, tensor<2xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// Without a convolution to merge into, constant parameters give a
// per-channel multiply-add with [C, 1, 1] coefficients.
// CHECK-LABEL: @standalone
func.func @standalone(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  // CHECK-DAG: %[[S:.+]] = tessel.constant dense<{{\[}}[{{\[}}2.000000e+00]], {{\[}}[4.000000e+00]]]> : tensor<2x1x1xf32>
  // CHECK-DAG: %[[T:.+]] = tessel.constant dense<{{\[}}[{{\[}}-3.000000e+00]], {{\[}}[0.000000e+00]]]> : tensor<2x1x1xf32>
  // CHECK: %[[M:.+]] = tessel.mul %arg0, %[[S]]
  // CHECK: tessel.add %[[M]], %[[T]]
  %scale = tessel.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = tessel.constant dense<[2.0, 0.0]> : tensor<2xf32>
  %var = tessel.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %0 = tessel.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : tensor<1x2x3x3xf32>, tensor<2xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Runtime parameters leave the batch norm in place.
// CHECK-LABEL: @runtime_parameters
func.func @runtime_parameters(%x: tensor<1x2x3x3xf32>, %p: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  // CHECK: tessel.batch_norm
  %0 = tessel.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0 : f32} : tensor<1x2x3x3xf32>, tensor<2xf32>
  return %0 : tensor<1x2x3x3xf32>
}

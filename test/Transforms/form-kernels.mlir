// RUN: tessel-opt %s --tessel-form-kernels="max-inlined-constant-elements=4" --split-input-file | FileCheck %s

// Conv + Add + Relu: the elementwise consumers join the convolution's
// kernel; the residual operand becomes a kernel argument and the weights
// stay in the entry function as constants.
// CHECK-LABEL: func.func private @k0_conv_add_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4x4xf32>, %[[W:.+]]: tensor<3x2x1x1xf32>, %[[R:.+]]: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
// CHECK-SAME: attributes {tessel.kernel}
// CHECK: %[[C:.+]] = tessel.conv %[[X]], %[[W]]
// CHECK: %[[A:.+]] = tessel.add %[[C]], %[[R]]
// CHECK: %[[Y:.+]] = tessel.relu %[[A]]
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func @residual
// CHECK: %[[WC:.+]] = tessel.constant
// CHECK: %[[K:.+]] = call @k0_conv_add_relu(%arg0, %[[WC]], %arg1)
// CHECK: return %[[K]]
func.func @residual(%x: tensor<1x2x4x4xf32>, %r: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %w = tessel.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %1 = tessel.add %0, %r : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %2 = tessel.relu %1 : tensor<1x3x4x4xf32>
  return %2 : tensor<1x3x4x4xf32>
}

// -----

// A producer with a second user cannot take its consumer in: both
// kernels would need the intermediate. Small constants are cloned into
// the kernel instead of passed.
// CHECK-LABEL: func.func private @k0_relu
// CHECK-LABEL: func.func private @k1_add
// CHECK: tessel.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: tessel.add
// CHECK-LABEL: func.func @shared
// CHECK: %[[A:.+]] = call @k0_relu(%arg0)
// CHECK: %[[B:.+]] = call @k1_add(%[[A]])
// CHECK: return %[[A]], %[[B]]
func.func @shared(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %one = tessel.constant dense<1.0> : tensor<4xf32>
  %0 = tessel.relu %x : tensor<4xf32>
  %1 = tessel.add %0, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// An elementwise op that broadcasts its producer to a larger shape starts
// its own kernel; reshapes stay in the entry function as views.
// CHECK-LABEL: func.func private @k0_relu
// CHECK-LABEL: func.func private @k1_mul
// CHECK-LABEL: func.func @broadcast
// CHECK: call @k0_relu
// CHECK: tessel.reshape
// CHECK: call @k1_mul
func.func @broadcast(%x: tensor<4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = tessel.relu %x : tensor<4xf32>
  %1 = tessel.reshape %0 : tensor<4xf32> -> tensor<1x4xf32>
  %2 = tessel.mul %1, %y : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}

// -----

// SiLU reads the convolution's result twice (x * sigmoid(x)): the sigmoid
// and the multiply still join the convolution's kernel, as nothing else
// needs x.
// CHECK-LABEL: func.func private @k0_conv_sigmoid_mul
// CHECK: tessel.conv
// CHECK: tessel.sigmoid
// CHECK: tessel.mul
// CHECK-LABEL: func.func @silu
// CHECK: call @k0_conv_sigmoid_mul
// CHECK-NOT: call
func.func @silu(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %w = tessel.constant dense<0.5> : tensor<3x2x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %s = tessel.sigmoid %c : tensor<1x3x4x4xf32>
  %y = tessel.mul %c, %s : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %y : tensor<1x3x4x4xf32>
}

// -----

// When x is also a result of the model, the SiLU cannot take it into its
// kernel: the convolution keeps a kernel of its own.
// CHECK-LABEL: func.func private @k0_conv(
// CHECK-LABEL: func.func private @k1_sigmoid_mul(
func.func @silu_shared(%x: tensor<1x2x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %w = tessel.constant dense<0.5> : tensor<3x2x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %s = tessel.sigmoid %c : tensor<1x3x4x4xf32>
  %y = tessel.mul %c, %s : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %y, %c : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}

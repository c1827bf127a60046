// RUN: tessel-opt %s --tessel-channels-last --canonicalize --split-input-file | FileCheck %s

// Conv -> Relu -> Conv: both convolutions run NHWC; the transposes between
// them cancel, leaving one into NHWC at the input and one back at the
// output. The weights are transposed to HWCF at compile time.
// CHECK-LABEL: @conv_relu_conv
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x8x8xf32>)
// CHECK-DAG: %[[W1:.+]] = tessel.constant dense<{{.*}}> : tensor<3x3x3x4xf32>
// CHECK-DAG: %[[W2:.+]] = tessel.constant dense<{{.*}}> : tensor<1x1x4x2xf32>
// CHECK: %[[IN:.+]] = tessel.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
// CHECK: %[[C1:.+]] = tessel.conv %[[IN]], %[[W1]] {channels_last, {{.*}}} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[R:.+]] = tessel.relu %[[C1]] : tensor<1x8x8x4xf32>
// CHECK: %[[C2:.+]] = tessel.conv %[[R]], %[[W2]] {channels_last, {{.*}}} : (tensor<1x8x8x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x8x8x2xf32>
// CHECK: %[[OUT:.+]] = tessel.transpose %[[C2]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x8x8x2xf32>) -> tensor<1x2x8x8xf32>
// CHECK: return %[[OUT]]
func.func @conv_relu_conv(%x: tensor<1x3x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %w1 = tessel.constant dense<0.5> : tensor<4x3x3x3xf32>
  %w2 = tessel.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]], [[[5.0]], [[6.0]], [[7.0]], [[8.0]]]]> : tensor<2x4x1x1xf32>
  %c1 = tessel.conv %x, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r = tessel.relu %c1 : tensor<1x4x8x8xf32>
  %c2 = tessel.conv %r, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x8x8xf32>
  return %c2 : tensor<1x2x8x8xf32>
}

// -----

// The HWCF weight holds w[f, c, kh, kw] at [kh, kw, c, f]: for the 1x1
// weight above, [[[[1, 5], [2, 6], [3, 7], [4, 8]]]].
// CHECK-LABEL: @weight_layout
// CHECK: tessel.constant dense<{{\[\[\[\[}}1.000000e+00, 5.000000e+00], [2.000000e+00, 6.000000e+00], [3.000000e+00, 7.000000e+00], [4.000000e+00, 8.000000e+00]]]]> : tensor<1x1x4x2xf32>
func.func @weight_layout(%x: tensor<1x4x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %w = tessel.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]], [[[5.0]], [[6.0]], [[7.0]], [[8.0]]]]> : tensor<2x4x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x8x8xf32>
  return %c : tensor<1x2x8x8xf32>
}

// -----

// A residual block: the add of two NHWC results stays NHWC, and a per-channel
// bias [C, 1, 1] (NCHW broadcasting) becomes [1, 1, 1, C] at compile time.
// Max pooling runs NHWC too; the global average pool's [1, 1, 1, C] result
// reaches NCHW [1, C, 1, 1] through a reshape, not a transpose.
// CHECK-LABEL: @residual_pool
// CHECK-DAG: %[[BIAS:.+]] = tessel.constant dense<{{.*}}> : tensor<1x1x1x4xf32>
// CHECK: tessel.max_pool %{{.+}} {{{.*}}channels_last{{.*}}} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: tessel.conv {{.*}}channels_last
// CHECK: %[[SUM:.+]] = tessel.add %{{.+}}, %{{.+}} : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[BIASED:.+]] = tessel.add %[[SUM]], %[[BIAS]] : (tensor<1x4x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[POOL:.+]] = tessel.global_average_pool %[[BIASED]] {channels_last} : (tensor<1x4x4x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK: %[[OUT:.+]] = tessel.reshape %[[POOL]] : tensor<1x1x1x4xf32> -> tensor<1x4x1x1xf32>
// CHECK-NOT: tessel.transpose
// CHECK: return %[[OUT]]
func.func @residual_pool(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32> {
  %w = tessel.constant dense<0.25> : tensor<4x4x1x1xf32>
  %bias = tessel.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %p = tessel.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %c = tessel.conv %p, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %s = tessel.add %c, %p : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %b = tessel.add %s, %bias : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %g = tessel.global_average_pool %b : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
  return %g : tensor<1x4x1x1xf32>
}

// -----

// Grouped convolutions that are not depthwise stay NCHW, and so does an op
// whose other operand is a full-size NCHW value that is not transposed: the
// transpose back to NCHW stays in front of it.
// CHECK-LABEL: @stays_nchw
// CHECK: tessel.conv %arg0, %{{.+}} {dilations = array<i64: 1, 1>, group = 2 : i64
// CHECK-NOT: channels_last
// CHECK: tessel.add
func.func @stays_nchw(%x: tensor<1x4x4x4xf32>, %y: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = tessel.constant dense<0.25> : tensor<4x2x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  %s = tessel.add %c, %y : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %s : tensor<1x4x4x4xf32>
}

// -----

// Depthwise: the [C, 1, KH, KW] weight becomes [KH, KW, 1, C].
// CHECK-LABEL: @depthwise
// CHECK: tessel.conv %{{.+}}, %{{.+}} {channels_last, {{.*}}group = 4 : i64{{.*}}} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x4x4x4xf32>
func.func @depthwise(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x4x4xf32> {
  %w = tessel.constant dense<0.5> : tensor<4x1x3x3xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %c : tensor<1x4x4x4xf32>
}

// -----

// A result read in any layout (a tensor that calibration watches) is
// returned as the convolution computes it, NHWC; the other result still
// goes back to NCHW.
// CHECK-LABEL: @watched_any_layout
// CHECK-SAME: -> (tensor<1x2x4x4xf32>, tensor<1x4x4x2xf32> {tessel.any_layout})
// CHECK: %[[C:.+]] = tessel.conv {{.*}} {channels_last, {{.*}}} : (tensor<1x4x4x3xf32>, tensor<1x1x3x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[R:.+]] = tessel.relu %[[C]] : tensor<1x4x4x2xf32>
// CHECK: %[[BACK:.+]] = tessel.transpose %[[R]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[BACK]], %[[R]]
func.func @watched_any_layout(%x: tensor<1x3x4x4xf32>)
    -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> {tessel.any_layout}) {
  %w = tessel.constant dense<0.5> : tensor<2x3x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = tessel.relu %c : tensor<1x2x4x4xf32>
  return %r, %r : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// A 2-D convolution pads its input and accumulates into the broadcast bias.
// CHECK-LABEL: @conv
// CHECK: %[[P:.+]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[B:.+]] = linalg.generic {{.*}} ins(%arg2 : tensor<8xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME: ins(%[[P]], %arg1 : tensor<1x3x34x34xf32>, tensor<8x3x3x3xf32>) outs(%[[B]] : tensor<1x8x16x16xf32>)
func.func @conv(%x: tensor<1x3x32x32xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x16x16xf32> {
  %0 = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// -----

// One filter per channel is a depthwise convolution.
// CHECK-LABEL: @depthwise
// CHECK: tensor.collapse_shape %arg1 {{\[}}[0, 1], [2], [3]] : tensor<4x1x3x3xf32> into tensor<4x3x3xf32>
// CHECK: linalg.depthwise_conv_2d_nchw_chw
func.func @depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// Other groupings split the channel axes into [groups, channels per group].
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-LABEL: @grouped
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 8, 8]
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x3x6x6xf32> into tensor<1x6x6x6xf32>
func.func @grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

// Max pooling pads with -inf, including the extra end row that ceil_mode
// needs, and reduces over a window operand.
// CHECK-LABEL: @max_pool_ceil
// CHECK: %[[NEG:.+]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %arg0 low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: tensor.empty() : tensor<3x3xf32>
// CHECK: arith.maximumf
func.func @max_pool_ceil(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = tessel.max_pool %x {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                           pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// MaxPool's Indices carry (value, index) pairs through each window; a
// position wins if it lies inside the input and is larger than the value so
// far, or is the first inside. Column-major indices step by 1 along H and
// by H = 4 along W.
// CHECK-LABEL: @max_pool_indices
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[VALUES:.+]] = linalg.fill
// CHECK: %[[START:.+]] = linalg.fill ins(%c-1_i64 : i64)
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[VALUES]], %[[START]] : tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
// CHECK: linalg.index 2
// CHECK: arith.constant 4 : i64
// CHECK: arith.cmpf ogt
// CHECK: linalg.yield
func.func @max_pool_indices(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xi64> {
  %0 = tessel.max_pool_indices %x {ceil_mode = false, column_major = true,
                                   dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                                   pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xi64>
  return %0 : tensor<1x2x2x2xi64>
}

// -----

// Average pooling without count_include_pad divides each window by the
// number of input elements it covers: 4 in the corner, 6 on the edges,
// 9 inside for a 3x3 window with padding 1 on a 4x4 input.
// CHECK-LABEL: @average_pool_exclude_pad
// CHECK: arith.constant dense<{{\[}}[4.000000e+00, 6.000000e+00, 6.000000e+00, 4.000000e+00], [6.000000e+00, 9.000000e+00, 9.000000e+00, 6.000000e+00]
// CHECK: arith.divf
func.func @average_pool_exclude_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %0 = tessel.average_pool %x {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>,
                               kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// With count_include_pad every window counts 9: one scalar divisor.
// CHECK-LABEL: @average_pool_include_pad
// CHECK: arith.constant 9.000000e+00 : f32
// CHECK: arith.divf
func.func @average_pool_include_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %0 = tessel.average_pool %x {ceil_mode = false, count_include_pad = true, dilations = array<i64: 1, 1>,
                               kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// CHECK-LABEL: @global_average_pool
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.constant 4.900000e+01 : f32
// CHECK: arith.divf
func.func @global_average_pool(%x: tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32> {
  %0 = tessel.global_average_pool %x : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  return %0 : tensor<1x8x1x1xf32>
}

// -----

// A channels-last convolution of bf16 operands into f32 (--precision bf16):
// linalg.conv_2d_nhwc_hwcf's iteration space as a generic whose body widens
// the operands; the padding is a bf16 zero.
// CHECK-LABEL: @conv_bf16_channels_last
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : bf16
// CHECK: tensor.pad
// CHECK: tensor.yield %[[ZERO]] : bf16
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME: ins(%{{.+}}, %arg1 : tensor<1x10x10x3xbf16>, tensor<3x3x3x8xbf16>)
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @conv_bf16_channels_last(%x: tensor<1x8x8x3xbf16>, %w: tensor<3x3x3x8xbf16>) -> tensor<1x8x8x8xf32> {
  %0 = tessel.conv %x, %w {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x3xbf16>, tensor<3x3x3x8xbf16>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

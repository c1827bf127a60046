// RUN: tessel-opt %s --tessel-x86-vectorize="vector-width=8" --canonicalize --cse --split-input-file | FileCheck %s

// A convolution becomes register blocks: 8 output channels x one 8-wide row
// segment, accumulated over (c, kh, kw) in eight loop-carried vectors. Each
// step loads one input row and broadcasts one filter scalar per channel.
// CHECK-LABEL: @conv
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c8
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c1
// CHECK-COUNT-8: vector.transfer_read {{.*}} : tensor<1x16x8x8xf32>, vector<8xf32>
// CHECK: scf.for {{.*}} to %c4 {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.for {{.*}} to %c3
// CHECK: scf.for {{.*}} to %c3
// CHECK: vector.transfer_read {{.*}} : tensor<1x4x10x10xf32>, vector<8xf32>
// CHECK-COUNT-8: vector.broadcast
// CHECK-COUNT-8: vector.transfer_write {{.*}} : vector<8xf32>, tensor<1x8x1x8xf32>
func.func @conv(%input: tensor<1x4x10x10xf32>, %filter: tensor<16x4x3x3xf32>,
                %init: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%input, %filter : tensor<1x4x10x10xf32>, tensor<16x4x3x3xf32>)
      outs(%init : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %0 : tensor<1x16x8x8xf32>
}

// -----

// A row of 12 columns with AVX2 is one whole vector and one whose lanes past
// the row are masked (a transfer that may run out of bounds), never an
// odd-sized vector that LLVM would legalize through the stack.
// CHECK-LABEL: @odd_row
// CHECK-NOT: vector<12xf32>
// CHECK-NOT: vector<4xf32>
// CHECK: vector.transfer_read %{{.+}}[%c0, %{{.+}}, %{{.+}}, %c0], %{{.+}} {in_bounds = [true]} : tensor<1x8x12x12xf32>, vector<8xf32>
// CHECK-NEXT: vector.transfer_read %{{.+}}[%c0, %c0, %c0, %c8], %{{[^ ]+}} : tensor<1x4x1x12xf32>, vector<8xf32>
func.func @odd_row(%input: tensor<1x8x14x14xf32>, %filter: tensor<8x8x3x3xf32>,
                   %init: tensor<1x8x12x12xf32>) -> tensor<1x8x12x12xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%input, %filter : tensor<1x8x14x14xf32>, tensor<8x8x3x3xf32>)
      outs(%init : tensor<1x8x12x12xf32>) -> tensor<1x8x12x12xf32>
  return %0 : tensor<1x8x12x12xf32>
}

// -----

// Depthwise: each channel has its own input row and filter scalar, and only
// (kh, kw) are reduced. With stride 2 a row is read contiguously (15 elements,
// masked to 16 lanes) and every other lane picked by a shuffle.
// CHECK-LABEL: @depthwise
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: scf.for {{.*}} to %c3
// CHECK: scf.for {{.*}} to %c3
// CHECK: vector.transfer_read %{{.+}}[%c0], %{{[^ ]+}} : tensor<15xf32>, vector<16xf32>
// CHECK-NEXT: vector.shuffle %{{.+}}, %{{.+}} [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK: tensor.extract %{{.+}}[%c0, %{{.+}}, %{{.+}}] : tensor<8x3x3xf32>
// CHECK: vector.broadcast
// CHECK: arith.mulf {{.*}} : vector<8xf32>
func.func @depthwise(%input: tensor<1x8x18x18xf32>, %filter: tensor<8x3x3xf32>,
                     %init: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %0 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%input, %filter : tensor<1x8x18x18xf32>, tensor<8x3x3xf32>)
      outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// -----

// Booleans are bytes in memory while LLVM stores vectors of i1 as packed
// bits, so ops on i1 are not vectorized.
// CHECK-LABEL: @booleans
// CHECK-NOT: vector.transfer_write
// CHECK: linalg.generic
func.func @booleans(%x: tensor<64xf32>, %init: tensor<64xi1>) -> tensor<64xi1> {
  %zero = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%init : tensor<64xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf olt, %in, %zero : f32
    linalg.yield %c : i1
  } -> tensor<64xi1>
  return %0 : tensor<64xi1>
}

// -----

// Rows of 20 with AVX2: the first 16 columns in whole vectors, the last 4
// as one masked vector (lanes 4-7 neither read nor written), never a
// vector<4xf32> or tiles of one element.
// CHECK-LABEL: @row20
// CHECK-NOT: vector<4xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [4, 16] [1, 1] : tensor<4x20xf32> to tensor<4x16xf32>
// CHECK: vector.transfer_read {{.*}} {in_bounds = [true, true]} : tensor<4x20xf32>, vector<1x16xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, 16] [4, 4] [1, 1] : tensor<4x20xf32> to tensor<4x4xf32>
// CHECK: %[[MASK:.+]] = vector.constant_mask [1, 4] : vector<1x8xi1>
// CHECK-NEXT: vector.transfer_read %{{.+}}[%c0, %c0], %{{.+}}, %[[MASK]] {{.*}} : tensor<1x4xf32>, vector<1x8xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%c0, %c0], %[[MASK]] {{.*}} : vector<1x8xf32>, tensor<1x4xf32>
func.func @row20(%x: tensor<4x20xf32>, %init: tensor<4x20xf32>) -> tensor<4x20xf32> {
  %zero = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x20xf32>) outs(%init : tensor<4x20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x20xf32>
  return %0 : tensor<4x20xf32>
}

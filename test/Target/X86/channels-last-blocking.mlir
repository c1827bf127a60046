// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=8" --tessel-x86-vectorize="vector-width=8" --canonicalize --cse --split-input-file | FileCheck %s

// An NHWC convolution becomes blocks of 4 output pixels x 16 channels (8
// AVX2 accumulators), channels outermost. The 3x3 window is unrolled into
// nine loops over the input channels; each step loads two filter vectors
// and broadcasts one input element per pixel (pixel p of the block reads
// input column kw + p, stride 1).
// CHECK-LABEL: @conv
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
// CHECK: scf.for %[[OH:.+]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[OW:.+]] = %c0 to %c8 step %c4
// CHECK: %[[IN:.+]] = tensor.extract_slice %{{.+}}[0, %[[OH]], %[[OW]], 0] [1, 3, 6, 8] [1, 1, 1, 1]
// CHECK-COUNT-8: vector.transfer_read {{.*}} : tensor<1x2x8x16xf32>, vector<8xf32>
// CHECK: scf.for %[[C:.+]] = %c0 to %c8 step %c1 {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NEXT: vector.transfer_read %{{.+}}[%c0, %c0, %[[C]], %c0]{{.*}} : tensor<3x3x8x16xf32>, vector<8xf32>
// CHECK-NEXT: vector.transfer_read %{{.+}}[%c0, %c0, %[[C]], %c8]{{.*}} : tensor<3x3x8x16xf32>, vector<8xf32>
// CHECK-NEXT: tensor.extract %[[IN]][%c0, %c0, %c0, %[[C]]]
// CHECK-NEXT: vector.broadcast
// CHECK-NEXT: vector.fma
// CHECK-NEXT: vector.fma
// CHECK-NEXT: tensor.extract %[[IN]][%c0, %c0, %c1, %[[C]]]
// CHECK-COUNT-6: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-8: scf.for {{.*}} to %c8 step %c1
// CHECK: vector.transfer_write {{.*}} : vector<8xf32>, tensor<1x1x4x16xf32>
func.func @conv(%input: tensor<1x4x10x8xf32>, %filter: tensor<3x3x8x16xf32>, %init: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%input, %filter : tensor<1x4x10x8xf32>, tensor<3x3x8x16xf32>) outs(%init : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

// Depthwise with stride 2 and 12 channels: blocks of 2 x 4 pixels by one
// vector of 8 channels, then the last 4 channels as a block of their own.
// Per window position one filter vector and one input vector per pixel
// (pixel column p reads input column kw + 2 p).
// CHECK-LABEL: @depthwise
// CHECK-NOT: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK: scf.for %[[OH:.+]] = %c0 to %c4 step %c2
// CHECK: %[[W:.+]] = vector.transfer_read %{{.+}}[%c0, %c0, %c0]{{.*}} : tensor<3x3x12xf32>, vector<8xf32>
// CHECK: %[[X:.+]] = vector.transfer_read %{{.+}}[%c0, %{{.+}}, %c0, %c0]{{.*}} : tensor<1x9x9x12xf32>, vector<8xf32>
// CHECK-NEXT: vector.fma %[[X]], %[[W]]
// CHECK-NEXT: vector.transfer_read %{{.+}}[%c0, %{{.+}}, %c2, %c0]
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 8] [1, 9, 9, 4] [1, 1, 1, 1] : tensor<1x9x9x12xf32> to tensor<1x9x9x4xf32>
func.func @depthwise(%input: tensor<1x9x9x12xf32>, %filter: tensor<3x3x12xf32>, %init: tensor<1x4x4x12xf32>) -> tensor<1x4x4x12xf32> {
  %0 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%input, %filter : tensor<1x9x9x12xf32>, tensor<3x3x12xf32>) outs(%init : tensor<1x4x4x12xf32>) -> tensor<1x4x4x12xf32>
  return %0 : tensor<1x4x4x12xf32>
}

// -----

// Max pooling keeps one vector per pixel and channel block and takes the
// maximum with each input vector of the window: the greater one, or the
// input when it is NaN (NaN propagates, as under arith.maximumf). The
// accumulators start at the fill value (-inf) instead of reading a filled
// result, so the fill goes and the first maximum folds into the first input
// vector.
// CHECK-LABEL: @max_pool
// CHECK-NOT: linalg.pooling_nhwc_max
// CHECK-NOT: linalg.fill
// CHECK-NOT: 0xFF800000
// CHECK: %[[FIRST:.+]] = vector.transfer_read %arg0[%c0, %c0, %c0, %c0]
// CHECK: %[[SECOND:.+]] = vector.transfer_read %arg0[%c0, %c0, %c1, %c0]
// CHECK-NEXT: %[[GREATER:.+]] = arith.cmpf ogt, %[[SECOND]], %[[FIRST]] : vector<8xf32>
// CHECK-NEXT: %[[LARGER:.+]] = arith.select %[[GREATER]], %[[SECOND]], %[[FIRST]]
// CHECK-NEXT: %[[NAN:.+]] = arith.cmpf uno, %[[SECOND]], %[[SECOND]]
// CHECK-NEXT: arith.select %[[NAN]], %[[SECOND]], %[[LARGER]]
func.func @max_pool(%input: tensor<1x6x6x8xf32>) -> tensor<1x2x2x8xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x2x8xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e : tensor<1x2x2x8xf32>) -> tensor<1x2x2x8xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  %0 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>}
      ins(%input, %window : tensor<1x6x6x8xf32>, tensor<3x3xf32>) outs(%init : tensor<1x2x2x8xf32>) -> tensor<1x2x2x8xf32>
  return %0 : tensor<1x2x2x8xf32>
}

// -----

// A padded image is not materialized: blocks read the unpadded input, with
// the row one above the output row's. Per window position, a block (a whole
// output row here) whose pixels all read inside the image reads unchecked;
// one whose pixels all read the zero padding skips the position (zero
// products leave the sums as they are); only the others check each read and
// select the padding value: at kernel column 0, pixel 0 reads column -1.
// CHECK-LABEL: @padded_depthwise
// CHECK-NOT: tensor.pad
// CHECK: scf.for %[[OH:.+]] = %c0 to %c8 step %c1
// CHECK: %[[ROW:.+]] = arith.subi %[[OH]], %c1
// CHECK: %[[INSIDE:.+]] = arith.andi
// CHECK: %[[FIRST:.+]]:8 = scf.if %[[INSIDE]]
// CHECK: %[[CLAMPED:.+]] = arith.select %[[INSIDE]], %[[ROW]], %c0
// CHECK: %[[X:.+]] = vector.transfer_read %arg0[%c0, %[[CLAMPED]], %c0, %c0]
// CHECK: arith.select %[[INSIDE]], %[[X]], %{{.+}} : vector<8xf32>
// CHECK: } else {
// CHECK-NEXT: scf.yield %cst, %cst, %cst, %cst, %cst, %cst, %cst, %cst
// CHECK: scf.if %[[INSIDE]]
// CHECK-NEXT: vector.transfer_read %arg1[%c0, %c1, %c0]
// CHECK-NEXT: vector.transfer_read %arg0[%c0, %[[ROW]], %c0, %c0]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[FIRST]]#0, %[[FIRST]]#1, %[[FIRST]]#2, %[[FIRST]]#3, %[[FIRST]]#4, %[[FIRST]]#5, %[[FIRST]]#6, %[[FIRST]]#7
func.func @padded_depthwise(%x: tensor<1x8x8x8xf32>, %filter: tensor<3x3x8xf32>) -> tensor<1x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x8xf32> to tensor<1x10x10x8xf32>
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %0 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %filter : tensor<1x10x10x8xf32>, tensor<3x3x8xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// -----

// The quantized lowering's depthwise convolution (u8 image, s8 filter, i32
// sums) is blocked like the float one: per window position it widens a
// filter vector of 8 bytes (sign) and an input vector per pixel (zero) to
// i32 lanes, multiplies and adds. Padding reads the image's zero point
// (7) as a byte vector.
// CHECK-LABEL: @int8_depthwise
// CHECK-NOT: tensor.pad
// CHECK-DAG: %[[ZP:.+]] = arith.constant dense<7> : vector<8xi8>
// CHECK: %[[W:.+]] = vector.transfer_read %arg1{{.*}} : tensor<3x3x8xi8>, vector<8xi8>
// CHECK: %[[WIDE_W:.+]] = arith.extsi %[[W]] : vector<8xi8> to vector<8xi32>
// CHECK: %[[X:.+]] = vector.transfer_read %arg0{{.*}} : tensor<1x6x6x8xi8>, vector<8xi8>
// CHECK: %[[FILLED:.+]] = arith.select %{{.+}}, %[[X]], %[[ZP]] : vector<8xi8>
// CHECK: %[[WIDE_X:.+]] = arith.extui %[[FILLED]] : vector<8xi8> to vector<8xi32>
// CHECK: arith.muli %[[WIDE_X]], %[[WIDE_W]] : vector<8xi32>
// CHECK: arith.addi %{{.+}}, %{{.+}} : vector<8xi32>
#image = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh + kh, ow + kw, c)>
#filter = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw, c)>
#output = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func @int8_depthwise(%x: tensor<1x6x6x8xi8>, %filter: tensor<3x3x8xi8>) -> tensor<1x6x6x8xi32> {
  %zero_point = arith.constant 7 : i8
  %zero = arith.constant 0 : i32
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero_point : i8
  } : tensor<1x6x6x8xi8> to tensor<1x8x8x8xi8>
  %e = tensor.empty() : tensor<1x6x6x8xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<1x6x6x8xi32>) -> tensor<1x6x6x8xi32>
  %0 = linalg.generic {indexing_maps = [#image, #filter, #output],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%padded, %filter : tensor<1x8x8x8xi8>, tensor<3x3x8xi8>) outs(%init : tensor<1x6x6x8xi32>) {
  ^bb0(%in: i8, %w: i8, %sum: i32):
    %a = arith.extui %in : i8 to i32
    %b = arith.extsi %w : i8 to i32
    %p = arith.muli %a, %b : i32
    %s = arith.addi %sum, %p : i32
    linalg.yield %s : i32
  } -> tensor<1x6x6x8xi32>
  return %0 : tensor<1x6x6x8xi32>
}

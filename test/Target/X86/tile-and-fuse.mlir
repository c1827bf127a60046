// RUN: tessel-opt %s --tessel-x86-choose-lowering --tessel-x86-tile-and-fuse="min-work-per-workgroup=64 max-workgroups=4" --canonicalize --split-input-file | FileCheck %s

// Conv + bias + relu: the relu is tiled into workgroups along the output
// channels (at least 8 per workgroup, a register block's worth) and the
// convolution, its bias initialization and the padding are computed inside
// each tile.
// CHECK-LABEL: @conv_relu
// CHECK: scf.forall (%[[I:.+]]) = (0) to (32) step (8)
// CHECK-DAG: tensor.pad
// CHECK-DAG: linalg.generic {{.*}}ins(%{{.+}} : tensor<8xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} -> tensor<1x8x8x8xf32>
// CHECK: arith.maximumf
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[0, %[[I]], 0, 0] [1, 8, 8, 8]
// CHECK-NOT: linalg.conv_2d_nchw_fchw
func.func @conv_relu(%arg0: tensor<1x3x8x8xf32>) -> tensor<1x32x8x8xf32> {
  %w = arith.constant dense<0.5> : tensor<32x3x3x3xf32>
  %b = arith.constant dense<1.0> : tensor<32xf32>
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
  %e0 = tensor.empty() : tensor<1x32x8x8xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                          iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : tensor<32xf32>) outs(%e0 : tensor<1x32x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x32x8x8xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x3x10x10xf32>, tensor<32x3x3x3xf32>) outs(%bias : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %e1 = tensor.empty() : tensor<1x32x8x8xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                          iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv : tensor<1x32x8x8xf32>) outs(%e1 : tensor<1x32x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x32x8x8xf32>
  return %relu : tensor<1x32x8x8xf32>
}

// -----

// Work below the threshold stays one workgroup.
// CHECK-LABEL: @small
// CHECK-NOT: scf.forall
func.func @small(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// MatMul + bias: the register block is 8 rows x 48 columns, and any whole
// number of blocks is worth a workgroup. Columns are split first, so each
// workgroup reads only its own quarter of the weight, for all rows; the
// matmul and its fill are fused into the bias add's tiles.
// CHECK-LABEL: @matmul_bias
// CHECK: scf.forall (%[[N:.+]]) = (0) to (192) step (48)
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<16x64xf32>, tensor<64x48xf32>)
// CHECK: arith.addf
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[0, %[[N]]] [16, 48]
func.func @matmul_bias(%a: tensor<16x64xf32>, %b: tensor<64x192xf32>, %bias: tensor<16x192xf32>) -> tensor<16x192xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x192xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<16x192xf32>) -> tensor<16x192xf32>
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<16x64xf32>, tensor<64x192xf32>) outs(%c : tensor<16x192xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x192xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %bias : tensor<16x192xf32>, tensor<16x192xf32>) outs(%e : tensor<16x192xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x192xf32>
  return %1 : tensor<16x192xf32>
}

// -----

// A map reading a row sum (LayerNorm, softmax): workgroups take whole rows,
// so that no row's sum is computed twice; the sum is fused into each.
// CHECK-LABEL: @row_statistic
// CHECK: scf.forall (%[[R:.+]]) = (0) to (16) step (4)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.+}} : tensor<4x256xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.+}}, %{{.+}} : tensor<4x256xf32>, tensor<4xf32>)
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[R]], 0] [4, 256]
func.func @row_statistic(%x: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x256xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<16xf32>
  %o = tensor.empty() : tensor<16x256xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<16x256xf32>, tensor<16xf32>) outs(%o : tensor<16x256xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}

// -----

// Pooling has no weight: workgroups take whole rows of pixels, every
// channel, so that no two cores share a line of the image.
// CHECK-LABEL: @max_pool_rows_first
// CHECK: scf.forall (%[[R:.+]]) = (0) to (8) step (2)
// CHECK: linalg.pooling_nhwc_max
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[0, %[[R]], 0, 0] [1, 2, 8, 64]
func.func @max_pool_rows_first(%x: tensor<1x16x16x64xf32>) -> tensor<1x8x8x64xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %window = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<1x8x8x64xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32>
  %0 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %window : tensor<1x16x16x64xf32>, tensor<2x2xf32>) outs(%init : tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32>
  return %0 : tensor<1x8x8x64xf32>
}

// -----

// A filter larger than the image: workgroups split the output channels, so
// each reads only its own part of the filter.
// CHECK-LABEL: @conv_channels_first
// CHECK: scf.forall (%[[C:.+]]) = (0) to (128) step (32)
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[0, 0, 0, %[[C]]] [1, 4, 4, 32]
func.func @conv_channels_first(%x: tensor<1x6x6x16xf32>, %w: tensor<3x3x16x128xf32>) -> tensor<1x4x4x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x128xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x128xf32>) -> tensor<1x4x4x128xf32>
  %0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x6x6x16xf32>, tensor<3x3x16x128xf32>) outs(%init : tensor<1x4x4x128xf32>) -> tensor<1x4x4x128xf32>
  return %0 : tensor<1x4x4x128xf32>
}

// -----

// A concatenation (insert_slices into an empty tensor) has no tiling
// interface: it is split along the first axis every input spans whole, each
// workgroup copying its rows of both inputs into its rows of the result.
// CHECK-LABEL: @concat_rows
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x8x4x32xf32>
// CHECK: scf.forall (%[[R:.+]]) = (0) to (8) step (2) shared_outs(%[[O:.+]] = %[[E]])
// CHECK: %[[ROWS:.+]] = tensor.extract_slice %[[O]][0, %[[R]], 0, 0] [1, 2, 4, 32]
// CHECK: %[[A:.+]] = tensor.extract_slice %arg0[0, %[[R]], 0, 0] [1, 2, 4, 16]
// CHECK: %[[WITH_A:.+]] = tensor.insert_slice %[[A]] into %[[ROWS]][0, 0, 0, 0] [1, 2, 4, 16]
// CHECK: %[[B:.+]] = tensor.extract_slice %arg1[0, %[[R]], 0, 0] [1, 2, 4, 16]
// CHECK: %[[BOTH:.+]] = tensor.insert_slice %[[B]] into %[[WITH_A]][0, 0, 0, 16] [1, 2, 4, 16]
// CHECK: tensor.parallel_insert_slice %[[BOTH]] into %[[O]][0, %[[R]], 0, 0] [1, 2, 4, 32]
func.func @concat_rows(%a: tensor<1x8x4x16xf32>, %b: tensor<1x8x4x16xf32>) -> tensor<1x8x4x32xf32> {
  %e = tensor.empty() : tensor<1x8x4x32xf32>
  %0 = tensor.insert_slice %a into %e[0, 0, 0, 0] [1, 8, 4, 16] [1, 1, 1, 1] : tensor<1x8x4x16xf32> into tensor<1x8x4x32xf32>
  %1 = tensor.insert_slice %b into %0[0, 0, 0, 16] [1, 8, 4, 16] [1, 1, 1, 1] : tensor<1x8x4x16xf32> into tensor<1x8x4x32xf32>
  return %1 : tensor<1x8x4x32xf32>
}

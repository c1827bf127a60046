// RUN: tessel-opt %s --tessel-x86-choose-lowering --tessel-x86-tile-and-fuse="min-work-per-workgroup=1000000000" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-x86-choose-lowering --tessel-x86-tile-and-fuse="min-work-per-workgroup=1 max-workgroups=256" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=MANY

// Attention, softmax(Q x K) x V, 2 heads of 64 queries over 256 keys: even
// a kernel not worth splitting over threads is split, one head and 32
// query rows per workgroup, so that only 32 x 256 scores (32 KiB) exist at
// a time. A workgroup computes its scores once, for the softmax's three
// maps and the second product alike, over all keys and all 16 columns of
// the output.
// CHECK-LABEL: func.func @attention
// CHECK: scf.forall (%[[H:.+]], %[[R:.+]]) = (0, 0) to (2, 64) step (1, 32)
// CHECK: %[[Q:.+]] = tensor.extract_slice %arg0[%[[H]], %[[R]], 0] [1, 32, 16]
// CHECK: %[[K:.+]] = tensor.extract_slice %arg1[%[[H]], 0, 0] [1, 16, 256]
// CHECK: %[[SCORES:.+]] = linalg.generic {{.*}} ins(%[[Q]], %[[K]] : tensor<1x32x16xf32>, tensor<1x16x256xf32>) outs(%{{.+}} : tensor<1x32x256xf32>)
// CHECK-NOT: ins(%[[Q]], %[[K]]
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} ins(%[[SCORES]] : tensor<1x32x256xf32>) outs(%{{.+}} : tensor<1x32xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[SCORES]], %[[MAX]] : tensor<1x32x256xf32>, tensor<1x32xf32>)
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins(%[[SCORES]], %[[MAX]], %[[SUM]] : {{.*}}) outs(%{{.+}} : tensor<1x32x256xf32>)
// CHECK: %[[V:.+]] = tensor.extract_slice %arg2[%[[H]], 0, 0] [1, 256, 16]
// CHECK: %[[O:.+]] = linalg.generic {{.*}} ins(%[[P]], %[[V]] : tensor<1x32x256xf32>, tensor<1x256x16xf32>) outs(%{{.+}} : tensor<1x32x16xf32>)
// CHECK: tensor.parallel_insert_slice %[[O]] into %{{.+}}[%[[H]], %[[R]], 0] [1, 32, 16]
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func @attention(%arg0: tensor<2x64x16xf32>, %arg1: tensor<2x16x256xf32>, %arg2: tensor<2x256x16xf32>) -> tensor<2x64x16xf32> {
    %cst = arith.constant 0xFF800000 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x64x256xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<2x64x256xf32>) -> tensor<2x64x256xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<2x64x16xf32>, tensor<2x16x256xf32>) outs(%1 : tensor<2x64x256xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %14 = arith.mulf %in, %in_1 : f32
      %15 = arith.addf %out, %14 : f32
      linalg.yield %15 : f32
    } -> tensor<2x64x256xf32>
    %3 = tensor.empty() : tensor<2x64xf32>
    %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<2x64xf32>) -> tensor<2x64xf32>
    %5 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x64x256xf32>) outs(%4 : tensor<2x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.maximumf %out, %in : f32
      linalg.yield %14 : f32
    } -> tensor<2x64xf32>
    %6 = tensor.empty() : tensor<2x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<2x64xf32>) -> tensor<2x64xf32>
    %8 = linalg.generic {indexing_maps = [#map3, #map4, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2, %5 : tensor<2x64x256xf32>, tensor<2x64xf32>) outs(%7 : tensor<2x64xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %14 = arith.subf %in, %in_1 : f32
      %15 = math.exp %14 : f32
      %16 = arith.addf %out, %15 : f32
      linalg.yield %16 : f32
    } -> tensor<2x64xf32>
    %9 = tensor.empty() : tensor<2x64x256xf32>
    %10 = linalg.generic {indexing_maps = [#map3, #map4, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5, %8 : tensor<2x64x256xf32>, tensor<2x64xf32>, tensor<2x64xf32>) outs(%9 : tensor<2x64x256xf32>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %out: f32):
      %14 = arith.subf %in, %in_1 : f32
      %15 = math.exp %14 : f32
      %16 = arith.divf %15, %in_2 : f32
      linalg.yield %16 : f32
    } -> tensor<2x64x256xf32>
    %11 = tensor.empty() : tensor<2x64x16xf32>
    %12 = linalg.fill ins(%cst_0 : f32) outs(%11 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%10, %arg2 : tensor<2x64x256xf32>, tensor<2x256x16xf32>) outs(%12 : tensor<2x64x16xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %14 = arith.mulf %in, %in_1 : f32
      %15 = arith.addf %out, %14 : f32
      linalg.yield %15 : f32
    } -> tensor<2x64x16xf32>
    return %13 : tensor<2x64x16xf32>
  }
}


// -----

// The same with a residual add after the second product, the kernel's
// root: the tiles are the same. Asked for as many workgroups as there are
// rows, a workgroup still takes at least one register block of rows (8)
// and every column of the output, whose parts would each need all of the
// row's scores.
// CHECK-LABEL: func.func @attention_residual
// CHECK: scf.forall (%[[H:.+]], %[[R:.+]]) = (0, 0) to (2, 64) step (1, 32)
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[H]], %[[R]], 0] [1, 32, 16]
// MANY-LABEL: func.func @attention_residual
// MANY: scf.forall (%[[H:.+]], %[[R:.+]]) = (0, 0) to (2, 64) step (1, 8)
// MANY: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[H]], %[[R]], 0] [1, 8, 16]
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func @attention_residual(%arg0: tensor<2x64x16xf32>, %arg1: tensor<2x16x256xf32>, %arg2: tensor<2x256x16xf32>, %arg3: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
    %cst = arith.constant 0xFF800000 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x64x256xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<2x64x256xf32>) -> tensor<2x64x256xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<2x64x16xf32>, tensor<2x16x256xf32>) outs(%1 : tensor<2x64x256xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %16 = arith.mulf %in, %in_1 : f32
      %17 = arith.addf %out, %16 : f32
      linalg.yield %17 : f32
    } -> tensor<2x64x256xf32>
    %3 = tensor.empty() : tensor<2x64xf32>
    %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<2x64xf32>) -> tensor<2x64xf32>
    %5 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x64x256xf32>) outs(%4 : tensor<2x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = arith.maximumf %out, %in : f32
      linalg.yield %16 : f32
    } -> tensor<2x64xf32>
    %6 = tensor.empty() : tensor<2x64xf32>
    %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<2x64xf32>) -> tensor<2x64xf32>
    %8 = linalg.generic {indexing_maps = [#map3, #map4, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2, %5 : tensor<2x64x256xf32>, tensor<2x64xf32>) outs(%7 : tensor<2x64xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %16 = arith.subf %in, %in_1 : f32
      %17 = math.exp %16 : f32
      %18 = arith.addf %out, %17 : f32
      linalg.yield %18 : f32
    } -> tensor<2x64xf32>
    %9 = tensor.empty() : tensor<2x64x256xf32>
    %10 = linalg.generic {indexing_maps = [#map3, #map4, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5, %8 : tensor<2x64x256xf32>, tensor<2x64xf32>, tensor<2x64xf32>) outs(%9 : tensor<2x64x256xf32>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %out: f32):
      %16 = arith.subf %in, %in_1 : f32
      %17 = math.exp %16 : f32
      %18 = arith.divf %17, %in_2 : f32
      linalg.yield %18 : f32
    } -> tensor<2x64x256xf32>
    %11 = tensor.empty() : tensor<2x64x16xf32>
    %12 = linalg.fill ins(%cst_0 : f32) outs(%11 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%10, %arg2 : tensor<2x64x256xf32>, tensor<2x256x16xf32>) outs(%12 : tensor<2x64x16xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %16 = arith.mulf %in, %in_1 : f32
      %17 = arith.addf %out, %16 : f32
      linalg.yield %17 : f32
    } -> tensor<2x64x16xf32>
    %14 = tensor.empty() : tensor<2x64x16xf32>
    %15 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%13, %arg3 : tensor<2x64x16xf32>, tensor<2x64x16xf32>) outs(%14 : tensor<2x64x16xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %16 = arith.addf %in, %in_1 : f32
      linalg.yield %16 : f32
    } -> tensor<2x64x16xf32>
    return %15 : tensor<2x64x16xf32>
  }
}


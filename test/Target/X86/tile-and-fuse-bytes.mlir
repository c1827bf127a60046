// RUN: tessel-opt %s --tessel-x86-choose-lowering --tessel-x86-tile-and-fuse="min-work-per-workgroup=16500 max-workgroups=4" --canonicalize | FileCheck %s

// A matrix-vector product does 16384 operations, under the threshold of
// 16500, but moves 33536 bytes: its work counts the bytes, so that the two
// halves of its weight are read by two cores (and stay in their caches from
// run to run).
// CHECK-LABEL: @matrix_vector
// CHECK: scf.forall (%[[C:.+]]) = (0) to (128) step (64)
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[0, %[[C]]] [1, 64]
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matrix_vector(%a: tensor<1x64xf32>, %b: tensor<64x128xf32>) -> tensor<1x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x128xf32>) -> tensor<1x128xf32>
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<1x64xf32>, tensor<64x128xf32>) outs(%c : tensor<1x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x128xf32>
  return %0 : tensor<1x128xf32>
}

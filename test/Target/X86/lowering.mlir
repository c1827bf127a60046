// RUN: tessel-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-results-to-out-params="hoist-static-allocs" --canonicalize \
// RUN:   --tessel-x86-workgroup-loop --tessel-x86-scratch --split-input-file | FileCheck %s

// The workgroup forall becomes a loop over the [begin, end) range the
// runtime passes; the count is recorded for the artifact, and the tile's
// temporary comes out of the scratch argument.
// CHECK-LABEL: func.func private @tiled
// CHECK-SAME: (%[[IN:.+]]: memref<8x16xf32>, %[[OUT:.+]]: memref<8x16xf32>, %[[BEGIN:.+]]: index, %[[END:.+]]: index, %[[SCRATCH:.+]]: memref<128xi8>)
// CHECK-SAME: tessel.scratch_bytes = 128 : i64, tessel.workgroup_count = 4 : i64
// CHECK: scf.for %[[WG:.+]] = %[[BEGIN]] to %[[END]]
// CHECK: affine.apply #{{.+}}(%[[WG]])
// CHECK: memref.view %[[SCRATCH]][%{{.+}}][] : memref<128xi8> to memref<2x16xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: scf.forall
func.func private @tiled(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = scf.forall (%i) in (4) shared_outs(%o = %e) -> (tensor<8x16xf32>) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %in = tensor.extract_slice %x[%row, 0] [2, 16] [1, 1] : tensor<8x16xf32> to tensor<2x16xf32>
    %tmp = tensor.empty() : tensor<2x16xf32>
    %neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
        ins(%in : tensor<2x16xf32>) outs(%tmp : tensor<2x16xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
    } -> tensor<2x16xf32>
    %slice = tensor.extract_slice %o[%row, 0] [2, 16] [1, 1] : tensor<8x16xf32> to tensor<2x16xf32>
    %exp = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
        ins(%neg : tensor<2x16xf32>) outs(%slice : tensor<2x16xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = math.exp %a : f32
      linalg.yield %n : f32
    } -> tensor<2x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %exp into %o[%row, 0] [2, 16] [1, 1] : tensor<2x16xf32> into tensor<8x16xf32>
    }
  }
  return %r : tensor<8x16xf32>
}

// -----

// Without a workgroup forall the whole body is one workgroup.
// CHECK-LABEL: func.func private @untiled
// CHECK-SAME: tessel.scratch_bytes = 0 : i64, tessel.workgroup_count = 1 : i64
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: linalg.generic
func.func private @untiled(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

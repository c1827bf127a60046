// RUN: tessel-opt %s --split-input-file --tessel-x86-choose-lowering \
// RUN:   --tessel-x86-tile-and-fuse="min-work-per-workgroup=1000000000" --canonicalize | FileCheck %s
// RUN: tessel-opt %s --split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-results-to-out-params="hoist-static-allocs" --canonicalize \
// RUN:   --tessel-x86-workgroup-loop | FileCheck %s --check-prefix=ROWS

// A product whose rows past the varying length nothing reads
// (tessel.length_axis, bound 128): too little work to split by its cost,
// it is split along the length into tiles of 16 rows, the register block
// is chosen for 16 rows, and the forall names its loop along the length.
// CHECK-LABEL: func.func private @rows_past_the_length
// CHECK: scf.forall (%{{.+}}) = (0) to (128) step (16)
// CHECK: linalg.generic
// CHECK-SAME: register_block = array<i64: {{[1-9]|1[0-6]}}, {{[0-9]+}}>
// CHECK: } {tessel.length_loop = array<i64: 0, 1>}
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#result = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @rows_past_the_length(%a: tensor<128x64xf32>) -> (tensor<128x64xf32> {tessel.length_axis = 0 : i64}) attributes {tessel.kernel} {
  %w = arith.constant dense<0.5> : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<128x64xf32>) -> tensor<128x64xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #result], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<128x64xf32>, tensor<64x64xf32>) outs(%init : tensor<128x64xf32>)
      attrs = {tessel.length_axis = 0 : i64} {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %m = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x64xf32>
  %e1 = tensor.empty() : tensor<128x64xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                          iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<128x64xf32>) outs(%e1 : tensor<128x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<128x64xf32>
  return %relu : tensor<128x64xf32>
}

// -----

// The same product without the mark stays one workgroup.
// CHECK-LABEL: func.func private @rows_all_read
// CHECK-NOT: scf.forall
// CHECK: return
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#result = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @rows_all_read(%a: tensor<128x64xf32>) -> tensor<128x64xf32> attributes {tessel.kernel} {
  %w = arith.constant dense<0.5> : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<128x64xf32>) -> tensor<128x64xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #result], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<128x64xf32>, tensor<64x64xf32>) outs(%init : tensor<128x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %m = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x64xf32>
  return %p : tensor<128x64xf32>
}

// -----

// Workgroups in rows along the length: the forall's loop along it (its
// second) becomes the outermost of the workgroup index, so that the
// workgroups below a length come first; a row holds 3 workgroups of 2
// positions each.
// ROWS-LABEL: func.func private @two_loops
// ROWS-SAME: tessel.length_row_positions = 2 : i64, tessel.length_row_workgroups = 3 : i64, tessel.workgroup_count = 12 : i64
// ROWS: scf.for %[[WG:.+]] = %{{.+}} to %{{.+}} step
// ROWS: %[[IDX:.+]]:2 = affine.delinearize_index %[[WG]] into (4, 3)
// ROWS: %[[ROW:.+]] = arith.muli %[[IDX]]#0, %c2
// ROWS: memref.subview %{{.+}}[%[[IDX]]#1, %[[ROW]], 0] [1, 2, 16]
func.func private @two_loops(%x: tensor<3x8x16xf32>) -> tensor<3x8x16xf32> {
  %e = tensor.empty() : tensor<3x8x16xf32>
  %r = scf.forall (%h, %i) = (0, 0) to (3, 8) step (1, 2) shared_outs(%o = %e) -> (tensor<3x8x16xf32>) {
    %in = tensor.extract_slice %x[%h, %i, 0] [1, 2, 16] [1, 1, 1] : tensor<3x8x16xf32> to tensor<2x16xf32>
    %slice = tensor.extract_slice %o[%h, %i, 0] [1, 2, 16] [1, 1, 1] : tensor<3x8x16xf32> to tensor<2x16xf32>
    %neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
        ins(%in : tensor<2x16xf32>) outs(%slice : tensor<2x16xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
    } -> tensor<2x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %neg into %o[%h, %i, 0] [1, 2, 16] [1, 1, 1] : tensor<2x16xf32> into tensor<3x8x16xf32>
    }
  } {tessel.length_loop = array<i64: 1, 2>}
  return %r : tensor<3x8x16xf32>
}

// -----

// A mark made when the forall had more loops (one folded away since) no
// longer names its loop: the workgroups are not put in rows.
// ROWS-LABEL: func.func private @stale_mark
// ROWS-NOT: tessel.length_row
// ROWS-SAME: tessel.workgroup_count = 4 : i64
func.func private @stale_mark(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = scf.forall (%i) = (0) to (8) step (2) shared_outs(%o = %e) -> (tensor<8x16xf32>) {
    %in = tensor.extract_slice %x[%i, 0] [2, 16] [1, 1] : tensor<8x16xf32> to tensor<2x16xf32>
    %slice = tensor.extract_slice %o[%i, 0] [2, 16] [1, 1] : tensor<8x16xf32> to tensor<2x16xf32>
    %neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
        ins(%in : tensor<2x16xf32>) outs(%slice : tensor<2x16xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
    } -> tensor<2x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %neg into %o[%i, 0] [2, 16] [1, 1] : tensor<2x16xf32> into tensor<8x16xf32>
    }
  } {tessel.length_loop = array<i64: 0, 2>}
  return %r : tensor<8x16xf32>
}

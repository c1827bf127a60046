// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=8" --tessel-x86-pack-weights \
// RUN:   --tessel-x86-vectorize="vector-width=8" --canonicalize --cse | FileCheck %s
// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=8" \
// RUN:   --tessel-x86-tile-and-fuse="min-work-per-workgroup=1" --canonicalize | FileCheck %s --check-prefix=TILES

// A lowering config pinned in the input (2 x 8 blocks, where the chooser
// would take 6 x 16) is what every pass follows: PackWeights stores B in
// 8-column panels, register blocking steps k with two accumulators of one
// vector each, 2 rows x 8 columns at a time, and workgroups are whole blocks.

// CHECK-LABEL: func.func private @k0
// CHECK-SAME: %[[PANELS:[a-z0-9]+]]: tensor<4x2x8xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c8
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c2
// CHECK: scf.for %{{.+}} = %c0 to %c2 step %c1 iter_args(%[[ACC0:.+]] = %{{.+}}, %[[ACC1:.+]] = %{{.+}}) -> (vector<8xf32>, vector<8xf32>)
// CHECK: %[[B:.+]] = vector.transfer_read %[[PANELS]]
// CHECK: vector.fma %{{.+}}, %[[B]], %[[ACC0]] : vector<8xf32>
// CHECK: vector.fma %{{.+}}, %[[B]], %[[ACC1]] : vector<8xf32>
// CHECK-NOT: vector.fma
// CHECK: scf.yield %{{.+}}, %{{.+}} : vector<8xf32>, vector<8xf32>
// CHECK-LABEL: func.func @main
// CHECK: arith.constant dense<1.000000e+00> : tensor<4x2x8xf32>

// TILES-LABEL: func.func private @k0
// TILES: scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (6, 32) step (2, 8)
// TILES: linalg.generic
// TILES-SAME: tessel.lowering_config = {register_block = array<i64: 2, 8>}
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @k0(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 2, 8>}} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @k0(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

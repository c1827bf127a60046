// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=8" --tessel-x86-vectorize="vector-width=8" --canonicalize --cse --split-input-file | FileCheck %s

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A matmul becomes 6 x 16 register blocks (12 AVX2 accumulators), column
// blocks outermost. Each k step loads two vectors of the right operand,
// broadcasts one left element per row and issues 12 FMAs into loop-carried
// accumulators.
// CHECK-LABEL: @matmul
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[N:.+]] = %c0 to %c32 step %c16
// CHECK: scf.for %[[M:.+]] = %c0 to %c12 step %c6
// CHECK-COUNT-12: vector.transfer_read %{{.+}} : tensor<12x32xf32>, vector<8xf32>
// CHECK: scf.for %[[K:.+]] = %c0 to %c16 step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NEXT: vector.transfer_read %{{.+}}[%[[K]], %[[N]]], %{{.+}} {in_bounds = [true]} : tensor<16x32xf32>, vector<8xf32>
// CHECK-NEXT: vector.transfer_read %{{.+}}[%[[K]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<16x32xf32>, vector<8xf32>
// CHECK-NEXT: tensor.extract %{{.+}}[%c0, %[[K]]] : tensor<6x16xf32>
// CHECK-NEXT: vector.broadcast
// CHECK-NEXT: vector.fma
// CHECK-NEXT: vector.fma
// CHECK-COUNT-10: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-12: vector.transfer_write {{.*}} : vector<8xf32>, tensor<6x16xf32>
func.func @matmul(%a: tensor<12x16xf32>, %b: tensor<16x32xf32>, %c: tensor<12x32xf32>) -> tensor<12x32xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<12x16xf32>, tensor<16x32xf32>) outs(%c : tensor<12x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<12x32xf32>
  return %0 : tensor<12x32xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A right operand unpacked from 16-column panels is read from the panels:
// the block of columns n reads panel n / 16, and the unpack goes away.
// CHECK-LABEL: @packed
// CHECK-SAME: %{{.+}}: tensor<12x16xf32>, %[[PANELS:.+]]: tensor<2x16x16xf32>
// CHECK-NOT: linalg.unpack
// CHECK: scf.for %[[N:.+]] = %c0 to %c32 step %c16
// CHECK: %[[PANEL:.+]] = arith.divui %[[N]], %c16
// CHECK: scf.for %[[K:.+]] = %c0 to %c16 step %c1
// CHECK-NEXT: vector.transfer_read %[[PANELS]][%[[PANEL]], %[[K]], %c0]
// CHECK-NEXT: vector.transfer_read %[[PANELS]][%[[PANEL]], %[[K]], %c8]
func.func @packed(%a: tensor<12x16xf32>, %panels: tensor<2x16x16xf32>, %c: tensor<12x32xf32>) -> tensor<12x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %b = linalg.unpack %panels outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [16] into %e
      : tensor<2x16x16xf32> -> tensor<16x32xf32>
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<12x16xf32>, tensor<16x32xf32>) outs(%c : tensor<12x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<12x32xf32>
  return %0 : tensor<12x32xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// 13 rows: two blocks of 5 rows, then the last 3 rows as a block of their
// own (6 accumulators), never a dynamic shape.
// CHECK-LABEL: @rows13
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [10, 16] [1, 1] : tensor<13x16xf32> to tensor<10x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c10 step %c5
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: tensor.extract_slice %{{.+}}[10, 0] [3, 16] [1, 1] : tensor<13x16xf32> to tensor<3x16xf32>
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
func.func @rows13(%a: tensor<13x16xf32>, %b: tensor<16x16xf32>, %c: tensor<13x16xf32>) -> tensor<13x16xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<13x16xf32>, tensor<16x16xf32>) outs(%c : tensor<13x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<13x16xf32>
  return %0 : tensor<13x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A right operand indexed [n, k] has no contiguous columns: no register
// blocks (the generic path vectorizes it).
// CHECK-LABEL: @transposed_right
// CHECK-NOT: vector.fma
func.func @transposed_right(%a: tensor<12x16xf32>, %b: tensor<32x16xf32>, %c: tensor<12x32xf32>) -> tensor<12x32xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<12x16xf32>, tensor<32x16xf32>) outs(%c : tensor<12x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<12x32xf32>
  return %0 : tensor<12x32xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// 36 columns: two blocks of 16, then the last 4 columns as a block of one
// vector whose lanes past column 36 are masked (no in_bounds) in its reads
// of the right operand and in its writes.
// CHECK-LABEL: @columns36
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [6, 32] [1, 1] : tensor<6x36xf32> to tensor<6x32xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c16
// CHECK: tensor.extract_slice %{{.+}}[0, 32] [8, 4] [1, 1] : tensor<8x36xf32> to tensor<8x4xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, 32] [6, 4] [1, 1] : tensor<6x36xf32> to tensor<6x4xf32>
// CHECK-COUNT-6: vector.transfer_read %{{.+}}, %{{[^ ]+}} : tensor<6x4xf32>, vector<8xf32>
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NEXT: vector.transfer_read %{{.+}}[%{{.+}}, %c0], %{{[^ ]+}} : tensor<8x4xf32>, vector<8xf32>
// CHECK-COUNT-6: vector.fma
// CHECK-COUNT-6: vector.transfer_write %{{.+}}, %{{[^ ]+}} : vector<8xf32>, tensor<6x4xf32>
func.func @columns36(%a: tensor<6x8xf32>, %b: tensor<8x36xf32>, %c: tensor<6x36xf32>) -> tensor<6x36xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<6x8xf32>, tensor<8x36xf32>) outs(%c : tensor<6x36xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<6x36xf32>
  return %0 : tensor<6x36xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Gemm + residual add + relu: the accumulators start from the bias vectors
// (the broadcast bias is never materialized), and the add and the relu are
// applied to each accumulator before its one store.
// CHECK-LABEL: @matmul_epilogue
// CHECK-SAME: (%{{.+}}: tensor<6x8xf32>, %{{.+}}: tensor<8x16xf32>, %[[BIAS:.+]]: tensor<16xf32>, %[[RES:.+]]: tensor<6x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[B0:.+]] = vector.transfer_read %[[BIAS]][%c0]
// CHECK: %[[B8:.+]] = vector.transfer_read %[[BIAS]][%c8]
// CHECK: %[[ACC:.+]]:12 = scf.for {{.*}} iter_args(%{{.+}} = %[[B0]], %{{.+}} = %[[B8]], %{{.+}} = %[[B0]]
// CHECK: %[[R:.+]] = vector.transfer_read %[[RES]][%c0, %c0]
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC]]#0, %[[R]] : vector<8xf32>
// CHECK-NEXT: %[[RELU:.+]] = arith.maximumf %[[SUM]], %{{.+}} : vector<8xf32>
// CHECK-NEXT: vector.transfer_write %[[RELU]], %{{.+}}[%c0, %c0]
// CHECK-COUNT-11: vector.transfer_write
func.func @matmul_epilogue(%a: tensor<6x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>, %residual: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x16xf32>
  %init = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<16xf32>) outs(%e : tensor<6x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<6x16xf32>
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<6x8xf32>, tensor<8x16xf32>) outs(%init : tensor<6x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<6x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %residual : tensor<6x16xf32>, tensor<6x16xf32>) outs(%e : tensor<6x16xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %s = arith.addf %x, %r : f32
    linalg.yield %s : f32
  } -> tensor<6x16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1 : tensor<6x16xf32>) outs(%e : tensor<6x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<6x16xf32>
  return %2 : tensor<6x16xf32>
}

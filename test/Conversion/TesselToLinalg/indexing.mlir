// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// A forward slice is a strided extract_slice (a view); a reversed one reads
// element by element at start + i * step.
// CHECK-LABEL: @slices
// CHECK: tensor.extract_slice %arg0[1, 0] [2, 2] [1, 2] : tensor<4x4xf32> to tensor<2x2xf32>
// CHECK: linalg.generic
// CHECK: %[[I:.+]] = linalg.index 1 : index
// CHECK: %[[SCALED:.+]] = arith.muli %[[I]], %c-1
// CHECK: arith.addi %[[SCALED]], %c3
// CHECK: tensor.extract %arg0
func.func @slices(%x: tensor<4x4xf32>) -> (tensor<2x2xf32>, tensor<4x4xf32>) {
  %0 = tessel.slice %x {starts = array<i64: 1, 0>, steps = array<i64: 1, 2>} : tensor<4x4xf32> -> tensor<2x2xf32>
  %1 = tessel.slice %x {starts = array<i64: 0, 3>, steps = array<i64: 1, -1>} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<4x4xf32>
}

// -----

// Gather reads the indices at the result's loops [axis, axis + rank) and
// wraps negative ones.
// CHECK-DAG: #[[INDICES:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: @gather
// CHECK: linalg.generic {indexing_maps = [#[[INDICES]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK: arith.index_cast %{{.+}} : i64 to index
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK: tensor.extract %arg0[%{{.+}}, %{{.+}}] : tensor<5x4xf32>
func.func @gather(%data: tensor<5x4xf32>, %indices: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = tessel.gather %data, %indices {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Reflect padding mirrors positions with period 2 * (size - 1).
// CHECK-LABEL: @pad_reflect
// CHECK: linalg.generic
// CHECK: arith.remsi %{{.+}}, %c4
// CHECK: tensor.extract %arg0
// CHECK-NOT: arith.select %{{.+}}, %{{.+}}, %in
func.func @pad_reflect(%x: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<2x7xf32> {
  %0 = tessel.pad %x, %v {mode = "reflect", pads = array<i64: 0, 2, 0, 2>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

// A scatter is a reduction over the updates: each result element takes the
// last update that targets it.
// CHECK-LABEL: @scatter_elements
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME: outs(%arg0 : tensor<3x3xf32>)
// CHECK: arith.cmpi eq
// CHECK: arith.select
func.func @scatter_elements(%data: tensor<3x3xf32>, %indices: tensor<2x3xi64>, %updates: tensor<2x3xf32>) -> tensor<3x3xf32> {
  %0 = tessel.scatter_elements %data, %indices, %updates {axis = 0 : i64, reduction = "none"} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Einsum: output letters are parallel loops, the rest reductions.
// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: @einsum
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @einsum(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = tessel.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CumSum is a masked reduction over a second loop along the axis.
// CHECK-LABEL: @cumsum_reverse_exclusive
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpi sgt
func.func @cumsum_reverse_exclusive(%x: tensor<5xf32>) -> tensor<5xf32> {
  %0 = tessel.cumsum %x {axis = 0 : i64, exclusive = true, reverse = true} : tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Integer Mod without fmod moves a remainder whose sign differs from the
// divisor's by one divisor; BitShift gives 0 from the bit width on.
// CHECK-LABEL: @mod_and_shift
// CHECK: arith.remsi
// CHECK: arith.xori
// CHECK: arith.addi
// CHECK: linalg.generic
// CHECK: arith.shli
// CHECK: arith.cmpi ult, %{{.+}}, %c8_i8
func.func @mod_and_shift(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xui8>, %d: tensor<4xui8>) -> (tensor<4xi32>, tensor<4xui8>) {
  %0 = tessel.mod %a, %b {fmod = false} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = tessel.bit_shift %c, %d {left = true} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1 : tensor<4xi32>, tensor<4xui8>
}

// -----

// Counting indices out of range is a full reduction; with one extent per
// tuple entry, the innermost loop index picks the extent. The check stays
// for the host.
// CHECK-LABEL: @count_out_of_range
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "reduction"]
// CHECK: arith.extsi %{{.+}} : i32 to i64
// CHECK: linalg.index 1 : index
// CHECK: arith.select %{{.+}}, %c4_i64, %c3_i64
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi sge
// CHECK: arith.ori
// CHECK: arith.extui %{{.+}} : i1 to i64
// CHECK: arith.addi
// CHECK: tessel.check_zero
func.func @count_out_of_range(%indices: tensor<5x2xi32>) -> tensor<i64> {
  %0 = tessel.count_out_of_range %indices {extents = array<i64: 3, 4>} : tensor<5x2xi32> -> tensor<i64>
  tessel.check_zero %0 {node = "n", problem = "GatherND indices outside [-3, 3) and [-4, 4)"} : tensor<i64>
  return %0 : tensor<i64>
}

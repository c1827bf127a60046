// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// A reduction is one generic whose reduced axes are reduction loops; the
// accumulator starts at the kind's identity.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: @sum
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.+]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["reduction", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<3xf32>)
// CHECK: arith.addf
func.func @sum(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %0 = tessel.reduce "sum", %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Unsigned minimum starts at the largest value and compares unsigned.
// CHECK-LABEL: @min_unsigned
// CHECK: arith.constant -1 : i8
// CHECK: arith.minui
func.func @min_unsigned(%x: tensor<4x5xui8>) -> tensor<4xui8> {
  %0 = tessel.reduce "min", %x {axes = array<i64: 1>} : (tensor<4x5xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// ArgMax carries (best value, its index); ties keep the first index (ogt),
// select_last takes later equal ones (oge).
// CHECK-LABEL: @argmax
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: linalg.index 1
// CHECK: arith.cmpf ogt
// CHECK: linalg.generic
// CHECK: arith.cmpf oge
func.func @argmax(%x: tensor<4x5xf32>) -> (tensor<4xi64>, tensor<4xi64>) {
  %0 = tessel.arg_reduce "max", %x {axis = 1 : i64, select_last = false} : (tensor<4x5xf32>) -> tensor<4xi64>
  %1 = tessel.arg_reduce "max", %x {axis = 1 : i64, select_last = true} : (tensor<4x5xf32>) -> tensor<4xi64>
  return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

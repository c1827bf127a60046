// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// Gemm with transB and a vector bias: the bias is the accumulator's
// initial value, B is read transposed through the indexing map.
// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: @gemm_trans_b
// CHECK: %[[INIT:.+]] = linalg.generic {{.*}} ins(%arg2 : tensor<4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[BT]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<2x4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @gemm_trans_b(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = tessel.gemm %a, %b, %c {trans_b = true} : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// alpha != 1 scales the product in an epilogue that also adds beta * C.
// CHECK-LABEL: @gemm_alpha
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic
// CHECK: arith.constant 5.000000e-01
func.func @gemm_alpha(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>, %c: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = tessel.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Batched matmul broadcasting a matrix: the matrix is read without the
// batch dimension.
// CHECK-DAG: #[[LHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-LABEL: @matmul_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
func.func @matmul_broadcast(%a: tensor<2x8x16xf32>, %b: tensor<16x4xf32>) -> tensor<2x8x4xf32> {
  %0 = tessel.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
  return %0 : tensor<2x8x4xf32>
}

// -----

// A vector times a matrix: the promoted axis is not in the iteration space.
// CHECK-DAG: #[[V:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[M:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: @vector_matrix
// CHECK: linalg.generic {indexing_maps = [#[[V]], #[[M]], {{.*}}], iterator_types = ["parallel", "reduction"]}
func.func @vector_matrix(%v: tensor<16xf32>, %m: tensor<16x4xf32>) -> tensor<4xf32> {
  %0 = tessel.matmul %v, %m : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// bf16 operands of an f32 product (--precision bf16): the body widens them
// and sums in f32, the form targets map onto bf16 dot products.
// CHECK-LABEL: @matmul_bf16_operands
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x6xbf16>, tensor<6x8xbf16>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK: ^bb0(%[[X:.+]]: bf16, %[[W:.+]]: bf16, %[[SUM:.+]]: f32):
// CHECK: %[[XF:.+]] = arith.extf %[[X]] : bf16 to f32
// CHECK: %[[WF:.+]] = arith.extf %[[W]] : bf16 to f32
// CHECK: %[[P:.+]] = arith.mulf %[[XF]], %[[WF]] : f32
// CHECK: arith.addf %[[SUM]], %[[P]] : f32
func.func @matmul_bf16_operands(%a: tensor<4x6xbf16>, %b: tensor<6x8xbf16>) -> tensor<4x8xf32> {
  %0 = tessel.matmul %a, %b : (tensor<4x6xbf16>, tensor<6x8xbf16>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// An f16 product sums in f32 and rounds once at the end.
// CHECK-LABEL: @matmul_f16
// CHECK: %[[SUMS:.+]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x6xf16>, tensor<6x8xf16>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK: linalg.generic {{.*}} ins(%[[SUMS]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<4x8xf16>)
// CHECK: arith.truncf %{{.+}} : f32 to f16
func.func @matmul_f16(%a: tensor<4x6xf16>, %b: tensor<6x8xf16>) -> tensor<4x8xf16> {
  %0 = tessel.matmul %a, %b : (tensor<4x6xf16>, tensor<6x8xf16>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

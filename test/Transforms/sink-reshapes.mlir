// RUN: tessel-opt %s --tessel-sink-reshapes --split-input-file | FileCheck %s

// A MatMul's [4, 16] result viewed as [4, 1, 16]: the bias add and the SiLU
// after it compute on [4, 16], and the view moves after them.
// CHECK-LABEL: @bias_silu
// CHECK: %[[M:.+]] = tessel.matmul
// CHECK-NEXT: %[[A:.+]] = tessel.add %[[M]], %{{.+}} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[S:.+]] = tessel.sigmoid %[[A]] : tensor<4x16xf32>
// CHECK-NEXT: %[[Y:.+]] = tessel.mul %[[A]], %[[S]] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[R:.+]] = tessel.reshape %[[Y]] : tensor<4x16xf32> -> tensor<4x1x16xf32>
// CHECK-NEXT: return %[[R]]
func.func @bias_silu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x1x16xf32> {
  %bias = tessel.constant dense<0.5> : tensor<16xf32>
  %m = tessel.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = tessel.reshape %m : tensor<4x16xf32> -> tensor<4x1x16xf32>
  %a = tessel.add %r, %bias : (tensor<4x1x16xf32>, tensor<16xf32>) -> tensor<4x1x16xf32>
  %s = tessel.sigmoid %a : tensor<4x1x16xf32>
  %y = tessel.mul %a, %s : (tensor<4x1x16xf32>, tensor<4x1x16xf32>) -> tensor<4x1x16xf32>
  return %y : tensor<4x1x16xf32>
}

// -----

// An operand varying along the first axis broadcasts differently against
// [4, 16] than against [4, 1, 16]: the reshape stays.
// CHECK-LABEL: @row_broadcast
// CHECK: %[[R:.+]] = tessel.reshape %arg0 : tensor<4x16xf32> -> tensor<4x1x16xf32>
// CHECK-NEXT: tessel.add %[[R]], %arg1 : (tensor<4x1x16xf32>, tensor<4x1x1xf32>)
func.func @row_broadcast(%x: tensor<4x16xf32>, %c: tensor<4x1x1xf32>) -> tensor<4x1x16xf32> {
  %r = tessel.reshape %x : tensor<4x16xf32> -> tensor<4x1x16xf32>
  %a = tessel.add %r, %c : (tensor<4x1x16xf32>, tensor<4x1x1xf32>) -> tensor<4x1x16xf32>
  return %a : tensor<4x1x16xf32>
}

// -----

// A residual add: the full-size residual is viewed in the product's shape,
// so that the add can join the product's kernel.
// CHECK-LABEL: @residual
// CHECK: %[[M:.+]] = tessel.matmul
// CHECK-NEXT: %[[R:.+]] = tessel.reshape %arg2 : tensor<1x4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[A:.+]] = tessel.add %[[M]], %[[R]] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: tessel.reshape %[[A]] : tensor<4x16xf32> -> tensor<1x4x16xf32>
func.func @residual(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %res: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  %m = tessel.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = tessel.reshape %m : tensor<4x16xf32> -> tensor<1x4x16xf32>
  %a = tessel.add %r, %res : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %a : tensor<1x4x16xf32>
}

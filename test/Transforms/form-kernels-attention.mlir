// RUN: tessel-opt %s --tessel-form-kernels="fuse-attention=true" --split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-form-kernels --split-input-file | FileCheck %s --check-prefix=UNFUSED

// Scaled, masked attention: Q x K, its epilogue, the softmax along the keys
// and the product by V are one kernel, and so is the output's epilogue.
// CHECK-LABEL: func.func private @k0_matmul_mul_add_softmax_matmul_add
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x4xf32>, %[[K:.+]]: tensor<2x4x16xf32>, %[[S:.+]]: tensor<2x8x16xf32>, %[[M:.+]]: tensor<1x1x16xf32>, %[[V:.+]]: tensor<2x16x4xf32>, %[[R:.+]]: tensor<2x8x4xf32>)
// CHECK: %[[QK:.+]] = tessel.matmul %[[Q]], %[[K]]
// CHECK: %[[SCALED:.+]] = tessel.mul %[[QK]], %[[S]]
// CHECK: %[[MASKED:.+]] = tessel.add %[[SCALED]], %[[M]]
// CHECK: %[[P:.+]] = tessel.softmax %[[MASKED]] {axis = 2 : i64}
// CHECK: %[[O:.+]] = tessel.matmul %[[P]], %[[V]]
// CHECK: %[[Y:.+]] = tessel.add %[[O]], %[[R]]
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func @attention
// CHECK-NEXT: call @k0_matmul_mul_add_softmax_matmul_add
// CHECK-NEXT: return
// UNFUSED-LABEL: func.func private @k0_matmul_mul_add
// UNFUSED-LABEL: func.func private @k1_softmax
// UNFUSED-LABEL: func.func private @k2_matmul_add
func.func @attention(%q: tensor<2x8x4xf32>, %k: tensor<2x4x16xf32>, %scale: tensor<2x8x16xf32>,
                     %mask: tensor<1x1x16xf32>, %v: tensor<2x16x4xf32>,
                     %residual: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %0 = tessel.matmul %q, %k : (tensor<2x8x4xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %1 = tessel.mul %0, %scale : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %2 = tessel.add %1, %mask : (tensor<2x8x16xf32>, tensor<1x1x16xf32>) -> tensor<2x8x16xf32>
  %3 = tessel.softmax %2 {axis = 2 : i64} : tensor<2x8x16xf32>
  %4 = tessel.matmul %3, %v : (tensor<2x8x16xf32>, tensor<2x16x4xf32>) -> tensor<2x8x4xf32>
  %5 = tessel.add %4, %residual : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %5 : tensor<2x8x4xf32>
}

// -----

// The probabilities are a result of the model too: they must be stored
// whole, and the three stay apart.
// CHECK-LABEL: func.func private @k0_matmul
// CHECK-LABEL: func.func private @k1_softmax
// CHECK-LABEL: func.func private @k2_matmul
func.func @probabilities_returned(%q: tensor<8x4xf32>, %k: tensor<4x16xf32>, %v: tensor<16x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x16xf32>) {
  %0 = tessel.matmul %q, %k : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %1 = tessel.softmax %0 {axis = 1 : i64} : tensor<8x16xf32>
  %2 = tessel.matmul %1, %v : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %2, %1 : tensor<8x4xf32>, tensor<8x16xf32>
}

// -----

// A softmax along another axis than the keys is not attention's.
// CHECK-LABEL: func.func private @k0_matmul
// CHECK-LABEL: func.func private @k1_softmax
// CHECK-LABEL: func.func private @k2_matmul
func.func @softmax_over_queries(%q: tensor<8x4xf32>, %k: tensor<4x8xf32>, %v: tensor<8x4xf32>)
    -> tensor<8x4xf32> {
  %0 = tessel.matmul %q, %k : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %1 = tessel.softmax %0 {axis = 0 : i64} : tensor<8x8xf32>
  %2 = tessel.matmul %1, %v : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}

// -----

// The scores are read by something else as well.
// CHECK-LABEL: func.func private @k0_matmul
// CHECK-LABEL: func.func private @k1_softmax
// CHECK-LABEL: func.func private @k2_matmul
func.func @scores_shared(%q: tensor<8x4xf32>, %k: tensor<4x16xf32>, %v: tensor<16x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x16xf32>) {
  %0 = tessel.matmul %q, %k : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %1 = tessel.softmax %0 {axis = 1 : i64} : tensor<8x16xf32>
  %2 = tessel.matmul %1, %v : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %3 = tessel.relu %0 : tensor<8x16xf32>
  return %2, %3 : tensor<8x4xf32>, tensor<8x16xf32>
}

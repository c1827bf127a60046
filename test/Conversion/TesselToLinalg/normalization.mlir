// RUN: tessel-opt %s --convert-tessel-to-linalg | FileCheck %s

// LayerNorm: a row sum, the mean, a row sum of squared deviations, the
// inverse deviation, then one map normalizing, scaling and shifting. Rows
// are the leading axes everywhere, so a target tiles the last map by rows
// and fuses the rest into each tile.
// CHECK-LABEL: @layer_norm
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x16xf32>)
// CHECK: arith.addf
// CHECK: %[[MEAN:.+]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<4xf32>)
// CHECK: arith.constant 6.250000e-02
// CHECK: %[[SQUARES:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0, %[[MEAN]] : tensor<4x16xf32>, tensor<4xf32>)
// CHECK: %[[INVERSE:.+]] = linalg.generic {{.*}} ins(%[[SQUARES]] : tensor<4xf32>)
// CHECK: arith.constant 9.99999974E-6
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %[[MEAN]], %[[INVERSE]], %arg1, %arg2 : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
func.func @layer_norm(%x: tensor<4x16xf32>, %scale: tensor<16xf32>, %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = tessel.layer_norm %x, %scale, %bias {epsilon = 1.0e-5 : f32} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

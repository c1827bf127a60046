// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// Exact GELU is x * 0.5 * (1 + erf(x / sqrt(2))); the tanh form uses tanh.
// CHECK-LABEL: @gelu
// CHECK: linalg.generic
// CHECK: %[[SCALED:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK: math.erf %[[SCALED]]
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: math.erf
func.func @gelu(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = tessel.gelu %x {tanh = false} : tensor<8xf32>
  %1 = tessel.gelu %x {tanh = true} : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Inverse trigonometric and hyperbolic functions are built from atan2, log
// and sqrt, which targets approximate without a math library.
// CHECK-LABEL: @inverse
// CHECK: math.sqrt
// CHECK: math.atan2
// CHECK: math.log
// CHECK: math.copysign
func.func @inverse(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = tessel.asin %x : tensor<8xf32>
  %1 = tessel.asinh %x : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// LeakyRelu selects alpha * x below zero; its alpha is a constant in the body.
// CHECK-LABEL: @leaky_relu
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[ALPHA:.+]] = arith.constant 1.000000e-01 : f32
// CHECK: %[[SCALED:.+]] = arith.mulf %[[IN]], %[[ALPHA]]
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[NEG:.+]] = arith.cmpf olt, %[[IN]], %[[ZERO]]
// CHECK: arith.select %[[NEG]], %[[SCALED]], %[[IN]]
func.func @leaky_relu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tessel.leaky_relu %x {alpha = 0.1 : f32} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

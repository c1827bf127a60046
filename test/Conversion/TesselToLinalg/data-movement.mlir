// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// Reshapes are views: collapse_shape when axes merge, through a flat
// vector otherwise.
// CHECK-LABEL: @reshapes
// CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1, 2, 3]] : tensor<1x512x1x1xf32> into tensor<1x512xf32>
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %arg1 {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: tensor.expand_shape %[[FLAT]] {{\[}}[0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
func.func @reshapes(%x: tensor<1x512x1x1xf32>, %y: tensor<2x3xf32>) -> (tensor<1x512xf32>, tensor<3x2xf32>) {
  %0 = tessel.flatten %x {axis = 1 : i64} : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
  %1 = tessel.reshape %y : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<1x512xf32>, tensor<3x2xf32>
}

// -----

// CHECK-LABEL: @transpose
// CHECK: linalg.transpose ins(%arg0 : tensor<1x3x4x5xf32>) outs(%{{.+}} : tensor<1x4x5x3xf32>) permutation = [0, 2, 3, 1]
func.func @transpose(%x: tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32> {
  %0 = tessel.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
  return %0 : tensor<1x4x5x3xf32>
}

// -----

// CHECK-LABEL: @concat
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x5xf32>
// CHECK: %[[A:.+]] = tensor.insert_slice %arg0 into %[[E]][0, 0] [1, 2] [1, 1]
// CHECK: tensor.insert_slice %arg1 into %[[A]][0, 2] [1, 3] [1, 1]
func.func @concat(%a: tensor<1x2xf32>, %b: tensor<1x3xf32>) -> tensor<1x5xf32> {
  %0 = tessel.concat %a, %b {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  return %0 : tensor<1x5xf32>
}

// -----

// Softmax: a max reduction, a sum of shifted exponentials, a normalization.
// CHECK-LABEL: @softmax
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}}ins(%arg0, %[[MAX]], %[[SUM]]
// CHECK: arith.divf
func.func @softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = tessel.softmax %x {axis = 1 : i64} : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

// An f16 softmax takes its maximum in f16 (exactly), computes the
// exponentials and their sum in f32, and rounds each quotient once.
// CHECK-LABEL: @softmax_f16
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<2xf16>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<2xf32>)
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: math.exp %{{.+}} : f32
// CHECK: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK: linalg.generic {{.*}}ins(%arg0, %[[MAX]], %[[SUM]] : tensor<2x10xf16>, tensor<2xf16>, tensor<2xf32>)
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK: arith.truncf %{{.+}} : f32 to f16
func.func @softmax_f16(%x: tensor<2x10xf16>) -> tensor<2x10xf16> {
  %0 = tessel.softmax %x {axis = 1 : i64} : tensor<2x10xf16>
  return %0 : tensor<2x10xf16>
}

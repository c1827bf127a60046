// RUN: tessel-opt %s --tessel-x86-vectorize="vector-width=8" --canonicalize --cse | FileCheck %s

// Softmax's sum of exp(x - max) over rows of 20: per row, two whole vectors
// of 8 in a loop into a vector accumulator, the last 4 elements as one more
// step whose lanes past the row keep the accumulator (a select), then one
// horizontal add, combined with the row's initial value.
// CHECK-LABEL: @softmax_sum
// CHECK: scf.for %[[ROW:.+]] = %c0 to %c3 step %c1
// CHECK: %[[WHOLE:.+]] = scf.for %[[J:.+]] = %c0 to %c16 step %c8 iter_args(%[[ACC:.+]] = %[[ZERO:.+]]) -> (vector<8xf32>)
// CHECK-NEXT: vector.transfer_read %arg0[%[[ROW]], %[[J]]]{{.*}} {in_bounds = [true]} : tensor<3x20xf32>, vector<8xf32>
// CHECK: math.exp %{{.+}} : vector<8xf32>
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC]], %{{.+}} : vector<8xf32>
// CHECK-NEXT: scf.yield %[[SUM]]
// CHECK: vector.transfer_read %{{.+}}[%c0, %c16], %{{[^ ]+}} : tensor<1x20xf32>, vector<8xf32>
// CHECK: %[[TAIL:.+]] = arith.addf %[[WHOLE]], %{{.+}} : vector<8xf32>
// CHECK: %[[MASK:.+]] = vector.constant_mask [4] : vector<8xi1>
// CHECK-NEXT: %[[KEPT:.+]] = arith.select %[[MASK]], %[[TAIL]], %[[WHOLE]]
// CHECK-NEXT: %[[ROWSUM:.+]] = vector.reduction <add>, %[[KEPT]] : vector<8xf32> into f32
// CHECK: arith.addf %{{.+}}, %[[ROWSUM]] : f32
func.func @softmax_sum(%x: tensor<3x20xf32>, %max: tensor<3xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %max : tensor<3x20xf32>, tensor<3xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %s = arith.subf %in, %m : f32
    %p = math.exp %s : f32
    %a = arith.addf %out, %p : f32
    linalg.yield %a : f32
  } -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

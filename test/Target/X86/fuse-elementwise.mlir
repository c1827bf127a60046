// RUN: tessel-opt %s --tessel-x86-fuse-elementwise --split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// SiLU as two generics (the sigmoid, then x * sigmoid(x)) becomes one that
// reads x once.
// CHECK-LABEL: @silu
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4x16xf32>)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NOT: linalg.generic
func.func @silu(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    %p = math.exp %n : f32
    %d = arith.addf %p, %one : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// An elementwise producer of a matmul's operand stays apart: the matmul's
// body must remain a multiply-accumulate for register blocking.
// CHECK-LABEL: @into_matmul
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: math.exp
func.func @into_matmul(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.exp %in : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A comparison read by two elementwise ops is recomputed in each: a tensor
// of booleans between generics would keep them scalar.
// CHECK-LABEL: @shared_comparison
// CHECK-NOT: tensor<4x16xi1>
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x16xf32>, tensor<4x16xf32>) outs(%{{.+}} : tensor<4x16xf32>)
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x16xf32>, tensor<4x16xf32>) outs(%{{.+}} : tensor<4x16xf32>)
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK-NOT: linalg.generic
func.func @shared_comparison(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<4x16xi1>
  %ef = tensor.empty() : tensor<4x16xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x16xf32>) outs(%eb : tensor<4x16xi1>) {
  ^bb0(%in: f32, %out: i1):
    %p = arith.cmpf ogt, %in, %zero : f32
    linalg.yield %p : i1
  } -> tensor<4x16xi1>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %y : tensor<4x16xi1>, tensor<4x16xf32>) outs(%ef : tensor<4x16xf32>) {
  ^bb0(%k: i1, %v: f32, %out: f32):
    %s = arith.select %k, %v, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %y : tensor<4x16xi1>, tensor<4x16xf32>) outs(%ef : tensor<4x16xf32>) {
  ^bb0(%k: i1, %v: f32, %out: f32):
    %s = arith.select %k, %zero, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %a, %b : tensor<4x16xf32>, tensor<4x16xf32>
}

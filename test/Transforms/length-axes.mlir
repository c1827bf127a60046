// RUN: tessel-opt %s --split-input-file --tessel-form-kernels --tessel-linalg-pipeline | FileCheck %s
// RUN: tessel-opt %s --split-input-file --tessel-length-axes | FileCheck %s --check-prefix=LINALG

// A model compiled with --max-shape at the bound 8: positions past the
// length matter only where something reads them.
// - The rows of a product that reaches a varying result: never read.
// - The rows of a product summed over the positions: all read.
// - The rows of a product filled past the length before that sum: read
//   only below the length (its kernel computes the fill too, so only the
//   product inside it is marked).
// - The rows of a product viewed as [8, 2, 2] and reduced to a varying
//   result: never read.
// CHECK-LABEL: func.func private @k0_matmul_sigmoid
// CHECK-SAME: -> (tensor<8x4xf32> {tessel.length_axis = 0 : i64})
// CHECK: linalg.generic
// CHECK-SAME: tessel.length_axis = 0
// CHECK: linalg.generic
// CHECK-SAME: tessel.length_axis = 0
// CHECK-LABEL: func.func private @k1_matmul
// CHECK-SAME: -> tensor<8x4xf32> attributes
// CHECK-NOT: tessel.length_axis
// CHECK-LABEL: func.func private @k3_matmul_where
// CHECK-SAME: -> tensor<8x4xf32> attributes
// CHECK: linalg.generic
// CHECK-SAME: tessel.length_axis = 0
// CHECK: linalg.generic
// CHECK-SAME: tessel.fills_past_length
// CHECK-NOT: tessel.length_axis
// CHECK-LABEL: func.func private @k6_matmul
// CHECK-SAME: -> (tensor<8x4xf32> {tessel.length_axis = 0 : i64})
// CHECK-LABEL: func.func private @k7_reduce
// CHECK-SAME: -> (tensor<8xf32> {tessel.length_axis = 0 : i64})
func.func @main(%x: tensor<8x4xf32> {tessel.varying = 0 : i64}, %w0: tensor<4x4xf32>,
                %w1: tensor<4x4xf32>, %w2: tensor<4x4xf32>, %w3: tensor<4x4xf32>,
                %length: tensor<1xi64> {tessel.length})
    -> (tensor<8x4xf32> {tessel.varying = 0 : i64}, tensor<4xf32>, tensor<4xf32>,
        tensor<8xf32> {tessel.varying = 0 : i64}) {
  %p = tessel.matmul %x, %w0 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %r = tessel.sigmoid %p : tensor<8x4xf32>
  %q = tessel.matmul %x, %w1 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %s = tessel.reduce "sum", %q {axes = array<i64: 0>} : (tensor<8x4xf32>) -> tensor<4xf32>
  %f = tessel.matmul %x, %w2 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %positions = tessel.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7]]> : tensor<8x1xi64>
  %l = tessel.reshape %length : tensor<1xi64> -> tensor<1x1xi64>
  %inside = tessel.compare "lt", %positions, %l : (tensor<8x1xi64>, tensor<1x1xi64>) -> tensor<8x1xi1>
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %filled = tessel.where %inside, %f, %zero {fills_past_length}
      : (tensor<8x1xi1>, tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %t = tessel.reduce "sum", %filled {axes = array<i64: 0>} : (tensor<8x4xf32>) -> tensor<4xf32>
  %g = tessel.matmul %x, %w3 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %flat = tessel.reshape %g : tensor<8x4xf32> -> tensor<32xf32>
  %back = tessel.reshape %flat : tensor<32xf32> -> tensor<8x2x2xf32>
  %m = tessel.reduce "max", %back {axes = array<i64: 1, 2>} : (tensor<8x2x2xf32>) -> tensor<8xf32>
  return %r, %s, %t, %m : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>
}

// -----

// Flattened away and back: the positions keep their 4 elements after
// them, so the first kernel's rows past the length are still never read.
// A kernel called twice, and one whose result a host op reads, are not
// marked.
// LINALG-LABEL: func.func private @k0_negate
// LINALG-SAME: -> (tensor<8x4xf32> {tessel.length_axis = 0 : i64})
// LINALG-LABEL: func.func private @k1_negate_twice
// LINALG-SAME: -> tensor<8x4xf32> attributes
// LINALG-LABEL: func.func private @k2_read_on_the_host
// LINALG-SAME: -> tensor<8x4xf32> attributes
// LINALG-LABEL: func.func private @k3_last
// LINALG-SAME: -> (tensor<8x2x2xf32> {tessel.length_axis = 0 : i64})
#identity2 = affine_map<(d0, d1) -> (d0, d1)>
#identity3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @k0_negate(%x: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {tessel.kernel} {
  %empty = tensor.empty() : tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [#identity2, #identity2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%empty : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
func.func private @k1_negate_twice(%x: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {tessel.kernel} {
  %empty = tensor.empty() : tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [#identity2, #identity2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%empty : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
func.func private @k2_read_on_the_host(%x: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {tessel.kernel} {
  %empty = tensor.empty() : tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [#identity2, #identity2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%empty : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
func.func private @k3_last(%x: tensor<8x2x2xf32>) -> tensor<8x2x2xf32> attributes {tessel.kernel} {
  %empty = tensor.empty() : tensor<8x2x2xf32>
  %y = linalg.generic {indexing_maps = [#identity3, #identity3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<8x2x2xf32>) outs(%empty : tensor<8x2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x2x2xf32>
  return %y : tensor<8x2x2xf32>
}
func.func @main(%x: tensor<8x4xf32> {tessel.varying = 0 : i64}, %length: tensor<1xi64> {tessel.length})
    -> (tensor<8x2x2xf32> {tessel.varying = 0 : i64}, tensor<8x4xf32> {tessel.varying = 0 : i64},
        tensor<8x4xf32> {tessel.varying = 0 : i64}, f32) {
  %a = call @k0_negate(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %flat = tensor.collapse_shape %a [[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
  %back = tensor.expand_shape %flat [[0, 1, 2]] output_shape [8, 2, 2] : tensor<32xf32> into tensor<8x2x2xf32>
  %b = call @k3_last(%back) : (tensor<8x2x2xf32>) -> tensor<8x2x2xf32>
  %c = call @k1_negate_twice(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %d = call @k1_negate_twice(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %e = call @k2_read_on_the_host(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %i = arith.constant 7 : index
  %j = arith.constant 0 : index
  %v = tensor.extract %e[%i, %j] : tensor<8x4xf32>
  return %b, %c, %e, %v : tensor<8x2x2xf32>, tensor<8x4xf32>, tensor<8x4xf32>, f32
}

// RUN: tessel-opt %s --canonicalize --split-input-file | FileCheck %s

// Constants combine at compile time, with broadcasting.
// CHECK-LABEL: @fold_add_constants
func.func @fold_add_constants() -> tensor<2x2xf32> {
  // CHECK: %[[C:.+]] = tessel.constant dense<{{\[}}[1.100000e+01, 2.200000e+01], [1.300000e+01, 2.400000e+01]]> : tensor<2x2xf32>
  // CHECK-NEXT: return %[[C]]
  %a = tessel.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = tessel.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %0 = tessel.add %a, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Unsigned division follows the element type's signedness.
// CHECK-LABEL: @fold_unsigned_div
func.func @fold_unsigned_div() -> tensor<2xui8> {
  // CHECK: tessel.constant dense<[127, 1]> : tensor<2xui8>
  %a = tessel.constant dense<[254, 3]> : tensor<2xui8>
  %b = tessel.constant dense<[2, 2]> : tensor<2xui8>
  %0 = tessel.div %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  return %0 : tensor<2xui8>
}

// -----

// Integer division by zero is left to run time, not folded.
// CHECK-LABEL: @no_fold_div_by_zero
func.func @no_fold_div_by_zero() -> tensor<2xi32> {
  // CHECK: tessel.div
  %a = tessel.constant dense<[4, 3]> : tensor<2xi32>
  %b = tessel.constant dense<[2, 0]> : tensor<2xi32>
  %0 = tessel.div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// x * 1 and x / 1 are x when broadcasting keeps x's type.
// CHECK-LABEL: @multiplicative_identity
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
func.func @multiplicative_identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NOT: tessel.mul
  // CHECK-NOT: tessel.div
  // CHECK: return %[[X]]
  %one = tessel.constant dense<1.0> : tensor<1xf32>
  %0 = tessel.mul %x, %one : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %1 = tessel.div %0, %one : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// x * 1 that broadcasts x to a larger shape is not an identity.
// CHECK-LABEL: @broadcasting_identity_kept
func.func @broadcasting_identity_kept(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  // CHECK: tessel.mul
  %one = tessel.constant dense<1.0> : tensor<2x4xf32>
  %0 = tessel.mul %x, %one : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// x + 0.0 is not folded for floats (-0.0 + 0.0 is +0.0), but is for integers.
// CHECK-LABEL: @additive_identity
func.func @additive_identity(%f: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  // CHECK: %[[F:.+]] = tessel.add
  // CHECK-NEXT: return %[[F]], %arg1
  %zf = tessel.constant dense<0.0> : tensor<4xf32>
  %zi = tessel.constant dense<0> : tensor<4xi32>
  %0 = tessel.add %f, %zf : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = tessel.add %zi, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xf32>, tensor<4xi32>
}

// -----

// relu is idempotent.
// CHECK-LABEL: @relu_relu
func.func @relu_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tessel.relu
  // CHECK-NOT: tessel.relu
  %0 = tessel.relu %x : tensor<4xf32>
  %1 = tessel.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// flatten becomes a reshape; chains of reshapes collapse into one.
// CHECK-LABEL: @reshape_chain
func.func @reshape_chain(%x: tensor<1x512x1x1xf32>) -> tensor<512xf32> {
  // CHECK: %[[R:.+]] = tessel.reshape %arg0 : tensor<1x512x1x1xf32> -> tensor<512xf32>
  // CHECK-NEXT: return %[[R]]
  %0 = tessel.flatten %x {axis = 1 : i64} : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
  %1 = tessel.reshape %0 : tensor<1x512xf32> -> tensor<512xf32>
  return %1 : tensor<512xf32>
}

// -----

// A reshape of a constant is a constant.
// CHECK-LABEL: @reshape_constant
func.func @reshape_constant() -> tensor<2x2xf32> {
  // CHECK: tessel.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = tessel.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %1 = tessel.reshape %0 : tensor<4xf32> -> tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}

// -----

// Two transposes compose; the identity permutation disappears.
// CHECK-LABEL: @transpose_chain
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  // CHECK: %[[T:.+]] = tessel.transpose %arg0 {perm = array<i64: 2, 0, 1>}
  // CHECK-NEXT: return %[[T]], %arg0
  %0 = tessel.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = tessel.transpose %0 {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %2 = tessel.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %1, %2 : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// A transpose of a constant is a constant.
// CHECK-LABEL: @transpose_constant
func.func @transpose_constant() -> tensor<3x2xi32> {
  // CHECK: tessel.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
  %0 = tessel.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %1 = tessel.transpose %0 {perm = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  return %1 : tensor<3x2xi32>
}

// -----

// Constant shape vectors concatenate at compile time.
// CHECK-LABEL: @concat_constants
func.func @concat_constants(%x: tensor<2xf32>) -> (tensor<3xi64>, tensor<2xf32>) {
  // CHECK: %[[C:.+]] = tessel.constant dense<[1, 2, 3]> : tensor<3xi64>
  // CHECK-NEXT: return %[[C]], %arg0
  %a = tessel.constant dense<[1]> : tensor<1xi64>
  %b = tessel.constant dense<[2, 3]> : tensor<2xi64>
  %0 = tessel.concat %a, %b {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %1 = tessel.concat %x {axis = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %0, %1 : tensor<3xi64>, tensor<2xf32>
}

// -----

// A constant B of a Gemm with trans_b is transposed at compile time; a
// B that is not constant keeps the flag.
// CHECK-LABEL: @gemm_constant_trans_b
func.func @gemm_constant_trans_b(%a: tensor<1x2xf32>, %b: tensor<3x2xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>) {
  // CHECK: %[[T:.+]] = tessel.constant dense<{{\[}}[1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
  // CHECK: tessel.gemm %arg0, %[[T]] : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x3xf32>
  // CHECK: tessel.gemm %arg0, %arg1 {trans_b = true}
  %w = tessel.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %0 = tessel.gemm %a, %w {trans_b = true} : (tensor<1x2xf32>, tensor<3x2xf32>) -> tensor<1x3xf32>
  %1 = tessel.gemm %a, %b {trans_b = true} : (tensor<1x2xf32>, tensor<3x2xf32>) -> tensor<1x3xf32>
  return %0, %1 : tensor<1x3xf32>, tensor<1x3xf32>
}

// -----

// Casts of constants fold with ONNX's rules: floats truncate toward zero,
// unsigned sources zero-extend, anything nonzero is true.
// CHECK-LABEL: @cast_constants
func.func @cast_constants(%x: tensor<2xf32>) -> (tensor<3xi32>, tensor<2xi64>, tensor<3xi1>, tensor<2xf32>) {
  // CHECK-DAG: tessel.constant dense<[-2, 2, 0]> : tensor<3xi32>
  // CHECK-DAG: tessel.constant dense<[255, 1]> : tensor<2xi64>
  // CHECK-DAG: tessel.constant dense<[true, false, true]> : tensor<3xi1>
  // CHECK: return {{.*}}, %arg0
  %f = tessel.constant dense<[-2.7, 2.7, 0.5]> : tensor<3xf32>
  %u = tessel.constant dense<[255, 1]> : tensor<2xui8>
  %b = tessel.constant dense<[3.0, 0.0, -0.5]> : tensor<3xf32>
  %0 = tessel.cast %f : tensor<3xf32> -> tensor<3xi32>
  %1 = tessel.cast %u : tensor<2xui8> -> tensor<2xi64>
  %2 = tessel.cast %b : tensor<3xf32> -> tensor<3xi1>
  %3 = tessel.cast %x : tensor<2xf32> -> tensor<2xf32>
  return %0, %1, %2, %3 : tensor<3xi32>, tensor<2xi64>, tensor<3xi1>, tensor<2xf32>
}

// -----

// Quantizing what was dequantized with the same parameters gives it back.
// CHECK-LABEL: @quantize_of_dequantize
func.func @quantize_of_dequantize(%q: tensor<4x!quant.uniform<u8:f32, 0.1:128>>)
    -> (tensor<4x!quant.uniform<u8:f32, 0.1:128>>, tensor<4x!quant.uniform<u8:f32, 0.2:128>>) {
  // CHECK: %[[D:.+]] = tessel.dequantize %[[Q:[^ ]+]]
  // CHECK: %[[R:.+]] = tessel.quantize %[[D]]
  // CHECK: return %[[Q]], %[[R]]
  %d = tessel.dequantize %q : tensor<4x!quant.uniform<u8:f32, 0.1:128>> -> tensor<4xf32>
  %same = tessel.quantize %d : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 0.1:128>>
  %other = tessel.quantize %d : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 0.2:128>>
  return %same, %other : tensor<4x!quant.uniform<u8:f32, 0.1:128>>, tensor<4x!quant.uniform<u8:f32, 0.2:128>>
}

// -----

// An integer initializer typed as quantized is a quantized constant.
// CHECK-LABEL: @storage_cast_of_constant
func.func @storage_cast_of_constant() -> tensor<2x!quant.uniform<i8:f32, 0.5>> {
  // CHECK: %[[C:.+]] = tessel.constant dense<[-3, 7]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>
  // CHECK-NEXT: return %[[C]]
  %c = tessel.constant dense<[-3, 7]> : tensor<2xi8>
  %q = tessel.bitcast %c : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  return %q : tensor<2x!quant.uniform<i8:f32, 0.5>>
}

// -----

// Transposing a per-axis quantized weight moves its parameters with the axis.
// CHECK-LABEL: @transpose_per_axis_constant
func.func @transpose_per_axis_constant() -> tensor<3x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>> {
  // CHECK: tessel.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32:1, {1.000000e-01,2.000000e-01}>>
  %c = tessel.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8> -> tensor<2x3x!quant.uniform<i8:f32:0, {0.1, 0.2}>>
  %t = tessel.transpose %c {perm = array<i64: 1, 0>}
      : (tensor<2x3x!quant.uniform<i8:f32:0, {0.1, 0.2}>>) -> tensor<3x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>
  return %t : tensor<3x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>
}

// -----

// Quantized arithmetic on constants is left to the kernels' semantics.
// CHECK-LABEL: @no_fold_quantized_add
func.func @no_fold_quantized_add() -> tensor<2x!quant.uniform<u8:f32, 0.5>> {
  // CHECK: tessel.add
  %a = tessel.constant dense<[1, 2]> : tensor<2xui8> -> tensor<2x!quant.uniform<u8:f32, 0.5>>
  %0 = tessel.add %a, %a : (tensor<2x!quant.uniform<u8:f32, 0.5>>, tensor<2x!quant.uniform<u8:f32, 0.5>>)
      -> tensor<2x!quant.uniform<u8:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<u8:f32, 0.5>>
}

// -----

// Constant indices are counted at compile time, each entry against its
// tuple position's extent; a check of a count known to be zero goes, one
// known not to be stays (and fails every run).
// CHECK-LABEL: @count_constant_indices
func.func @count_constant_indices() -> tensor<i64> {
  // CHECK: %[[TWO:.+]] = tessel.constant dense<2> : tensor<i64>
  // CHECK-NOT: check_zero %{{.+}} {node = "in range"
  // CHECK: tessel.check_zero %[[TWO]] {node = "out of range"
  // CHECK: return %[[TWO]]
  %i = tessel.constant dense<[[-3, 3], [2, -5], [-4, 3]]> : tensor<3x2xi64>
  %0 = tessel.count_out_of_range %i {extents = array<i64: 3, 4>} : tensor<3x2xi64> -> tensor<i64>
  %j = tessel.constant dense<[0, -1]> : tensor<2xi32>
  %1 = tessel.count_out_of_range %j {extents = array<i64: 1>} : tensor<2xi32> -> tensor<i64>
  tessel.check_zero %1 {node = "in range", problem = "Gather indices outside [-1, 1)"} : tensor<i64>
  tessel.check_zero %0 {node = "out of range", problem = "GatherND indices outside [-3, 3) and [-4, 4)"} : tensor<i64>
  return %0 : tensor<i64>
}

// -----

// Min and max of constants fold (shape arithmetic such as CenterCropPad's
// pads); integers compare signed, and NaN propagates.
// CHECK-LABEL: @fold_min_max
// CHECK-DAG: tessel.constant dense<[4, -2, 7]> : tensor<3xi64>
// CHECK-DAG: tessel.constant dense<[1, -5, 3]> : tensor<3xi64>
// CHECK-DAG: tessel.constant dense<[2.000000e+00, 0x7FC00000]> : tensor<2xf32>
// CHECK-NOT: tessel.max
// CHECK-NOT: tessel.min
func.func @fold_min_max() -> (tensor<3xi64>, tensor<3xi64>, tensor<2xf32>) {
  %a = tessel.constant dense<[1, -2, 7]> : tensor<3xi64>
  %b = tessel.constant dense<[4, -5, 3]> : tensor<3xi64>
  %max = tessel.max %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %min = tessel.min %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %c = tessel.constant dense<[2.0, 0x7FC00000]> : tensor<2xf32>
  %d = tessel.constant dense<[1.0, 5.0]> : tensor<2xf32>
  %fmax = tessel.max %c, %d : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %max, %min, %fmax : tensor<3xi64>, tensor<3xi64>, tensor<2xf32>
}

// -----

// An input without elements adds nothing to a concatenation.
// CHECK-LABEL: @concat_drops_empty
// CHECK: tessel.concat %arg0, %arg1 {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
func.func @concat_drops_empty(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>, %e: tensor<2x0xf32>) -> tensor<2x7xf32> {
  %0 = tessel.concat %a, %e, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

// A gather from a splat is a splat of the gathered shape. (Its raw data
// holds one element: reading it at each gathered offset read past its end,
// so a tree ensemble's node modes, all zero, folded to whatever followed.)
// CHECK-LABEL: @gather_from_splat
// CHECK: %[[G:.+]] = tessel.constant dense<7> : tensor<2x3xi64>
// CHECK: return %[[G]]
func.func @gather_from_splat() -> tensor<2x3xi64> {
  %data = tessel.constant dense<7> : tensor<90xi64>
  %indices = tessel.constant dense<[[0, 15, 30], [89, 45, 1]]> : tensor<2x3xi64>
  %0 = tessel.gather %data, %indices {axis = 0 : i64} : (tensor<90xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

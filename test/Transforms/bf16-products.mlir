// RUN: tessel-opt %s --tessel-bf16-products=all=true --split-input-file | FileCheck %s --check-prefix=ALL
// RUN: tessel-opt %s --tessel-bf16-products --split-input-file | FileCheck %s --check-prefix=MARKED

// --precision bf16: the gemm reads its input cast to bf16 and its weight as
// a bf16 constant, rounded to nearest, ties to even: 1 + 2^-8 -> 1 (even),
// 1 + 3 * 2^-8 -> 1 + 2^-6 (printed 1.015630), 0.1 -> 0x3DCD
// (0.10009765625), 65504 -> 65536. B was transposed: it is stored
// transposed back, [K, N]. The bias and the result stay f32.
// ALL-LABEL: @gemm_transposed
// ALL: %[[W:.+]] = tessel.constant dense<{{\[\[}}1.000000e+00, -2.500000e+00], [1.015630e+00, 1.000980e-01], [3.000000e+00, 6.553600e+04]]> : tensor<3x2xbf16>
// ALL: %[[X:.+]] = tessel.cast %arg0 : tensor<4x3xf32> -> tensor<4x3xbf16>
// ALL: tessel.gemm %[[X]], %[[W]], %{{.+}} {tessel.precision = "bf16"} : (tensor<4x3xbf16>, tensor<3x2xbf16>, tensor<2xf32>) -> tensor<4x2xf32>
// ALL-NOT: tensor<2x3xf32>
// MARKED-LABEL: @gemm_transposed
// MARKED-NOT: bf16
func.func @gemm_transposed(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = tessel.constant dense<[[1.00390625, 1.01171875, 3.0], [-2.5, 0.1, 65504.0]]> : tensor<2x3xf32>
  %c = tessel.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %y = tessel.gemm %x, %w, %c {trans_b = true} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Without `all`, the products that post-training quantization marked bf16:
// two layers that share a weight share its bf16 constant; a layer kept in
// f32 keeps the f32 one; a depthwise convolution is not a bf16 product (no
// pairs of input channels to multiply) and stays f32. With `all`, marked
// layers keep what they were given.
// MARKED-LABEL: @marked
// MARKED-DAG: %[[F32:.+]] = tessel.constant {{.+}} : tensor<3x2xf32>
// MARKED-DAG: %[[BF16:.+]] = tessel.constant {{.+}} : tensor<3x2xbf16>
// MARKED: %[[X:.+]] = tessel.cast %arg0
// MARKED: tessel.matmul %[[X]], %[[BF16]] {tessel.precision = "bf16"}
// MARKED: %[[X2:.+]] = tessel.cast %arg0
// MARKED: tessel.matmul %[[X2]], %[[BF16]] {tessel.precision = "bf16"}
// MARKED: tessel.matmul %arg0, %[[F32]] {tessel.precision = "f32"}
// MARKED: tessel.conv %arg1, %{{.+}} {{.+}} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x5x5xf32>
// ALL-LABEL: @marked
// ALL-NOT: bf16>
func.func @marked(%x: tensor<4x3xf32>, %image: tensor<1x4x5x5xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<1x4x5x5xf32>) {
  %w = tessel.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %a = tessel.matmul %x, %w {tessel.precision = "bf16"} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = tessel.matmul %x, %w {tessel.precision = "bf16"} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %f = tessel.matmul %x, %w {tessel.precision = "f32"} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %dw = tessel.constant dense<0.5> : tensor<4x1x3x3xf32>
  %d = tessel.conv %image, %dw {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, tessel.precision = "bf16"} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x5x5xf32>
  return %a, %b, %f, %d : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<1x4x5x5xf32>
}

// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// Quantizing divides by the scale, rounds half to even, adds the zero point
// and saturates, in f32; the result is the signless storage.
// CHECK-LABEL: @quantize
// CHECK: linalg.generic
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: math.roundeven
// CHECK: arith.addf
// CHECK: arith.maxnumf
// CHECK: arith.minnumf
// CHECK-NEXT: arith.fptosi %{{.+}} : f32 to i32
// CHECK-NEXT: arith.trunci %{{.+}} : i32 to i8
// CHECK: -> tensor<4xi8>
func.func @quantize(%x: tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 0.1:128>> {
  %0 = tessel.quantize %x : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 0.1:128>>
  return %0 : tensor<4x!quant.uniform<u8:f32, 0.1:128>>
}

// -----

// Per-axis parameters are operands broadcast along the axis.
// CHECK-LABEL: @dequantize_per_axis
// CHECK-DAG: %[[SCALES:.+]] = arith.constant dense<{{\[}}[1.000000e-01], [2.000000e-01]]> : tensor<2x1xf32>
// CHECK-DAG: %[[ZEROS:.+]] = arith.constant dense<{{\[}}[0.000000e+00], [-3.000000e+00]]> : tensor<2x1xf32>
// CHECK: %[[S:.+]] = tensor.collapse_shape %[[SCALES]]
// CHECK: %[[Z:.+]] = tensor.collapse_shape %[[ZEROS]]
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[S]], %[[Z]] : tensor<2x3xi8>, tensor<2xf32>, tensor<2xf32>)
// CHECK: arith.extsi %{{.+}} : i8 to i32
// CHECK-NEXT: arith.sitofp
// CHECK-NEXT: arith.subf
// CHECK-NEXT: arith.mulf
func.func @dequantize_per_axis(%x: tensor<2x3x!quant.uniform<i8:f32:0, {0.1, 0.2:-3}>>) -> tensor<2x3xf32> {
  %0 = tessel.dequantize %x : tensor<2x3x!quant.uniform<i8:f32:0, {0.1, 0.2:-3}>> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A lookup reads its table at the storage value (plus 128 when signed).
// CHECK-LABEL: @lookup
// CHECK: linalg.generic
// CHECK: arith.extsi %{{.+}} : i8 to i32
// CHECK: arith.addi %{{.+}}, %c128_i32
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: tensor.extract %{{.+}}[%{{.+}}] : tensor<256xi8>
func.func @lookup(%x: tensor<4x!quant.uniform<i8:f32, 0.1>>, %t: tensor<256x!quant.uniform<u8:f32, 0.5>>)
    -> tensor<4x!quant.uniform<u8:f32, 0.5>> {
  %0 = tessel.lookup %x, %t : (tensor<4x!quant.uniform<i8:f32, 0.1>>, tensor<256x!quant.uniform<u8:f32, 0.5>>)
      -> tensor<4x!quant.uniform<u8:f32, 0.5>>
  return %0 : tensor<4x!quant.uniform<u8:f32, 0.5>>
}

// -----

// A constant weight (signed, zero point 0) takes the input's zero point out
// of the inner loop: bias - 128 * sum(w) per output channel starts the
// accumulator ([10 - 128 * (1 + 3 + 5), -20 - 128 * (2 + 4 + 6)]), the
// product multiplies storage integers, and the requantization multiplies
// the i32 sum by 0.5 * 0.25 / 1.0 in f64, adds the zero point 3, rounds
// half to even and saturates. The accumulator's magnitude is at most
// 1556 + 255 * 12, so the rounded value fits i32 and saturates in integers.
// CHECK-LABEL: @matmul_folded_zero_point
// CHECK-DAG: %[[INIT:.+]] = arith.constant dense<[-1142, -1556]> : tensor<2xi32>
// CHECK: linalg.generic {{.*}} ins(%[[INIT]] : tensor<2xi32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK-NEXT: arith.extsi %{{.+}} : i8 to i32
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK: linalg.generic
// CHECK: arith.sitofp %{{.+}} : i32 to f64
// CHECK-NEXT: arith.mulf %{{.+}}, %cst{{.*}} : f64
// CHECK: arith.addf
// CHECK-NEXT: math.roundeven
// CHECK-NEXT: arith.fptosi %{{.+}} : f64 to i32
// CHECK: arith.maxsi %{{.+}}, %c0_i32
// CHECK: arith.minsi %{{.+}}, %c255_i32
// CHECK-NEXT: arith.trunci %{{.+}} : i32 to i8
func.func @matmul_folded_zero_point(%a: tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>)
    -> tensor<2x2x!quant.uniform<u8:f32, 1.0:3>> {
  %w = tessel.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.25>>
  %0 = tessel.matmul %a, %w : (tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, tensor<3x2x!quant.uniform<i8:f32, 0.25>>)
      -> tensor<2x2x!quant.uniform<u8:f32, 1.0:3>>
  %b = tessel.constant dense<[10, -20]> : tensor<2xi32> -> tensor<2x!quant.uniform<i32:f32, 0.125>>
  %1 = tessel.gemm %a, %w, %b : (tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, tensor<3x2x!quant.uniform<i8:f32, 0.25>>,
                                 tensor<2x!quant.uniform<i32:f32, 0.125>>) -> tensor<2x2x!quant.uniform<u8:f32, 1.0:3>>
  return %1 : tensor<2x2x!quant.uniform<u8:f32, 1.0:3>>
}

// -----

// A multiplier so large that a rounded value may leave i32 (2^20 * 3 * 255
// * 127 > 2^31) saturates in f64 before the conversion.
// CHECK-LABEL: @matmul_unbounded_requantization
// CHECK: math.roundeven
// CHECK: arith.maxnumf
// CHECK: arith.minnumf
// CHECK-NEXT: arith.fptosi %{{.+}} : f64 to i32
func.func @matmul_unbounded_requantization(%a: tensor<2x3x!quant.uniform<u8:f32, 1024.0>>)
    -> tensor<2x2x!quant.uniform<u8:f32, 0.0009765625>> {
  %w = tessel.constant dense<[[127, 2], [3, 4], [5, 6]]> : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 1.0>>
  %0 = tessel.matmul %a, %w : (tensor<2x3x!quant.uniform<u8:f32, 1024.0>>, tensor<3x2x!quant.uniform<i8:f32, 1.0>>)
      -> tensor<2x2x!quant.uniform<u8:f32, 0.0009765625>>
  return %0 : tensor<2x2x!quant.uniform<u8:f32, 0.0009765625>>
}

// -----

// Two activations with zero points: both are centred in i16 first.
// CHECK-LABEL: @matmul_of_activations
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK: arith.subi %{{.+}}, %c128_i32
// CHECK-NEXT: arith.trunci %{{.+}} : i32 to i16
// CHECK: arith.subi %{{.+}}, %c5_i32
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.extsi %{{.+}} : i16 to i32
// CHECK-NEXT: arith.extsi %{{.+}} : i16 to i32
func.func @matmul_of_activations(%a: tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, %b: tensor<3x2x!quant.uniform<i8:f32, 0.25:5>>)
    -> tensor<2x2x!quant.uniform<i32:f32, 0.125>> {
  %0 = tessel.matmul %a, %b : (tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, tensor<3x2x!quant.uniform<i8:f32, 0.25:5>>)
      -> tensor<2x2x!quant.uniform<i32:f32, 0.125>>
  return %0 : tensor<2x2x!quant.uniform<i32:f32, 0.125>>
}

// -----

// A channels-last convolution pads with the input's zero point.
// CHECK-LABEL: @conv_channels_last
// CHECK: tensor.pad
// CHECK: tensor.yield %c-126_i8 : i8
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
func.func @conv_channels_last(%x: tensor<1x4x4x2x!quant.uniform<u8:f32, 0.5:130>>) -> tensor<1x4x4x2x!quant.uniform<u8:f32, 1.0>> {
  %w = tessel.constant dense<1> : tensor<3x3x2x2xi8> -> tensor<3x3x2x2x!quant.uniform<i8:f32, 0.25>>
  %0 = tessel.conv %x, %w {channels_last, dilations = array<i64: 1, 1>, group = 1 : i64,
                           pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x4x4x2x!quant.uniform<u8:f32, 0.5:130>>, tensor<3x3x2x2x!quant.uniform<i8:f32, 0.25>>)
      -> tensor<1x4x4x2x!quant.uniform<u8:f32, 1.0>>
  return %0 : tensor<1x4x4x2x!quant.uniform<u8:f32, 1.0>>
}

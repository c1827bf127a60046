// RUN: tessel-opt %s --convert-tessel-to-linalg --split-input-file | FileCheck %s

// Broadcast operands are collapsed views read through projected maps.
// CHECK-DAG: #[[BCAST:.+]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: @add_channel_bias
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x4x4xf32>, %[[B:.+]]: tensor<8x1x1xf32>)
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[B]] {{\[}}[0, 1, 2]] : tensor<8x1x1xf32> into tensor<8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[BCAST]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[C]] : tensor<1x8x4x4xf32>, tensor<8xf32>)
// CHECK: arith.addf
func.func @add_channel_bias(%x: tensor<1x8x4x4xf32>, %b: tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  %0 = tessel.add %x, %b : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}

// -----

// Unsigned tensors become signless; the division stays unsigned, and the
// function signature is converted with the ops.
// CHECK-LABEL: @div_unsigned
// CHECK-SAME: (%{{.+}}: tensor<4xi8>, %{{.+}}: tensor<4xi8>) -> tensor<4xi8>
// CHECK: arith.divui
func.func @div_unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %0 = tessel.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// Constant clip bounds become scalars of the body.
// CHECK-LABEL: @activations
// CHECK: arith.maximumf
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: math.tanh
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<8xf32>)
// CHECK: %[[LO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.maximumf %{{.+}}, %[[LO]]
// CHECK: %[[HI:.+]] = arith.constant 6.000000e+00 : f32
// CHECK: arith.minimumf %{{.+}}, %[[HI]]
func.func @activations(%x: tensor<8xf32>) -> tensor<8xf32> {
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %six = tessel.constant dense<6.0> : tensor<f32>
  %0 = tessel.relu %x : tensor<8xf32>
  %1 = tessel.sigmoid %0 : tensor<8xf32>
  %2 = tessel.tanh %1 : tensor<8xf32>
  %3 = tessel.clip %2 min(%zero : tensor<f32>) max(%six : tensor<f32>) : tensor<8xf32>
  return %3 : tensor<8xf32>
}

// -----

// Clip without a lower bound only takes the minimum; a runtime bound is
// read from its rank-0 tensor.
// CHECK-DAG: #[[SCALAR:.+]] = affine_map<(d0) -> ()>
// CHECK-LABEL: @clip_upper
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[SCALAR]], #{{.+}}]
// CHECK-NOT: arith.maxsi
// CHECK: arith.minsi
func.func @clip_upper(%x: tensor<8xi8>, %hi: tensor<i8>) -> tensor<8xi8> {
  %0 = tessel.clip %x max(%hi : tensor<i8>) : tensor<8xi8>
  return %0 : tensor<8xi8>
}

// -----

// A batch norm with runtime parameters computes the formula per channel.
// CHECK-LABEL: @batch_norm
// CHECK: tensor.collapse_shape
// CHECK: linalg.generic
// CHECK: math.sqrt
// CHECK: arith.subf
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @batch_norm(%x: tensor<1x2x3x3xf32>, %p: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %0 = tessel.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-5 : f32} : tensor<1x2x3x3xf32>, tensor<2xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Casts pick the arith op by the tessel element types' signedness.
// CHECK-LABEL: @casts
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK: arith.cmpf une
func.func @casts(%x: tensor<4xf32>) -> (tensor<4xui8>, tensor<4xi32>, tensor<4xi1>) {
  %0 = tessel.cast %x : tensor<4xf32> -> tensor<4xui8>
  %1 = tessel.cast %0 : tensor<4xui8> -> tensor<4xi32>
  %2 = tessel.cast %x : tensor<4xf32> -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xui8>, tensor<4xi32>, tensor<4xi1>
}

// -----

// Comparisons give i1 (unsigned integers compare unsigned); where selects
// with three-way broadcasting.
// CHECK-LABEL: @compare_where
// CHECK: arith.cmpi ult, %{{.+}}, %{{.+}} : i8
// CHECK: linalg.generic
// CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
func.func @compare_where(%a: tensor<4xui8>, %b: tensor<ui8>, %x: tensor<2x4xf32>, %y: tensor<f32>) -> tensor<2x4xf32> {
  %0 = tessel.compare "lt", %a, %b : (tensor<4xui8>, tensor<ui8>) -> tensor<4xi1>
  %1 = tessel.where %0, %x, %y : (tensor<4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// Boolean logic is integer logic on i1; not is xor with true.
// CHECK-LABEL: @logic
// CHECK: arith.xori
// CHECK: linalg.generic
// CHECK: arith.andi
func.func @logic(%a: tensor<4xi1>, %b: tensor<i1>) -> tensor<4xi1> {
  %0 = tessel.not %a : tensor<4xi1>
  %1 = tessel.and %0, %b : (tensor<4xi1>, tensor<i1>) -> tensor<4xi1>
  return %1 : tensor<4xi1>
}

// -----

// 8-bit floats convert through f32 bits: a value is divided by its binade's
// quantum and rounded half to even, and with saturate an overflow becomes
// the largest finite value (0x7E in f8E4M3FN). Decoding rebiases the
// exponent into f32's. Floats convert to 4-bit integers through i32,
// keeping the low bits.
// CHECK-LABEL: @minifloat_casts
// CHECK: math.roundeven
// CHECK: arith.constant 126 : i32
// CHECK: arith.trunci %{{.+}} : i32 to i8
// CHECK: arith.bitcast %{{.+}} : i8 to f8E4M3FN
// CHECK: arith.bitcast %{{.+}} : f8E5M2 to i8
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK: arith.fptosi %{{.+}} : f32 to i32
// CHECK: arith.trunci %{{.+}} : i32 to i4
func.func @minifloat_casts(%x: tensor<4xf32>, %y: tensor<4xf8E5M2>)
    -> (tensor<4xf8E4M3FN>, tensor<4xf32>, tensor<4xi4>) {
  %0 = tessel.cast %x {saturate} : tensor<4xf32> -> tensor<4xf8E4M3FN>
  %1 = tessel.cast %y : tensor<4xf8E5M2> -> tensor<4xf32>
  %2 = tessel.cast %x : tensor<4xf32> -> tensor<4xi4>
  return %0, %1, %2 : tensor<4xf8E4M3FN>, tensor<4xf32>, tensor<4xi4>
}

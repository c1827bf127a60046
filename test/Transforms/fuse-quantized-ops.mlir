// RUN: tessel-opt %s --tessel-fuse-quantized-ops --canonicalize --split-input-file | FileCheck %s

!x = !quant.uniform<u8:f32, 0.5:128>
!w = !quant.uniform<i8:f32:0, {0.25, 0.125}>
!b = !quant.uniform<i32:f32:0, {0.125, 0.0625}>
!y = !quant.uniform<u8:f32, 1.0:3>

// dequantize -> conv -> relu -> quantize is one quantized conv and its relu.
// CHECK-LABEL: @conv_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4x4x!quant.uniform<u8:f32, 5.000000e-01:128>>
// CHECK: %[[C:.+]] = tessel.conv %[[X]], %{{.+}}, %{{.+}} {{.*}} -> tensor<1x2x4x4x!quant.uniform<u8:f32, 1.000000e+00:3>>
// CHECK-NEXT: %[[R:.+]] = tessel.relu %[[C]]
// CHECK-NEXT: return %[[R]]
func.func @conv_relu(%x: tensor<1x2x4x4x!x>) -> tensor<1x2x4x4x!y> {
  %w = tessel.constant dense<[[[[1]], [[-2]]], [[[3]], [[-4]]]]> : tensor<2x2x1x1xi8> -> tensor<2x2x1x1x!w>
  %b = tessel.constant dense<[10, -20]> : tensor<2xi32> -> tensor<2x!b>
  %xd = tessel.dequantize %x : tensor<1x2x4x4x!x> -> tensor<1x2x4x4xf32>
  %wd = tessel.dequantize %w : tensor<2x2x1x1x!w> -> tensor<2x2x1x1xf32>
  %bd = tessel.dequantize %b : tensor<2x!b> -> tensor<2xf32>
  %c = tessel.conv %xd, %wd, %bd {dilations = array<i64: 1, 1>, group = 1 : i64,
                                   pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %r = tessel.relu %c : tensor<1x2x4x4xf32>
  %q = tessel.quantize %r : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x!y>
  return %q : tensor<1x2x4x4x!y>
}

// -----

// A clip's float bounds become quantized bounds of the result's type
// (ReLU6 at scale 0.05: 0 -> 3, 6 -> 123).
// CHECK-LABEL: @matmul_clip
// CHECK-DAG: %[[LOW:.+]] = tessel.constant dense<3> : tensor<ui8> -> tensor<!quant.uniform<u8:f32, 5.000000e-02:3>>
// CHECK-DAG: %[[HIGH:.+]] = tessel.constant dense<123> : tensor<ui8> -> tensor<!quant.uniform<u8:f32, 5.000000e-02:3>>
// CHECK: %[[M:.+]] = tessel.matmul
// CHECK: tessel.clip %[[M]] min(%[[LOW]] : {{.+}}) max(%[[HIGH]] : {{.+}})
func.func @matmul_clip(%a: tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2x2x!quant.uniform<u8:f32, 0.05:3>> {
  %w = tessel.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.25>>
  %ad = tessel.dequantize %a : tensor<2x3x!quant.uniform<u8:f32, 0.5:128>> -> tensor<2x3xf32>
  %wd = tessel.dequantize %w : tensor<3x2x!quant.uniform<i8:f32, 0.25>> -> tensor<3x2xf32>
  %m = tessel.matmul %ad, %wd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %lo = tessel.constant dense<0.0> : tensor<f32>
  %hi = tessel.constant dense<6.0> : tensor<f32>
  %c = tessel.clip %m min(%lo : tensor<f32>) max(%hi : tensor<f32>) : tensor<2x2xf32>
  %q = tessel.quantize %c : tensor<2x2xf32> -> tensor<2x2x!quant.uniform<u8:f32, 0.05:3>>
  return %q : tensor<2x2x!quant.uniform<u8:f32, 0.05:3>>
}

// -----

// A product read as float: its i32 accumulator, dequantized.
// CHECK-LABEL: @matmul_to_float
// CHECK: %[[M:.+]] = tessel.matmul {{.*}} -> tensor<2x2x!quant.uniform<i32:f32, 1.250000e-01>>
// CHECK: %[[D:.+]] = tessel.dequantize %[[M]]
// CHECK: tessel.softmax %[[D]]
func.func @matmul_to_float(%a: tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2x2xf32> {
  %w = tessel.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8> -> tensor<3x2x!quant.uniform<i8:f32, 0.25>>
  %ad = tessel.dequantize %a : tensor<2x3x!quant.uniform<u8:f32, 0.5:128>> -> tensor<2x3xf32>
  %wd = tessel.dequantize %w : tensor<3x2x!quant.uniform<i8:f32, 0.25>> -> tensor<3x2xf32>
  %m = tessel.matmul %ad, %wd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %s = tessel.softmax %m {axis = 1 : i64} : tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

// -----

// A residual add of two quantized tensors.
// CHECK-LABEL: @residual_add
// CHECK-NEXT: %[[A:.+]] = tessel.add %arg0, %arg1 {{.*}} -> tensor<8x!quant.uniform<u8:f32, 2.500000e-01:5>>
// CHECK-NEXT: return %[[A]]
func.func @residual_add(%a: tensor<8x!quant.uniform<u8:f32, 0.1:3>>, %b: tensor<8x!quant.uniform<u8:f32, 0.2>>)
    -> tensor<8x!quant.uniform<u8:f32, 0.25:5>> {
  %ad = tessel.dequantize %a : tensor<8x!quant.uniform<u8:f32, 0.1:3>> -> tensor<8xf32>
  %bd = tessel.dequantize %b : tensor<8x!quant.uniform<u8:f32, 0.2>> -> tensor<8xf32>
  %s = tessel.add %ad, %bd : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %q = tessel.quantize %s : tensor<8xf32> -> tensor<8x!quant.uniform<u8:f32, 0.25:5>>
  return %q : tensor<8x!quant.uniform<u8:f32, 0.25:5>>
}

// -----

// SiLU as ONNX Runtime quantizes it, x * q(sigmoid(x)), is one table: the
// sigmoid's table composes into the product's.
// CHECK-LABEL: @silu_table
// CHECK: %[[T:.+]] = tessel.constant dense<{{.+}}> : tensor<256xui8> -> tensor<256x!quant.uniform<u8:f32, 5.000000e-02:10>>
// CHECK-NEXT: %[[L:.+]] = tessel.lookup %arg0, %[[T]]
// CHECK-NEXT: return %[[L]]
func.func @silu_table(%x: tensor<16x!quant.uniform<u8:f32, 0.05:128>>) -> tensor<16x!quant.uniform<u8:f32, 0.05:10>> {
  %xd = tessel.dequantize %x : tensor<16x!quant.uniform<u8:f32, 0.05:128>> -> tensor<16xf32>
  %s = tessel.sigmoid %xd : tensor<16xf32>
  %sq = tessel.quantize %s : tensor<16xf32> -> tensor<16x!quant.uniform<u8:f32, 0.00390625>>
  %sd = tessel.dequantize %sq : tensor<16x!quant.uniform<u8:f32, 0.00390625>> -> tensor<16xf32>
  %xd2 = tessel.dequantize %x : tensor<16x!quant.uniform<u8:f32, 0.05:128>> -> tensor<16xf32>
  %m = tessel.mul %xd2, %sd : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %q = tessel.quantize %m : tensor<16xf32> -> tensor<16x!quant.uniform<u8:f32, 0.05:10>>
  return %q : tensor<16x!quant.uniform<u8:f32, 0.05:10>>
}

// -----

// SiLU read from one dequantize, x * sigmoid(x) as Tessel's own
// quantization leaves it: the dequantize feeds two ops of the chain.
// CHECK-LABEL: @silu_shared_input
// CHECK: %[[T:.+]] = tessel.constant dense<{{.+}}> : tensor<256xui8> -> tensor<256x!quant.uniform<u8:f32, 5.000000e-02:10>>
// CHECK-NEXT: %[[L:.+]] = tessel.lookup %arg0, %[[T]]
// CHECK-NEXT: return %[[L]]
func.func @silu_shared_input(%x: tensor<16x!quant.uniform<u8:f32, 0.05:128>>) -> tensor<16x!quant.uniform<u8:f32, 0.05:10>> {
  %xd = tessel.dequantize %x : tensor<16x!quant.uniform<u8:f32, 0.05:128>> -> tensor<16xf32>
  %s = tessel.sigmoid %xd : tensor<16xf32>
  %m = tessel.mul %xd, %s : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %q = tessel.quantize %m : tensor<16xf32> -> tensor<16x!quant.uniform<u8:f32, 0.05:10>>
  return %q : tensor<16x!quant.uniform<u8:f32, 0.05:10>>
}

// -----

// Max pooling keeps its input's quantization, then requantizes; a reshape
// moves quantized elements.
// CHECK-LABEL: @pool_and_reshape
// CHECK: %[[P:.+]] = tessel.max_pool %arg0 {{.*}} -> tensor<1x1x2x2x!quant.uniform<u8:f32, 5.000000e-01:128>>
// CHECK: %[[R:.+]] = tessel.requantize %[[P]] {{.*}} -> tensor<1x1x2x2x!quant.uniform<u8:f32, 2.500000e-01:128>>
// CHECK: tessel.reshape %[[R]] : {{.*}} -> tensor<4x!quant.uniform<u8:f32, 2.500000e-01:128>>
func.func @pool_and_reshape(%x: tensor<1x1x4x4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<4x!quant.uniform<u8:f32, 0.25:128>> {
  %xd = tessel.dequantize %x : tensor<1x1x4x4x!quant.uniform<u8:f32, 0.5:128>> -> tensor<1x1x4x4xf32>
  %p = tessel.max_pool %xd {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                            pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  %pq = tessel.quantize %p : tensor<1x1x2x2xf32> -> tensor<1x1x2x2x!quant.uniform<u8:f32, 0.25:128>>
  %pd = tessel.dequantize %pq : tensor<1x1x2x2x!quant.uniform<u8:f32, 0.25:128>> -> tensor<1x1x2x2xf32>
  %r = tessel.reshape %pd : tensor<1x1x2x2xf32> -> tensor<4xf32>
  %rq = tessel.quantize %r : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 0.25:128>>
  return %rq : tensor<4x!quant.uniform<u8:f32, 0.25:128>>
}

// -----

// Dequantization sinks through a chain of ops that commute with it (a pool,
// then a reshape), so that the integers reach the next quantize.
// CHECK-LABEL: @pool_then_reshape
// CHECK: %[[P:.+]] = tessel.max_pool %arg0 {{.*}} -> tensor<1x1x2x2x!quant.uniform<u8:f32, 5.000000e-01:128>>
// CHECK: %[[R:.+]] = tessel.reshape %[[P]] : {{.*}} -> tensor<4x!quant.uniform<u8:f32, 5.000000e-01:128>>
// CHECK: %[[Q:.+]] = tessel.requantize %[[R]] {{.*}} -> tensor<4x!quant.uniform<u8:f32, 2.500000e-01:128>>
// CHECK: return %[[Q]]
func.func @pool_then_reshape(%x: tensor<1x1x4x4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<4x!quant.uniform<u8:f32, 0.25:128>> {
  %xd = tessel.dequantize %x : tensor<1x1x4x4x!quant.uniform<u8:f32, 0.5:128>> -> tensor<1x1x4x4xf32>
  %p = tessel.max_pool %xd {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                            pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  %r = tessel.reshape %p : tensor<1x1x2x2xf32> -> tensor<4xf32>
  %rq = tessel.quantize %r : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 0.25:128>>
  return %rq : tensor<4x!quant.uniform<u8:f32, 0.25:128>>
}

// -----

// A quantize rises through the ops that commute with it to what computes
// their input: the average pool before a flatten runs on the integers.
// CHECK-LABEL: @average_then_flatten
// CHECK: %[[P:.+]] = tessel.global_average_pool %arg0 {{.*}} -> tensor<1x2x1x1x!quant.uniform<u8:f32, 2.500000e-01:128>>
// CHECK: %[[R:.+]] = tessel.reshape %[[P]] : {{.*}} -> tensor<1x2x!quant.uniform<u8:f32, 2.500000e-01:128>>
// CHECK: return %[[R]]
func.func @average_then_flatten(%x: tensor<1x2x4x4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<1x2x!quant.uniform<u8:f32, 0.25:128>> {
  %xd = tessel.dequantize %x : tensor<1x2x4x4x!quant.uniform<u8:f32, 0.5:128>> -> tensor<1x2x4x4xf32>
  %p = tessel.global_average_pool %xd : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %r = tessel.reshape %p : tensor<1x2x1x1xf32> -> tensor<1x2xf32>
  %q = tessel.quantize %r : tensor<1x2xf32> -> tensor<1x2x!quant.uniform<u8:f32, 0.25:128>>
  return %q : tensor<1x2x!quant.uniform<u8:f32, 0.25:128>>
}

// -----

// A residual add and the relu after it: the quantize rises through the
// relu, the add is quantized and the relu keeps the integers above the
// zero point.
// CHECK-LABEL: @add_then_relu
// CHECK: %[[A:.+]] = tessel.add %arg0, %arg1 : {{.*}} -> tensor<4x!quant.uniform<u8:f32, 2.500000e-01:3>>
// CHECK: %[[R:.+]] = tessel.relu %[[A]] : tensor<4x!quant.uniform<u8:f32, 2.500000e-01:3>>
// CHECK: return %[[R]]
func.func @add_then_relu(%a: tensor<4x!quant.uniform<u8:f32, 0.5:128>>, %b: tensor<4x!quant.uniform<u8:f32, 0.5:120>>) -> tensor<4x!quant.uniform<u8:f32, 0.25:3>> {
  %ad = tessel.dequantize %a : tensor<4x!quant.uniform<u8:f32, 0.5:128>> -> tensor<4xf32>
  %bd = tessel.dequantize %b : tensor<4x!quant.uniform<u8:f32, 0.5:120>> -> tensor<4xf32>
  %s = tessel.add %ad, %bd : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = tessel.relu %s : tensor<4xf32>
  %q = tessel.quantize %r : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 0.25:3>>
  return %q : tensor<4x!quant.uniform<u8:f32, 0.25:3>>
}

// -----

// A weight read through a transpose (as exporters write Gemm's transB)
// still makes an integer product: the transpose moves the integers and
// folds into the constant.
// CHECK-LABEL: @transposed_weight
// CHECK: %[[W:.+]] = tessel.constant dense<{{\[}}[1, 3], [2, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32, 5.000000e-01>>
// CHECK: tessel.matmul %arg0, %[[W]] : {{.*}} -> tensor<2x2x!quant.uniform<u8:f32, 2.500000e-01:128>>
func.func @transposed_weight(%a: tensor<2x2x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2x2x!quant.uniform<u8:f32, 0.25:128>> {
  %ad = tessel.dequantize %a : tensor<2x2x!quant.uniform<u8:f32, 0.5:128>> -> tensor<2x2xf32>
  %w = tessel.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32, 0.5>>
  %wd = tessel.dequantize %w : tensor<2x2x!quant.uniform<i8:f32, 0.5>> -> tensor<2x2xf32>
  %t = tessel.transpose %wd {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %m = tessel.matmul %ad, %t : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %q = tessel.quantize %m : tensor<2x2xf32> -> tensor<2x2x!quant.uniform<u8:f32, 0.25:128>>
  return %q : tensor<2x2x!quant.uniform<u8:f32, 0.25:128>>
}

// -----

// A u8 weight of zero point 128 is stored signed with zero point 0.
// CHECK-LABEL: @centred_weight
// CHECK: tessel.constant dense<{{\[}}[-127, 0], [1, 127]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32, 2.500000e-01>>
func.func @centred_weight(%a: tensor<2x2x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2x2x!quant.uniform<u8:f32, 1.0>> {
  %w = tessel.constant dense<[[1, 128], [129, 255]]> : tensor<2x2xui8> -> tensor<2x2x!quant.uniform<u8:f32, 0.25:128>>
  %ad = tessel.dequantize %a : tensor<2x2x!quant.uniform<u8:f32, 0.5:128>> -> tensor<2x2xf32>
  %wd = tessel.dequantize %w : tensor<2x2x!quant.uniform<u8:f32, 0.25:128>> -> tensor<2x2xf32>
  %m = tessel.matmul %ad, %wd : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %q = tessel.quantize %m : tensor<2x2xf32> -> tensor<2x2x!quant.uniform<u8:f32, 1.0>>
  return %q : tensor<2x2x!quant.uniform<u8:f32, 1.0>>
}

// -----

// What float ops read of a dequantized constant is a float constant; the
// softmax stays float between its dequantization and quantization.
// CHECK-LABEL: @float_island
// CHECK: tessel.constant dense<[-5.000000e-01, 1.000000e+00]> : tensor<2xf32>
// CHECK: tessel.dequantize %arg0
// CHECK: tessel.softmax
// CHECK: tessel.quantize
func.func @float_island(%x: tensor<2x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2x!quant.uniform<u8:f32, 0.00390625>> {
  %c = tessel.constant dense<[127, 130]> : tensor<2xui8> -> tensor<2x!quant.uniform<u8:f32, 0.5:128>>
  %cd = tessel.dequantize %c : tensor<2x!quant.uniform<u8:f32, 0.5:128>> -> tensor<2xf32>
  %xd = tessel.dequantize %x : tensor<2x!quant.uniform<u8:f32, 0.5:128>> -> tensor<2xf32>
  %m = tessel.div %xd, %cd : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %s = tessel.softmax %m {axis = 0 : i64} : tensor<2xf32>
  %q = tessel.quantize %s : tensor<2xf32> -> tensor<2x!quant.uniform<u8:f32, 0.00390625>>
  return %q : tensor<2x!quant.uniform<u8:f32, 0.00390625>>
}

// -----

!x = !quant.uniform<u8:f32, 0.5:128>
!w = !quant.uniform<i8:f32:0, {0.25, 0.125}>
!y = !quant.uniform<u8:f32, 0.05:0>

// ReLU6 as ONNX exporters write it, a relu then a clip to [0, 6], fuses as
// both activations on the quantized conv; the clip's bounds become storage
// values of the result's type (0 and 6 / 0.05 = 120).
// CHECK-LABEL: @conv_relu_clip
// CHECK-DAG: %[[LO:.+]] = tessel.constant dense<0> : tensor<ui8> -> tensor<!quant.uniform<u8:f32, 5.000000e-02>>
// CHECK-DAG: %[[HI:.+]] = tessel.constant dense<120> : tensor<ui8> -> tensor<!quant.uniform<u8:f32, 5.000000e-02>>
// CHECK: %[[C:.+]] = tessel.conv {{.+}} -> tensor<1x2x4x4x!quant.uniform<u8:f32, 5.000000e-02>>
// CHECK-NEXT: %[[R:.+]] = tessel.relu %[[C]]
// CHECK-NEXT: %[[K:.+]] = tessel.clip %[[R]] min(%[[LO]] {{.+}} max(%[[HI]]
// CHECK-NEXT: return %[[K]]
func.func @conv_relu_clip(%x: tensor<1x2x4x4x!x>) -> tensor<1x2x4x4x!y> {
  %w = tessel.constant dense<[[[[1]], [[-2]]], [[[3]], [[-4]]]]> : tensor<2x2x1x1xi8> -> tensor<2x2x1x1x!w>
  %xd = tessel.dequantize %x : tensor<1x2x4x4x!x> -> tensor<1x2x4x4xf32>
  %wd = tessel.dequantize %w : tensor<2x2x1x1x!w> -> tensor<2x2x1x1xf32>
  %c = tessel.conv %xd, %wd {dilations = array<i64: 1, 1>, group = 1 : i64,
                              pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = tessel.relu %c : tensor<1x2x4x4xf32>
  %lo = tessel.constant dense<0.0> : tensor<f32>
  %hi = tessel.constant dense<6.0> : tensor<f32>
  %k = tessel.clip %r min(%lo : tensor<f32>) max(%hi : tensor<f32>) : tensor<1x2x4x4xf32>
  %q = tessel.quantize %k : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x!y>
  return %q : tensor<1x2x4x4x!y>
}

// -----

// A concatenation of inputs of two scales requantizes each straight to the
// result's scale: every element is rounded once, as ONNX rounds it. (The
// second input was once requantized to the first's scale and then to the
// result's, rounded twice, and created after the concatenation that reads
// it: SqueezeNet's fire modules.)
// CHECK-LABEL: @concat_two_scales
// CHECK: %[[A:.+]] = tessel.requantize %arg0 {{.*}} -> tensor<1x2x2x2x!quant.uniform<u8:f32, 2.500000e-01:128>>
// CHECK: %[[B:.+]] = tessel.requantize %arg1 {{.*}} -> tensor<1x2x2x2x!quant.uniform<u8:f32, 2.500000e-01:128>>
// CHECK: %[[C:.+]] = tessel.concat %[[A]], %[[B]] {axis = 1 : i64}
// CHECK-SAME: -> tensor<1x4x2x2x!quant.uniform<u8:f32, 2.500000e-01:128>>
// CHECK-NEXT: return %[[C]]
func.func @concat_two_scales(%a: tensor<1x2x2x2x!quant.uniform<u8:f32, 0.5:128>>, %b: tensor<1x2x2x2x!quant.uniform<u8:f32, 0.125:128>>) -> tensor<1x4x2x2x!quant.uniform<u8:f32, 0.25:128>> {
  %ad = tessel.dequantize %a : tensor<1x2x2x2x!quant.uniform<u8:f32, 0.5:128>> -> tensor<1x2x2x2xf32>
  %bd = tessel.dequantize %b : tensor<1x2x2x2x!quant.uniform<u8:f32, 0.125:128>> -> tensor<1x2x2x2xf32>
  %c = tessel.concat %ad, %bd {axis = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x4x2x2xf32>
  %q = tessel.quantize %c : tensor<1x4x2x2xf32> -> tensor<1x4x2x2x!quant.uniform<u8:f32, 0.25:128>>
  return %q : tensor<1x4x2x2x!quant.uniform<u8:f32, 0.25:128>>
}

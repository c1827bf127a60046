// RUN: tessel-opt %s --split-input-file --verify-diagnostics
// What the verifiers refuse of quantized tensors and ops.

func.func @axis_out_of_range(%x: tensor<4x!quant.uniform<i8:f32:1, {0.1, 0.2}>>) {
  // expected-error @+1 {{quantization axis 1 is out of range}}
  %0 = tessel.relu %x : tensor<4x!quant.uniform<i8:f32:1, {0.1, 0.2}>>
  return
}

// -----

func.func @scales_per_index(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{has 2 quantization parameters along axis 0 of extent 3}}
  %0 = tessel.quantize %x : tensor<3x4xf32> -> tensor<3x4x!quant.uniform<i8:f32:0, {0.1, 0.2}>>
  return
}

// -----

func.func @quantize_other_type(%x: tensor<4xf16>) {
  // expected-error @+1 {{quantizes 'f32' values, not 'f16'}}
  %0 = tessel.quantize %x : tensor<4xf16> -> tensor<4x!quant.uniform<u8:f32, 0.1:128>>
  return
}

// -----

func.func @dequantize_other_type(%x: tensor<4x!quant.uniform<u8:f32, 0.1:128>>) {
  // expected-error @+1 {{dequantizes to 'f32', not 'f16'}}
  %0 = tessel.dequantize %x : tensor<4x!quant.uniform<u8:f32, 0.1:128>> -> tensor<4xf16>
  return
}

// -----

func.func @constant_storage() {
  // expected-error @+1 {{is neither the result type}}
  %0 = tessel.constant dense<[1, 2]> : tensor<2xi32> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  return
}

// -----

func.func @mixed_conv(%x: tensor<1x3x4x4x!quant.uniform<u8:f32, 0.05:128>>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+1 {{quantized operands need quantized operands and result throughout}}
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                           pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x4x4x!quant.uniform<u8:f32, 0.05:128>>, tensor<2x3x3x3xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @weight_axis(%x: tensor<1x3x4x4x!quant.uniform<u8:f32, 0.05:128>>,
                       %w: tensor<2x3x3x3x!quant.uniform<i8:f32:1, {0.1, 0.1, 0.1}>>) {
  // expected-error @+1 {{the weight may be quantized per axis along axis 0 only, not 1}}
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                           pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x4x4x!quant.uniform<u8:f32, 0.05:128>>, tensor<2x3x3x3x!quant.uniform<i8:f32:1, {0.1, 0.1, 0.1}>>)
      -> tensor<1x2x4x4x!quant.uniform<u8:f32, 0.1>>
  return
}

// -----

func.func @bias_scale(%x: tensor<1x3x4x4x!quant.uniform<u8:f32, 0.5:128>>,
                      %w: tensor<2x3x3x3x!quant.uniform<i8:f32, 0.25>>,
                      %b: tensor<2x!quant.uniform<i32:f32, 0.5>>) {
  // expected-error @+1 {{the bias scale 5.000000e-01 of channel 0 is not input scale x weight scale (1.250000e-01)}}
  %0 = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
                               pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x4x4x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x3x3x3x!quant.uniform<i8:f32, 0.25>>,
         tensor<2x!quant.uniform<i32:f32, 0.5>>) -> tensor<1x2x4x4x!quant.uniform<u8:f32, 0.1>>
  return
}

// -----

func.func @wide_operands(%a: tensor<2x2x!quant.uniform<u16:f32, 0.5>>, %b: tensor<2x2x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{quantized operands must have 8-bit storage}}
  %0 = tessel.matmul %a, %b : (tensor<2x2x!quant.uniform<u16:f32, 0.5>>, tensor<2x2x!quant.uniform<i8:f32, 0.5>>)
      -> tensor<2x2x!quant.uniform<u8:f32, 1.0>>
  return
}

// -----

func.func @accumulator_zero_point(%a: tensor<2x2x!quant.uniform<u8:f32, 0.5>>, %b: tensor<2x2x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{an i32 result must have zero point 0}}
  %0 = tessel.matmul %a, %b : (tensor<2x2x!quant.uniform<u8:f32, 0.5>>, tensor<2x2x!quant.uniform<i8:f32, 0.5>>)
      -> tensor<2x2x!quant.uniform<i32:f32, 0.25:1>>
  return
}

// -----

func.func @mixed_add(%a: tensor<2x!quant.uniform<u8:f32, 0.5>>, %b: tensor<2xf32>) {
  // expected-error @+1 {{quantized arithmetic needs quantized operands and result}}
  %0 = tessel.add %a, %b : (tensor<2x!quant.uniform<u8:f32, 0.5>>, tensor<2xf32>) -> tensor<2x!quant.uniform<u8:f32, 0.5>>
  return
}

// -----

func.func @max_pool_keeps_type(%x: tensor<1x1x4x4x!quant.uniform<u8:f32, 0.5>>) {
  // expected-error @+2 {{are incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>,
                           kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                           strides = array<i64: 2, 2>}
      : (tensor<1x1x4x4x!quant.uniform<u8:f32, 0.5>>) -> tensor<1x1x2x2x!quant.uniform<u8:f32, 0.25>>
  return
}

// -----

func.func @lookup_table_size(%x: tensor<4x!quant.uniform<u8:f32, 0.5>>, %t: tensor<128x!quant.uniform<u8:f32, 0.5>>) {
  // expected-error @+1 {{needs a table of 256 entries}}
  %0 = tessel.lookup %x, %t : (tensor<4x!quant.uniform<u8:f32, 0.5>>, tensor<128x!quant.uniform<u8:f32, 0.5>>)
      -> tensor<4x!quant.uniform<u8:f32, 0.5>>
  return
}

// -----

func.func @storage_cast_other_width(%x: tensor<4xi16>) {
  // expected-error @+1 {{casts between a quantized type and its storage only}}
  %0 = tessel.bitcast %x : tensor<4xi16> -> tensor<4x!quant.uniform<u8:f32, 0.5>>
  return
}

// RUN: tessel-opt %s --tessel-insert-quantization --split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-insert-quantization=signed-activations --split-input-file | FileCheck %s --check-prefix=SIGNED
// RUN: tessel-opt %s --tessel-insert-quantization=fit-weight-pairs --split-input-file | FileCheck %s --check-prefix=PAIRS
// RUN: tessel-opt %s --tessel-insert-quantization="fit-weight-pairs fit-min-work-share=0.1" --split-input-file | FileCheck %s --check-prefix=SHARE

// Calibrated ranges become 8-bit types: the input's [-1, 3] is u8 of scale
// 4/255 and zero point round(1 / (4/255)) = 64 (s8: scale 3/127, zero point
// 0); the relu's [0, 2] is u8 of scale 2/255. The weight is symmetric s8
// per output channel: channel 0 (|max| 1) has scale 1/127 and holds
// 1 -> 127, -0.25 -> -31.75 -> -32; channel 1 (|max| 0.5) scale 0.5/127,
// 0.5 -> 127, -0.125 -> -32. The bias stays float for fusion to quantize.
// CHECK-LABEL: @conv_relu
// CHECK: %[[XQ:.+]] = tessel.quantize %arg0 : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x!quant.uniform<u8:f32, 0.015686275{{[0-9]*}}:64>>
// CHECK: %[[XD:.+]] = tessel.dequantize %[[XQ]]
// CHECK: %[[W:.+]] = tessel.constant dense<{{\[\[\[\[}}127]], {{\[\[}}-32]]], {{\[\[\[}}127]], {{\[\[}}-32]]]]> : tensor<2x2x1x1xi8> -> tensor<2x2x1x1x!quant.uniform<i8:f32:0, {0.0078740157{{[0-9]*}},0.0039370078{{[0-9]*}}}>>
// CHECK: %[[WD:.+]] = tessel.dequantize %[[W]]
// CHECK: %[[C:.+]] = tessel.conv %[[XD]], %[[WD]], %{{.+}}
// CHECK: %[[R:.+]] = tessel.relu %[[C]]
// CHECK: %[[RQ:.+]] = tessel.quantize %[[R]] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x!quant.uniform<u8:f32, 0.0078431377{{[0-9]*}}>>
// CHECK: %[[RD:.+]] = tessel.dequantize %[[RQ]]
// CHECK: return %[[RD]]
// CHECK-NOT: tessel.calibrated_range
// SIGNED-LABEL: @conv_relu
// SIGNED: tessel.quantize %arg0 : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x!quant.uniform<i8:f32, 0.023622047{{[0-9]*}}>>
// SIGNED: tessel.quantize %{{.+}} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x!quant.uniform<i8:f32, 0.015748031{{[0-9]*}}>>
func.func @conv_relu(%x: tensor<1x2x4x4xf32> {tessel.calibrated_range = array<f64: -1.0, 3.0>})
    -> tensor<1x2x4x4xf32> {
  %w = tessel.constant dense<[[[[1.0]], [[-0.25]]], [[[0.5]], [[-0.125]]]]> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %c = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
                                pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %r = tessel.relu %c {tessel.calibrated_range = array<f64: 0.0, 2.0>} : tensor<1x2x4x4xf32>
  return %r : tensor<1x2x4x4xf32>
}

// -----

// Bias correction: quantized, each output channel's weights shift its
// output by sum((level * scale - w) * mean of the input channel read) on
// average, which the bias takes back. In this depthwise convolution channel
// 0 reads input channel 0 (mean 2) with 0.3 -> 38/127, channel 1 reads input
// channel 1 (mean 4) with -0.2 -> -51 * 0.5/127: 0.5 - 2 * (38/127 - 0.3)
// and -1.0 - 4 * (-51 * 0.5/127 + 0.2).
// CHECK-LABEL: @bias_correction
// CHECK: %[[B:.+]] = tessel.constant dense<[0.501574{{[0-9]*}}, -0.99685{{[0-9]*}}]> : tensor<2xf32>
// CHECK: tessel.conv %{{.+}}, %{{.+}}, %[[B]]
// CHECK-NOT: tessel.input_channel_means
func.func @bias_correction(%x: tensor<1x2x4x4xf32> {tessel.calibrated_range = array<f64: 0.0, 8.0>})
    -> tensor<1x2x4x3xf32> {
  %w = tessel.constant dense<[[[[1.0, 0.3]]], [[[0.5, -0.2]]]]> : tensor<2x1x1x2xf32>
  %b = tessel.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %c = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 2 : i64,
                                pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>,
                                tessel.calibrated_range = array<f64: -2.0, 2.0>,
                                tessel.input_channel_means = array<f64: 2.0, 4.0>}
      : (tensor<1x2x4x4xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>) -> tensor<1x2x4x3xf32>
  return %c : tensor<1x2x4x3xf32>
}

// -----

// A matmul's bias is the constant its only reader adds: column 0 reads
// 0.3 -> 38/127 and column 1 -0.2 -> -51 * 0.5/127, both times input
// channel 1's mean 4: 0.5 - 4 * (38/127 - 0.3), -1.0 - 4 * (-51 * 0.5/127 + 0.2).
// CHECK-LABEL: @matmul_bias_correction
// CHECK: %[[B:.+]] = tessel.constant dense<[0.503149{{[0-9]*}}, -0.99685{{[0-9]*}}]> : tensor<2xf32>
// CHECK: tessel.add %{{.+}}, %[[B]]
func.func @matmul_bias_correction(%x: tensor<3x2xf32> {tessel.calibrated_range = array<f64: 0.0, 8.0>})
    -> tensor<3x2xf32> {
  %w = tessel.constant dense<[[1.0, 0.5], [0.3, -0.2]]> : tensor<2x2xf32>
  %b = tessel.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %m = tessel.matmul %x, %w {tessel.input_channel_means = array<f64: 2.0, 4.0>}
      : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %a = tessel.add %m, %b {tessel.calibrated_range = array<f64: -2.0, 2.0>}
      : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %a : tensor<3x2xf32>
}

// -----

// A product the accuracy budget keeps in float keeps its float weight and
// reads the float input, while the quantized product beside it reads the
// dequantized one.
// CHECK-LABEL: @kept_in_float
// CHECK: %[[XQ:.+]] = tessel.quantize %arg0
// CHECK: %[[XD:.+]] = tessel.dequantize %[[XQ]]
// CHECK: tessel.matmul %[[XD]], %{{.+}} : (tensor<4x8xf32>, tensor<8x2xf32>)
// CHECK: tessel.matmul %arg0, %[[F:.+]] {tessel.precision = "f32"}
func.func @kept_in_float(%x: tensor<4x8xf32> {tessel.calibrated_range = array<f64: 0.0, 1.0>})
    -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %w = tessel.constant dense<0.5> : tensor<8x2xf32>
  %a = tessel.matmul %x, %w {tessel.calibrated_range = array<f64: 0.0, 4.0>}
      : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %b = tessel.matmul %x, %w {tessel.precision = "f32"}
      : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %a, %b : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// The weights of input channels 0 and 1 of an output channel pair up in
// AVX2's VPMADDUBSW, whose 16-bit sum saturates unless 255 x (the positive
// levels of the pair) <= 32767. At full range (1.0, 0.5) are levels
// (127, 64), 191 together; with fit-weight-pairs the search keeps the pair
// within 128, and among its candidate scales 1/64 holds both exactly
// (64, 32). Without the option the levels stay (127, 64).
// CHECK-LABEL: @fit_pairs
// CHECK: tessel.constant dense<{{\[\[\[\[}}127]], {{\[\[}}64]]]]> : tensor<1x2x1x1xi8>
// PAIRS-LABEL: @fit_pairs
// PAIRS: tessel.constant dense<{{\[\[\[\[}}64]], {{\[\[}}32]]]]> : tensor<1x2x1x1xi8> -> tensor<1x2x1x1x!quant.uniform<i8:f32:0, {1.562500e-02}>>
func.func @fit_pairs(%x: tensor<1x2x4x4xf32> {tessel.calibrated_range = array<f64: 0.0, 1.0>})
    -> tensor<1x1x4x4xf32> {
  %w = tessel.constant dense<[[[[1.0]], [[0.5]]]]> : tensor<1x2x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                           pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32>
  return %c : tensor<1x1x4x4xf32>
}

// -----

// With fit-min-work-share only the products doing at least that share of
// the multiply-adds fit their pairs: the convolution does 2 x 16 x 16 = 512
// of them, the matmul 1 x 2 = 2 (0.4% < 10%): its (1.0, 0.5) keeps the
// nearest levels (127, 64), the convolution's are fitted to (64, 32).
// SHARE-LABEL: @fit_large_products
// SHARE: tessel.constant dense<{{\[\[\[\[}}64]], {{\[\[}}32]]]]> : tensor<1x2x1x1xi8>
// SHARE: tessel.constant dense<{{\[\[}}127], [64]]> : tensor<2x1xi8>
func.func @fit_large_products(
    %x: tensor<1x2x16x16xf32> {tessel.calibrated_range = array<f64: 0.0, 1.0>},
    %y: tensor<1x2xf32> {tessel.calibrated_range = array<f64: 0.0, 1.0>})
    -> (tensor<1x1x16x16xf32>, tensor<1x1xf32>) {
  %w = tessel.constant dense<[[[[1.0]], [[0.5]]]]> : tensor<1x2x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64,
                           pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x2x16x16xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x16x16xf32>
  %v = tessel.constant dense<[[1.0], [0.5]]> : tensor<2x1xf32>
  %m = tessel.matmul %y, %v : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
  return %c, %m : tensor<1x1x16x16xf32>, tensor<1x1xf32>
}

// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=16" --split-input-file | FileCheck %s

// Register blocks chosen for AVX-512 (16 lanes, 32 registers).
// With AVX-512 a 3x3 convolution of 512 channels on a 7x7 image costs the
// same per step in 7 x 48 and 7 x 32 blocks; 32 channels divide the 512, so
// that workgroups can split the 9.4 MB filter between them instead of each
// reading all of it.
// CHECK-LABEL: func.func private @divides_channels
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK-SAME: tessel.lowering_config = {register_block = array<i64: 1, 1, 7, 32>}
module {
  func.func private @divides_channels(%x: tensor<1x9x9x512xf32>, %w: tensor<3x3x512x512xf32>) -> tensor<1x7x7x512xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x7x7x512xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
    %0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%x, %w : tensor<1x9x9x512xf32>, tensor<3x3x512x512xf32>) outs(%c : tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
    return %0 : tensor<1x7x7x512xf32>
  }
}

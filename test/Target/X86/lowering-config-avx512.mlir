// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=16" --split-input-file | FileCheck %s --check-prefixes=CHECK,WAYS8
// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=16 l1-ways=12" --split-input-file | FileCheck %s --check-prefixes=CHECK,WAYS12
// RUN: not tessel-opt %s --tessel-x86-choose-lowering="l1-sets=48" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: the L1 cache needs power-of-two line bytes and sets and at least one way; got cache-line=64 l1-sets=48 l1-ways=8

// Register blocks chosen for AVX-512 (16 lanes, 32 registers).
// With AVX-512 a 3x3 convolution of 512 channels on a 7x7 image costs the
// same per step in 7 x 48 and 7 x 32 blocks; 32 channels divide the 512, so
// that workgroups can split the 9.4 MB filter between them instead of each
// reading all of it. Its pixels lie 2 KiB apart, so every input run of a
// block falls in one of two L1 sets: with 8 ways (two kept for the filter)
// 7 pixels fit, with 12 ways (Zen 5, Sapphire Rapids) two rows of 7.
// CHECK-LABEL: func.func private @divides_channels
// CHECK: linalg.conv_2d_nhwc_hwcf
// WAYS8-SAME: tessel.lowering_config = {register_block = array<i64: 1, 1, 7, 32>}
// WAYS12-SAME: tessel.lowering_config = {register_block = array<i64: 1, 2, 7, 32>}
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

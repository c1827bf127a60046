// RUN: tessel-cuda-emulate %s --precision fp16 | FileCheck %s
// RUN: tessel-cuda-emulate %s --precision fp32 | FileCheck %s --check-prefix=FP32
//
// Weights that the x86 layout packed into panels at compile time, read by
// a tensor-core product where they are: no launch transposes and copies
// them back into the plain layout first. Each kernel, run on the host
// thread by thread, matches upstream linalg's loops on the same inputs
// (the packed weights random); the launch counts show what was read in
// place.

#row = affine_map<(m, n, k) -> (m, k)>
#col = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>

// A convolution's filter [kh][kw][c][f] in panels of 16 output channels,
// [f/16][kh][kw][c][16]: the staging reads 16 bytes of a panel's row at a
// time. One launch.
// CHECK: conv_panels: 1 launch (1 synchronizing), outputs match
// At fp32 the product stays on the FMA units and reads the plain filter,
// which one transpose unpacks straight into it (no copy after): three
// launches with the output's fill.
// FP32: conv_panels: 3 launches, outputs match
func.func private @conv_panels(%image: tensor<1x10x10x32xf32>, %packed: tensor<4x3x3x32x16xf32>)
    -> tensor<1x8x8x64xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %plain = tensor.empty() : tensor<3x3x32x64xf32>
  %filter = linalg.unpack %packed outer_dims_perm = [3, 0, 1, 2] inner_dims_pos = [3]
      inner_tiles = [16] into %plain : tensor<4x3x3x32x16xf32> -> tensor<3x3x32x64xf32>
  %empty = tensor.empty() : tensor<1x8x8x64xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32>
  %y = linalg.conv_2d_nhwc_hwcf ins(%image, %filter : tensor<1x10x10x32xf32>, tensor<3x3x32x64xf32>)
                                outs(%filled : tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32>
  return %y : tensor<1x8x8x64xf32>
}

// A weight [k][n] of 40 columns in panels of 16, [n/16][k][16], the last
// panel half padding: the unpack slices it off, and the staging reads the
// two and a half panels, four values at a time. One launch.
// CHECK: matmul_padded_panels: 1 launch (1 synchronizing), outputs match
func.func private @matmul_padded_panels(%a: tensor<64x48xf32>, %packed: tensor<3x48x16xf32>)
    -> tensor<64x40xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %plain = tensor.empty() : tensor<48x40xf32>
  %b = linalg.unpack %packed outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [16]
      into %plain : tensor<3x48x16xf32> -> tensor<48x40xf32>
  %empty = tensor.empty() : tensor<64x40xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x40xf32>) -> tensor<64x40xf32>
  %y = linalg.matmul ins(%a, %b : tensor<64x48xf32>, tensor<48x40xf32>)
                     outs(%filled : tensor<64x40xf32>) -> tensor<64x40xf32>
  return %y : tensor<64x40xf32>
}

// An INT8 weight [k][n] as the x86 layout packs it for VNNI, [n/16][k/4][16][4]:
// four k of a column are neighbours, so the staging reads them as one
// 4-byte vector along k. One launch, at fp32 too, and exact.
// CHECK: int8_panels: 1 launch (1 synchronizing), outputs match (largest relative difference 0
// FP32: int8_panels: 1 launch (1 synchronizing), outputs match (largest relative difference 0
func.func private @int8_panels(%a: tensor<96x64xi8>, %packed: tensor<4x16x16x4xi8>)
    -> tensor<96x64xi32> attributes {tessel.kernel} {
  %zero = arith.constant 0 : i32
  %plain = tensor.empty() : tensor<64x64xi8>
  %b = linalg.unpack %packed outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [16, 4]
      into %plain : tensor<4x16x16x4xi8> -> tensor<64x64xi8>
  %empty = tensor.empty() : tensor<96x64xi32>
  %filled = linalg.fill ins(%zero : i32) outs(%empty : tensor<96x64xi32>) -> tensor<96x64xi32>
  %y = linalg.generic {indexing_maps = [#row, #col, #out],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<96x64xi8>, tensor<64x64xi8>) outs(%filled : tensor<96x64xi32>) {
  ^bb0(%x: i8, %w: i8, %acc: i32):
    %xw = arith.extsi %x : i8 to i32
    %ww = arith.extsi %w : i8 to i32
    %p = arith.muli %xw, %ww : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<96x64xi32>
  return %y : tensor<96x64xi32>
}

// The unpacked weight is a result of the kernel too, which a copy writes
// out: the product is not its only reader, so the transpose that unpacks
// it stays (writing the plain weight itself) and the product reads its
// output. Three launches.
// CHECK: unpacked_returned: 3 launches (1 synchronizing), outputs match
func.func private @unpacked_returned(%a: tensor<64x48xf32>, %packed: tensor<3x48x16xf32>)
    -> (tensor<64x48xf32>, tensor<48x48xf32>) attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %plain = tensor.empty() : tensor<48x48xf32>
  %b = linalg.unpack %packed outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [16]
      into %plain : tensor<3x48x16xf32> -> tensor<48x48xf32>
  %empty = tensor.empty() : tensor<64x48xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x48xf32>) -> tensor<64x48xf32>
  %y = linalg.matmul ins(%a, %b : tensor<64x48xf32>, tensor<48x48xf32>)
                     outs(%filled : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %y, %b : tensor<64x48xf32>, tensor<48x48xf32>
}

// A packed weight that the kernel computes (here, scales) is written in
// the kernel: only a kernel's operand or a constant, never written, is read
// in place, so that no block can read it while another writes. One
// transpose unpacks it first: three launches with the scaling.
// CHECK: computed_panels: 3 launches (1 synchronizing), outputs match
func.func private @computed_panels(%a: tensor<64x48xf32>, %packed: tensor<3x48x16xf32>)
    -> tensor<64x48xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %empty_packed = tensor.empty() : tensor<3x48x16xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>,
                                             affine_map<(i, j, k) -> (i, j, k)>],
                            iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%packed : tensor<3x48x16xf32>) outs(%empty_packed : tensor<3x48x16xf32>) {
  ^bb0(%w: f32, %o: f32):
    %m = arith.mulf %w, %two : f32
    linalg.yield %m : f32
  } -> tensor<3x48x16xf32>
  %plain = tensor.empty() : tensor<48x48xf32>
  %b = linalg.unpack %scaled outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [16]
      into %plain : tensor<3x48x16xf32> -> tensor<48x48xf32>
  %empty = tensor.empty() : tensor<64x48xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x48xf32>) -> tensor<64x48xf32>
  %y = linalg.matmul ins(%a, %b : tensor<64x48xf32>, tensor<48x48xf32>)
                     outs(%filled : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %y : tensor<64x48xf32>
}

// CHECK: 5 kernels: 5 match, 0 differ
// FP32: 5 kernels: 5 match, 0 differ

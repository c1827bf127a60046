// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=8" --tessel-x86-pack-weights --split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=8 bf16-dot-product=dpbf16ps" --tessel-x86-pack-weights --split-input-file | FileCheck %s --check-prefix=PAIRS

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// B [2, 32] (B[k, n] = 32 k + n) is stored as two 16-column panels [2, 2, 16]:
// panel 0 holds columns 0-15 of both rows, panel 1 columns 16-31. The kernel
// takes the panels and unpacks them to the B it computed with.
// CHECK-LABEL: func.func private @k0
// CHECK-SAME: (%{{.+}}: tensor<6x2xf32>, %[[PANELS:.+]]: tensor<2x2x16xf32>)
// CHECK: %[[B:.+]] = linalg.unpack %[[PANELS]] outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [16] into %{{.+}} : tensor<2x2x16xf32> -> tensor<2x32xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[B]] : tensor<6x2xf32>, tensor<2x32xf32>)
// CHECK-LABEL: func.func @main
// CHECK: %[[PACKED:.+]] = arith.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00, {{.*}}, 1.500000e+01], [3.200000e+01, {{.*}}, 4.700000e+01]], {{\[\[}}1.600000e+01, {{.*}}, 3.100000e+01], [4.800000e+01, {{.*}}, 6.300000e+01]]]> : tensor<2x2x16xf32>
// CHECK: call @k0(%{{.+}}, %[[PACKED]])
module {
  func.func private @k0(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0,
                                16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0],
                               [32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0,
                                48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0]]> : tensor<2x32xf32>
    %0 = call @k0(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A weight that a kernel reads unpacked too would be stored twice: it stays
// as it is.
// CHECK-LABEL: func.func private @shared
// CHECK-SAME: tensor<2x32xf32>
// CHECK-NOT: linalg.unpack
// CHECK-LABEL: func.func @main
// CHECK: arith.constant dense<1.000000e+00> : tensor<2x32xf32>
module {
  func.func private @shared(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func private @other(%b: tensor<2x32xf32>) -> tensor<2x32xf32> attributes {tessel.kernel} {
    return %b : tensor<2x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> (tensor<6x32xf32>, tensor<2x32xf32>) {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @shared(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    %1 = call @other(%w) : (tensor<2x32xf32>) -> tensor<2x32xf32>
    return %0, %1 : tensor<6x32xf32>, tensor<2x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// Two layers that share a weight and pack it alike share its panels: one
// packed constant, unpacked in each kernel.
// CHECK-LABEL: func.func private @first
// CHECK-SAME: tensor<2x2x16xf32>
// CHECK: linalg.unpack
// CHECK-LABEL: func.func private @second
// CHECK-SAME: tensor<2x2x16xf32>
// CHECK: linalg.unpack
// CHECK-LABEL: func.func @main
// CHECK: %[[PACKED:.+]] = arith.constant dense<1.000000e+00> : tensor<2x2x16xf32>
// CHECK-NOT: arith.constant
// CHECK: call @first(%{{.+}}, %[[PACKED]])
// CHECK: call @second(%{{.+}}, %[[PACKED]])
module {
  func.func private @first(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func private @second(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> (tensor<6x32xf32>, tensor<6x32xf32>) {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @first(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    %1 = call @second(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0, %1 : tensor<6x32xf32>, tensor<6x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// 20 columns take one panel of three vectors (3 x 24 blocks): the panel is
// padded with zeros so that its blocks load whole vectors, and the unpack
// drops them.
// CHECK-LABEL: func.func private @padded
// CHECK: linalg.unpack %{{.+}} outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [24] into %{{.+}} : tensor<1x1x24xf32> -> tensor<1x20xf32>
// CHECK-LABEL: func.func @main
// CHECK: arith.constant dense<{{\[\[\[}}1.000000e+00, {{.*}}, 1.900000e+01, 2.000000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]> : tensor<1x1x24xf32>
module {
  func.func private @padded(%a: tensor<6x1xf32>, %b: tensor<1x20xf32>) -> tensor<6x20xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x20xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x20xf32>) -> tensor<6x20xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x1xf32>, tensor<1x20xf32>) outs(%c : tensor<6x20xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x20xf32>
    return %0 : tensor<6x20xf32>
  }
  func.func @main(%x: tensor<6x1xf32>) -> tensor<6x20xf32> {
    %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0,
                                17.0, 18.0, 19.0, 20.0]]> : tensor<1x20xf32>
    %0 = call @padded(%x, %w) : (tensor<6x1xf32>, tensor<1x20xf32>) -> tensor<6x20xf32>
    return %0 : tensor<6x20xf32>
  }
}

// -----

// An HWCF convolution filter [1, 1, 2, 20] is stored as panels of its
// output channels, [1, 1, 1, 2, 24] (the register block's 24 channels), and
// unpacked at the kernel's entry.
// CHECK-LABEL: func.func private @conv
// CHECK-SAME: %{{.+}}: tensor<1x1x1x2x24xf32>
// CHECK: linalg.unpack %{{.+}} outer_dims_perm = [3, 0, 1, 2] inner_dims_pos = [3] inner_tiles = [24] into %{{.+}} : tensor<1x1x1x2x24xf32> -> tensor<1x1x2x20xf32>
// CHECK-LABEL: func.func @main
// CHECK: arith.constant dense<{{\[\[\[\[\[}}1.000000e+00, 2.000000e+00, {{.*}}, 2.000000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [2.100000e+01, {{.*}}, 4.000000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]]]> : tensor<1x1x1x2x24xf32>
module {
  func.func private @conv(%x: tensor<1x4x4x2xf32>, %w: tensor<1x1x2x20xf32>) -> tensor<1x4x4x20xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x4x4x20xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x20xf32>) -> tensor<1x4x4x20xf32>
    %0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%x, %w : tensor<1x4x4x2xf32>, tensor<1x1x2x20xf32>) outs(%init : tensor<1x4x4x20xf32>) -> tensor<1x4x4x20xf32>
    return %0 : tensor<1x4x4x20xf32>
  }
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x20xf32> {
    %w = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0],
                                  [21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0]]]]> : tensor<1x1x2x20xf32>
    %0 = call @conv(%x, %w) : (tensor<1x4x4x2xf32>, tensor<1x1x2x20xf32>) -> tensor<1x4x4x20xf32>
    return %0 : tensor<1x4x4x20xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A bf16 weight B [3, 8] (B[k, n] = 8 k + n) becomes dot panels of pairs,
// [N / 8, ceil(K / 2), 8, 2]: per column its k = 0, 1 side by side, then
// k = 2 beside a zero that pads the last pair. With VDPBF16PS as the
// pass's bf16 dot product.
// PAIRS-LABEL: func.func private @bf16_pairs
// PAIRS-SAME: (%{{.+}}: tensor<4x3xbf16>, %[[PANELS:.+]]: tensor<1x2x8x2xbf16>)
// PAIRS: linalg.unpack %[[PANELS]] outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [8, 2] into %{{.+}} : tensor<1x2x8x2xbf16> -> tensor<3x8xbf16>
// PAIRS: tessel.lowering_config = {dot_product = "dpbf16ps", register_block
// PAIRS-LABEL: func.func @bf16_main
// PAIRS: arith.constant dense<{{\[\[\[\[}}0.000000e+00, 8.000000e+00], [1.000000e+00, 9.000000e+00], {{.*}}, [7.000000e+00, 1.500000e+01]], {{\[\[}}1.600000e+01, 0.000000e+00], [1.700000e+01, 0.000000e+00], {{.*}}, [2.300000e+01, 0.000000e+00]]]]> : tensor<1x2x8x2xbf16>
module {
  func.func private @bf16_pairs(%a: tensor<4x3xbf16>, %b: tensor<3x8xbf16>) -> tensor<4x8xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<4x3xbf16>, tensor<3x8xbf16>) outs(%c : tensor<4x8xf32>) {
    ^bb0(%x: bf16, %y: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %ye = arith.extf %y : bf16 to f32
      %p = arith.mulf %xe, %ye : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  func.func @bf16_main(%x: tensor<4x3xbf16>) -> tensor<4x8xf32> {
    %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                               [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                               [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0]]> : tensor<3x8xbf16>
    %0 = call @bf16_pairs(%x, %w) : (tensor<4x3xbf16>, tensor<3x8xbf16>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

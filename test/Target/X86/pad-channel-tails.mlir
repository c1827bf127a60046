// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=16" --tessel-x86-pack-weights --tessel-x86-pad-channel-tails --split-input-file | FileCheck %s

#bias = affine_map<(d0, d1, d2, d3) -> (d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sum = affine_map<(d0, d1, d2, d3) -> (d0, d3)>

// 120 output channels in blocks of 16: the filter is stored as 8 panels,
// the last one padded with 8 zero channels. The kernel computes them too,
// with its splat bias resized; its reader takes the first 120 channels as
// a slice of the 128.
// CHECK-LABEL: func.func private @k0
// CHECK-SAME: (%{{.+}}: tensor<1x2x2x8xf32>, %[[PANELS:.+]]: tensor<8x1x1x8x16xf32>) -> tensor<1x2x2x128xf32>
// CHECK: %[[W:.+]] = linalg.unpack %[[PANELS]] {{.*}} -> tensor<1x1x8x128xf32>
// CHECK: %[[BIAS:.+]] = arith.constant dense<1.000000e+00> : tensor<128xf32>
// CHECK: linalg.generic {{.*}} ins(%[[BIAS]] : tensor<128xf32>) outs(%{{.+}} : tensor<1x2x2x128xf32>)
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.+}}, %[[W]] : tensor<1x2x2x8xf32>, tensor<1x1x8x128xf32>) outs(%{{.+}} : tensor<1x2x2x128xf32>)
// CHECK: } -> tensor<1x2x2x128xf32>
// CHECK: return %{{.+}} : tensor<1x2x2x128xf32>
// CHECK-LABEL: func.func private @k1
// CHECK-SAME: (%[[PADDED:.+]]: tensor<1x2x2x128xf32>) -> tensor<1x120xf32>
// CHECK: %[[SLICE:.+]] = tensor.extract_slice %[[PADDED]][0, 0, 0, 0] [1, 2, 2, 120] [1, 1, 1, 1] : tensor<1x2x2x128xf32> to tensor<1x2x2x120xf32>
// CHECK: linalg.generic {{.*}} ins(%[[SLICE]] : tensor<1x2x2x120xf32>)
// CHECK-LABEL: func.func @main
// CHECK: %[[CONV:.+]] = call @k0({{.*}}) -> tensor<1x2x2x128xf32>
// CHECK: call @k1(%[[CONV]]) : (tensor<1x2x2x128xf32>) -> tensor<1x120xf32>
module {
  func.func private @k0(%x: tensor<1x2x2x8xf32>, %w: tensor<1x1x8x120xf32>) -> tensor<1x2x2x120xf32> attributes {tessel.kernel} {
    %bias = arith.constant dense<1.0> : tensor<120xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x2x2x120xf32>
    %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%bias : tensor<120xf32>) outs(%e : tensor<1x2x2x120xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x2x2x120xf32>
    %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                      tessel.lowering_config = {register_block = array<i64: 1, 1, 2, 16>}}
        ins(%x, %w : tensor<1x2x2x8xf32>, tensor<1x1x8x120xf32>) outs(%init : tensor<1x2x2x120xf32>) -> tensor<1x2x2x120xf32>
    %e2 = tensor.empty() : tensor<1x2x2x120xf32>
    %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%conv : tensor<1x2x2x120xf32>) outs(%e2 : tensor<1x2x2x120xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<1x2x2x120xf32>
    return %relu : tensor<1x2x2x120xf32>
  }
  func.func private @k1(%x: tensor<1x2x2x120xf32>) -> tensor<1x120xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x120xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x120xf32>) -> tensor<1x120xf32>
    %sum = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["parallel", "reduction", "reduction", "parallel"]}
        ins(%x : tensor<1x2x2x120xf32>) outs(%init : tensor<1x120xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.addf %in, %out : f32
      linalg.yield %s : f32
    } -> tensor<1x120xf32>
    return %sum : tensor<1x120xf32>
  }
  func.func @main(%x: tensor<1x2x2x8xf32>) -> tensor<1x120xf32> {
    %w = arith.constant dense<0.5> : tensor<1x1x8x120xf32>
    %0 = call @k0(%x, %w) : (tensor<1x2x2x8xf32>, tensor<1x1x8x120xf32>) -> tensor<1x2x2x120xf32>
    %1 = call @k1(%0) : (tensor<1x2x2x120xf32>) -> tensor<1x120xf32>
    return %1 : tensor<1x120xf32>
  }
}

// -----

#bias = affine_map<(d0, d1, d2, d3) -> (d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// 72 channels, 8 of padding: a bias of distinct values gets zeros (the
// padded channels are never read; a splat is just resized). Two readers,
// one of them the kernel of a residual add, each take a slice.
// CHECK-LABEL: func.func private @dense_bias
// CHECK: arith.constant dense<[1.000000e+00, {{.*}}, 7.200000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<80xf32>
// CHECK: return %{{.+}} : tensor<1x1x2x80xf32>
// CHECK-LABEL: func.func private @add
// CHECK-SAME: (%[[A:.+]]: tensor<1x1x2x80xf32>, %[[B:.+]]: tensor<1x1x2x72xf32>)
// CHECK: tensor.extract_slice %[[A]][0, 0, 0, 0] [1, 1, 2, 72]
// CHECK-LABEL: func.func @main
// CHECK: call @dense_bias({{.*}}) -> tensor<1x1x2x80xf32>
module {
  func.func private @dense_bias(%x: tensor<1x1x2x8xf32>, %w: tensor<1x1x8x72xf32>) -> tensor<1x1x2x72xf32> attributes {tessel.kernel} {
    %bias = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0]> : tensor<72xf32>
    %e = tensor.empty() : tensor<1x1x2x72xf32>
    %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%bias : tensor<72xf32>) outs(%e : tensor<1x1x2x72xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x2x72xf32>
    %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                      tessel.lowering_config = {register_block = array<i64: 1, 1, 2, 16>}}
        ins(%x, %w : tensor<1x1x2x8xf32>, tensor<1x1x8x72xf32>) outs(%init : tensor<1x1x2x72xf32>) -> tensor<1x1x2x72xf32>
    return %conv : tensor<1x1x2x72xf32>
  }
  func.func private @add(%a: tensor<1x1x2x72xf32>, %b: tensor<1x1x2x72xf32>) -> tensor<1x1x2x72xf32> attributes {tessel.kernel} {
    %e = tensor.empty() : tensor<1x1x2x72xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%a, %b : tensor<1x1x2x72xf32>, tensor<1x1x2x72xf32>) outs(%e : tensor<1x1x2x72xf32>) {
    ^bb0(%p: f32, %q: f32, %out: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<1x1x2x72xf32>
    return %sum : tensor<1x1x2x72xf32>
  }
  func.func @main(%x: tensor<1x1x2x8xf32>, %y: tensor<1x1x2x72xf32>) -> tensor<1x1x2x72xf32> {
    %w = arith.constant dense<0.5> : tensor<1x1x8x72xf32>
    %0 = call @dense_bias(%x, %w) : (tensor<1x1x2x8xf32>, tensor<1x1x8x72xf32>) -> tensor<1x1x2x72xf32>
    %1 = call @add(%0, %y) : (tensor<1x1x2x72xf32>, tensor<1x1x2x72xf32>) -> tensor<1x1x2x72xf32>
    return %1 : tensor<1x1x2x72xf32>
  }
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Left as they are: a result that the host returns (it would need a copy),
// and an epilogue that reads a kernel argument along the channels (a
// residual add: the argument has no padded channels).
// CHECK-LABEL: func.func private @returned
// CHECK-SAME: -> tensor<1x1x2x120xf32>
// CHECK-LABEL: func.func private @residual
// CHECK-SAME: -> tensor<1x1x2x120xf32>
// CHECK-LABEL: func.func @main
// CHECK: call @returned({{.*}}) -> tensor<1x1x2x120xf32>
// CHECK: call @residual({{.*}}) -> tensor<1x1x2x120xf32>
module {
  func.func private @returned(%x: tensor<1x1x2x8xf32>, %w: tensor<1x1x8x120xf32>) -> tensor<1x1x2x120xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x1x2x120xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1x2x120xf32>) -> tensor<1x1x2x120xf32>
    %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                      tessel.lowering_config = {register_block = array<i64: 1, 1, 2, 16>}}
        ins(%x, %w : tensor<1x1x2x8xf32>, tensor<1x1x8x120xf32>) outs(%init : tensor<1x1x2x120xf32>) -> tensor<1x1x2x120xf32>
    return %conv : tensor<1x1x2x120xf32>
  }
  func.func private @residual(%x: tensor<1x1x2x8xf32>, %w: tensor<1x1x8x120xf32>, %r: tensor<1x1x2x120xf32>) -> tensor<1x1x2x120xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x1x2x120xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1x2x120xf32>) -> tensor<1x1x2x120xf32>
    %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                      tessel.lowering_config = {register_block = array<i64: 1, 1, 2, 16>}}
        ins(%x, %w : tensor<1x1x2x8xf32>, tensor<1x1x8x120xf32>) outs(%init : tensor<1x1x2x120xf32>) -> tensor<1x1x2x120xf32>
    %e2 = tensor.empty() : tensor<1x1x2x120xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%conv, %r : tensor<1x1x2x120xf32>, tensor<1x1x2x120xf32>) outs(%e2 : tensor<1x1x2x120xf32>) {
    ^bb0(%p: f32, %q: f32, %out: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<1x1x2x120xf32>
    return %sum : tensor<1x1x2x120xf32>
  }
  func.func @main(%x: tensor<1x1x2x8xf32>, %y: tensor<1x1x2x120xf32>) -> (tensor<1x1x2x120xf32>, tensor<1x1x2x120xf32>) {
    %w = arith.constant dense<0.5> : tensor<1x1x8x120xf32>
    %v = arith.constant dense<0.25> : tensor<1x1x8x120xf32>
    %0 = call @returned(%x, %w) : (tensor<1x1x2x8xf32>, tensor<1x1x8x120xf32>) -> tensor<1x1x2x120xf32>
    %1 = call @residual(%x, %v, %y) : (tensor<1x1x2x8xf32>, tensor<1x1x8x120xf32>, tensor<1x1x2x120xf32>) -> tensor<1x1x2x120xf32>
    return %0, %1 : tensor<1x1x2x120xf32>, tensor<1x1x2x120xf32>
  }
}

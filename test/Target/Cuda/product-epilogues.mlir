// RUN: tessel-cuda-emulate %s --precision fp16 | FileCheck %s
// A kernel must be private, as tessel-compile --emit linalg writes it:
// RUN: sed 's/func.func private @read_twice/func.func @read_twice/' %s > %t.mlir
// RUN: not tessel-cuda-emulate %t.mlir --kernel read_twice | FileCheck %s --check-prefix=PUBLIC
// PUBLIC: read_twice: not a private function
//
// What a tensor-core product's epilogue and its staging take over, and
// what they leave alone. Each kernel, run on the host thread by thread, matches upstream
// linalg's loops; the launch counts show what was fused.

#row = affine_map<(m, n, k) -> (m, k)>
#col = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#tr = affine_map<(m, n) -> (n, m)>
#bias = affine_map<(m, n) -> (n)>

// The zero fill and a consumer that adds a bias read along the columns:
// both in the epilogue, one launch.
// CHECK: fused_bias: 1 launch (1 synchronizing), outputs match
func.func private @fused_bias(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>, %c: tensor<48xf32>)
    -> tensor<64x48xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x48xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x48xf32>) -> tensor<64x48xf32>
  %p = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%filled : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r = tensor.empty() : tensor<64x48xf32>
  %y = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %c : tensor<64x48xf32>, tensor<48xf32>) outs(%r : tensor<64x48xf32>) {
  ^bb0(%x: f32, %bb: f32, %o: f32):
    %s = arith.addf %x, %bb : f32
    linalg.yield %s : f32
  } -> tensor<64x48xf32>
  return %y : tensor<64x48xf32>
}

// The product is a result of the kernel too: its consumer is not the only
// reader, so C is stored and the ReLU is a launch of its own.
// CHECK: read_twice: 2 launches (1 synchronizing), outputs match
func.func private @read_twice(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>)
    -> (tensor<64x48xf32>, tensor<64x48xf32>) attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x48xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x48xf32>) -> tensor<64x48xf32>
  %p = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%filled : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r = tensor.empty() : tensor<64x48xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x48xf32>) outs(%r : tensor<64x48xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64x48xf32>
  return %p, %y : tensor<64x48xf32>, tensor<64x48xf32>
}

// The consumer reads C transposed: the element a thread holds is not the
// one the consumer computes from, so it stays a launch of its own.
// CHECK: transposed: 2 launches (1 synchronizing), outputs match
func.func private @transposed(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>)
    -> tensor<48x64xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x48xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x48xf32>) -> tensor<64x48xf32>
  %p = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%filled : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r = tensor.empty() : tensor<48x64xf32>
  %y = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x48xf32>) outs(%r : tensor<48x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<48x64xf32>
  return %y : tensor<48x64xf32>
}

// A padded image that one convolution reads is read in place (no launch
// pads it): one launch. One that two convolutions read is padded once, by a
// fill and a copy: four launches.
// CHECK: padded_once: 1 launch (1 synchronizing), outputs match
// CHECK: padded_twice: 4 launches (2 synchronizing), outputs match
func.func private @padded_once(%image: tensor<1x10x10x32xf32>, %filter: tensor<3x3x32x32xf32>)
    -> tensor<1x10x10x32xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %image low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x10x10x32xf32> to tensor<1x12x12x32xf32>
  %empty = tensor.empty() : tensor<1x10x10x32xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x10x10x32xf32>) -> tensor<1x10x10x32xf32>
  %y = linalg.conv_2d_nhwc_hwcf ins(%padded, %filter : tensor<1x12x12x32xf32>, tensor<3x3x32x32xf32>)
                                outs(%filled : tensor<1x10x10x32xf32>) -> tensor<1x10x10x32xf32>
  return %y : tensor<1x10x10x32xf32>
}
func.func private @padded_twice(%image: tensor<1x10x10x32xf32>, %f1: tensor<3x3x32x32xf32>,
                                %f2: tensor<3x3x32x32xf32>)
    -> (tensor<1x10x10x32xf32>, tensor<1x10x10x32xf32>) attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %image low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x10x10x32xf32> to tensor<1x12x12x32xf32>
  %empty = tensor.empty() : tensor<1x10x10x32xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x10x10x32xf32>) -> tensor<1x10x10x32xf32>
  %y1 = linalg.conv_2d_nhwc_hwcf ins(%padded, %f1 : tensor<1x12x12x32xf32>, tensor<3x3x32x32xf32>)
                                 outs(%filled : tensor<1x10x10x32xf32>) -> tensor<1x10x10x32xf32>
  %empty2 = tensor.empty() : tensor<1x10x10x32xf32>
  %filled2 = linalg.fill ins(%zero : f32) outs(%empty2 : tensor<1x10x10x32xf32>) -> tensor<1x10x10x32xf32>
  %y2 = linalg.conv_2d_nhwc_hwcf ins(%padded, %f2 : tensor<1x12x12x32xf32>, tensor<3x3x32x32xf32>)
                                 outs(%filled2 : tensor<1x10x10x32xf32>) -> tensor<1x10x10x32xf32>
  return %y1, %y2 : tensor<1x10x10x32xf32>, tensor<1x10x10x32xf32>
}

// CHECK: 5 kernels: 5 match, 0 differ

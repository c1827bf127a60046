// RUN: tessel-cuda-emulate %s --precision fp16 | FileCheck %s
//
// What a tensor-core product's epilogue takes over, and what it leaves
// alone. Each kernel, run on the host thread by thread, matches upstream
// linalg's loops; the launch counts show what was fused.

#row = affine_map<(m, n, k) -> (m, k)>
#col = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#tr = affine_map<(m, n) -> (n, m)>
#bias = affine_map<(m, n) -> (n)>

// The zero fill and a consumer that adds a bias read along the columns:
// both in the epilogue, one launch.
// CHECK: fused_bias: 1 launch (1 as threads), outputs match
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
// CHECK: read_twice: 2 launches (1 as threads), outputs match
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
// CHECK: transposed: 2 launches (1 as threads), outputs match
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

// CHECK: 3 kernels: 3 match, 0 differ

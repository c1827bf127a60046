// RUN: tessel-opt %s --tessel-x86-choose-lowering="vector-width=8" --split-input-file --verify-diagnostics | FileCheck %s

// tessel-x86-choose-lowering records each register-blocked op's block once,
// for the op's whole extents, and keeps (after checking) a config that the
// input already carries.

// With AVX2 (8 lanes, 16 registers) a 6 x 32 product gets 6 x 16 blocks: 12
// accumulators, two loaded vectors of B and one broadcast of A fill 15 of
// the 16 registers (the shape of BLIS's Haswell SGEMM kernel).
// CHECK-LABEL: func.func private @chosen
// CHECK: linalg.generic
// CHECK-SAME: tessel.lowering_config = {register_block = array<i64: 6, 16>}
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @chosen(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
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
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @chosen(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

// A config written into the input is kept as it is.
// CHECK-LABEL: func.func private @pinned
// CHECK: linalg.generic
// CHECK-SAME: tessel.lowering_config = {register_block = array<i64: 2, 8>}
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @pinned(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 2, 8>}} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @pinned(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @columns(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    // expected-error @+1 {{register_block's last extent, 12, is not a whole number of 8-lane vectors}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 2, 12>}} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @columns(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @rank(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    // expected-error @+1 {{register_block has 1 extents for a result of rank 2}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 4>}} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @rank(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @negative(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    // expected-error @+1 {{register_block extents must be positive}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 0, 8>}} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @negative(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @f32_dot(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    // expected-error @+1 {{dot_product is only for INT8 and bf16 ops}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 2, 8>, dot_product = "vnni"}} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @f32_dot(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @malformed(%a: tensor<6x2xf32>, %b: tensor<2x32xf32>) -> tensor<6x32xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x32xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x32xf32>) -> tensor<6x32xf32>
    // expected-error @+1 {{malformed tessel.lowering_config: expected {register_block = array<i64: ...>} with an optional dot_product of "vnni", "pmaddwd", "pmaddubsw", "dpbf16ps", "bf16-fma" or "amx"}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<6x2xf32>, tensor<2x32xf32>) outs(%c : tensor<6x32xf32>)
        attrs = {tessel.lowering_config = {register_block = [2, 8]}} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
  func.func @main(%x: tensor<6x2xf32>) -> tensor<6x32xf32> {
    %w = arith.constant dense<1.0> : tensor<2x32xf32>
    %0 = call @malformed(%x, %w) : (tensor<6x2xf32>, tensor<2x32xf32>) -> tensor<6x32xf32>
    return %0 : tensor<6x32xf32>
  }
}

// -----

func.func @elementwise(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{tessel.lowering_config on an op that is neither a contraction nor an NHWC window op}}
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%a : tensor<8xf32>)
      attrs = {tessel.lowering_config = {register_block = array<i64: 8>}} {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// INT8 products: without VNNI (the default, pmaddwd), VPMADDUBSW where the
// weight's byte pairs sum into 16 bits exactly (2 * 255 * 3 <= 32767), the
// widened VPMADDWD pairs where they may not (2 * 255 * 127 > 32767).
// CHECK-LABEL: func.func private @small_weights
// CHECK: linalg.generic
// CHECK-SAME: tessel.lowering_config = {dot_product = "pmaddubsw", register_block
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @small_weights(%a: tensor<4x8xi8>, %b: tensor<8x16xi8>) -> tensor<4x16xi32> attributes {tessel.kernel} {
    %zero = arith.constant 0 : i32
    %e = tensor.empty() : tensor<4x16xi32>
    %c = linalg.fill ins(%zero : i32) outs(%e : tensor<4x16xi32>) -> tensor<4x16xi32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<4x8xi8>, tensor<8x16xi8>) outs(%c : tensor<4x16xi32>) {
    ^bb0(%x: i8, %y: i8, %acc: i32):
      %xe = arith.extui %x : i8 to i32
      %ye = arith.extsi %y : i8 to i32
      %p = arith.muli %xe, %ye : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    } -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
  func.func @main(%x: tensor<4x8xi8>) -> tensor<4x16xi32> {
    %w = arith.constant dense<3> : tensor<8x16xi8>
    %0 = call @small_weights(%x, %w) : (tensor<4x8xi8>, tensor<8x16xi8>) -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
}

// -----

// CHECK-LABEL: func.func private @large_weights
// CHECK: linalg.generic
// CHECK-SAME: tessel.lowering_config = {dot_product = "pmaddwd", register_block
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @large_weights(%a: tensor<4x8xi8>, %b: tensor<8x16xi8>) -> tensor<4x16xi32> attributes {tessel.kernel} {
    %zero = arith.constant 0 : i32
    %e = tensor.empty() : tensor<4x16xi32>
    %c = linalg.fill ins(%zero : i32) outs(%e : tensor<4x16xi32>) -> tensor<4x16xi32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<4x8xi8>, tensor<8x16xi8>) outs(%c : tensor<4x16xi32>) {
    ^bb0(%x: i8, %y: i8, %acc: i32):
      %xe = arith.extui %x : i8 to i32
      %ye = arith.extsi %y : i8 to i32
      %p = arith.muli %xe, %ye : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    } -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
  func.func @main(%x: tensor<4x8xi8>) -> tensor<4x16xi32> {
    %w = arith.constant dense<127> : tensor<8x16xi8>
    %0 = call @large_weights(%x, %w) : (tensor<4x8xi8>, tensor<8x16xi8>) -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @pinned_pmaddubsw(%a: tensor<4x8xi8>, %b: tensor<8x16xi8>) -> tensor<4x16xi32> attributes {tessel.kernel} {
    %zero = arith.constant 0 : i32
    %e = tensor.empty() : tensor<4x16xi32>
    %c = linalg.fill ins(%zero : i32) outs(%e : tensor<4x16xi32>) -> tensor<4x16xi32>
    // expected-error @+1 {{dot_product "pmaddubsw" needs a constant weight whose byte pairs sum into 16 bits exactly}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<4x8xi8>, tensor<8x16xi8>) outs(%c : tensor<4x16xi32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 2, 16>, dot_product = "pmaddubsw"}} {
    ^bb0(%x: i8, %y: i8, %acc: i32):
      %xe = arith.extui %x : i8 to i32
      %ye = arith.extsi %y : i8 to i32
      %p = arith.muli %xe, %ye : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    } -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
  func.func @main(%x: tensor<4x8xi8>) -> tensor<4x16xi32> {
    %w = arith.constant dense<127> : tensor<8x16xi8>
    %0 = call @pinned_pmaddubsw(%x, %w) : (tensor<4x8xi8>, tensor<8x16xi8>) -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @missing_dot(%a: tensor<4x8xi8>, %b: tensor<8x16xi8>) -> tensor<4x16xi32> attributes {tessel.kernel} {
    %zero = arith.constant 0 : i32
    %e = tensor.empty() : tensor<4x16xi32>
    %c = linalg.fill ins(%zero : i32) outs(%e : tensor<4x16xi32>) -> tensor<4x16xi32>
    // expected-error @+1 {{dot_product is required for an INT8 or bf16 op}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<4x8xi8>, tensor<8x16xi8>) outs(%c : tensor<4x16xi32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 2, 16>}} {
    ^bb0(%x: i8, %y: i8, %acc: i32):
      %xe = arith.extui %x : i8 to i32
      %ye = arith.extsi %y : i8 to i32
      %p = arith.muli %xe, %ye : i32
      %s = arith.addi %acc, %p : i32
      linalg.yield %s : i32
    } -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
  func.func @main(%x: tensor<4x8xi8>) -> tensor<4x16xi32> {
    %w = arith.constant dense<1> : tensor<8x16xi8>
    %0 = call @missing_dot(%x, %w) : (tensor<4x8xi8>, tensor<8x16xi8>) -> tensor<4x16xi32>
    return %0 : tensor<4x16xi32>
  }
}

// -----

// Blocks hold one batch entry.
func.func @batched(%a: tensor<2x6x4xf32>, %b: tensor<2x4x16xf32>, %c: tensor<2x6x16xf32>) -> tensor<2x6x16xf32> {
  // expected-error @+1 {{register_block's extent along batch axis 0 is 2; blocks hold one batch entry}}
  %0 = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<2x6x4xf32>, tensor<2x4x16xf32>) outs(%c : tensor<2x6x16xf32>)
      attrs = {tessel.lowering_config = {register_block = array<i64: 2, 6, 16>}} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x6x16xf32>
  return %0 : tensor<2x6x16xf32>
}

// -----

func.func @batched_pool(%in: tensor<2x4x4x8xf32>, %window: tensor<2x2xf32>, %out: tensor<2x3x3x8xf32>) -> tensor<2x3x3x8xf32> {
  // expected-error @+1 {{register_block's extent along batch axis 0 is 2; blocks hold one batch entry}}
  %0 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                tessel.lowering_config = {register_block = array<i64: 2, 1, 3, 8>}}
      ins(%in, %window : tensor<2x4x4x8xf32>, tensor<2x2xf32>) outs(%out : tensor<2x3x3x8xf32>) -> tensor<2x3x3x8xf32>
  return %0 : tensor<2x3x3x8xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A bf16 product (--precision bf16) gets the ISA's bf16 dot product: FMAs
// of the widened halves unless the pass is told VDPBF16PS (as
// pack-weights.mlir's bf16 case is).
// CHECK-LABEL: func.func private @bf16_product
// CHECK: linalg.generic
// CHECK-SAME: tessel.lowering_config = {dot_product = "bf16-fma", register_block
module {
  func.func private @bf16_product(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%c : tensor<4x16xf32>) {
    ^bb0(%x: bf16, %y: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %ye = arith.extf %y : bf16 to f32
      %p = arith.mulf %xe, %ye : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  func.func @main(%x: tensor<4x8xbf16>) -> tensor<4x16xf32> {
    %w = arith.constant dense<1.0> : tensor<8x16xbf16>
    %0 = call @bf16_product(%x, %w) : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

// -----

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

module {
  func.func private @bf16_pinned_bytes(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xf32> attributes {tessel.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    // expected-error @+1 {{dot_product "vnni" does not multiply bf16}}
    %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%c : tensor<4x16xf32>)
        attrs = {tessel.lowering_config = {register_block = array<i64: 2, 16>, dot_product = "vnni"}} {
    ^bb0(%x: bf16, %y: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %ye = arith.extf %y : bf16 to f32
      %p = arith.mulf %xe, %ye : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  func.func @main(%x: tensor<4x8xbf16>) -> tensor<4x16xf32> {
    %w = arith.constant dense<1.0> : tensor<8x16xbf16>
    %0 = call @bf16_pinned_bytes(%x, %w) : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

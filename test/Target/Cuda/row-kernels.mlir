// RUN: tessel-cuda-emulate %s | FileCheck %s
// Without barriers, the threads of a block read partial results that are
// not written yet (shared memory starts each block as NaNs):
// RUN: not tessel-cuda-emulate %s --kernel softmax --remove-barriers | FileCheck %s --check-prefix=RACE
// RACE: softmax: 1 launch (1 synchronizing), OUTPUTS DIFFER
//
// Which reductions take a block per row (RowKernels.cpp), which ops join
// their launch, and what stays apart. Each kernel, run on the host thread by
// thread, matches upstream linalg's loops; the launch counts show what was
// put together ("synchronizing": a launch whose threads share memory and meet
// at barriers).

#rows = affine_map<(r, k) -> (r, k)>
#row = affine_map<(r, k) -> (r)>
#mirrored = affine_map<(r, k) -> (63 - r)>
#all = affine_map<(r, k) -> ()>
#vector = affine_map<(r) -> (r)>

// A softmax: both fills, both reductions and the normalization, one launch.
// CHECK: softmax: 1 launch (1 synchronizing), outputs match
func.func private @softmax(%x: tensor<64x384xf32>) -> tensor<64x384xf32> attributes {tessel.kernel} {
  %lowest = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64xf32>
  %m0 = linalg.fill ins(%lowest : f32) outs(%e0 : tensor<64xf32>) -> tensor<64xf32>
  %m = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x384xf32>) outs(%m0 : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<64x384xf32>, tensor<64xf32>) outs(%s0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %r = arith.addf %acc, %e : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64x384xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m, %s : tensor<64x384xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64x384xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %c : f32
    linalg.yield %q : f32
  } -> tensor<64x384xf32>
  return %y : tensor<64x384xf32>
}

// A whole tensor summed: no row loops, one block.
// CHECK: whole_tensor: 1 launch (1 synchronizing), outputs match
func.func private @whole_tensor(%x: tensor<8x1000xf32>) -> tensor<f32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#rows, #all], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<8x1000xf32>) outs(%s0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// Rows of five loops (an NLLLoss's mean over N, d1 ... d5).
// CHECK: five_loops: 1 launch (1 synchronizing), outputs match
func.func private @five_loops(%x: tensor<3x6x6x5x3x4xf32>) -> tensor<3xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(r, a, b, c, d, e) -> (r, a, b, c, d, e)>,
                                        affine_map<(r, a, b, c, d, e) -> (r)>],
                       iterator_types = ["parallel", "reduction", "reduction", "reduction", "reduction", "reduction"]}
      ins(%x : tensor<3x6x6x5x3x4xf32>) outs(%s0 : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// Integers combine exactly in any order. (The emulator's pseudo-random
// bytes, widened: its wider integer inputs are zeros.)
// CHECK: integer_sum: 1 launch (1 synchronizing), outputs match (largest relative difference 0,
func.func private @integer_sum(%x: tensor<16x300xi8>) -> tensor<16xi32> attributes {tessel.kernel} {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<16xi32>
  %s0 = linalg.fill ins(%zero : i32) outs(%e : tensor<16xi32>) -> tensor<16xi32>
  %s = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x300xi8>) outs(%s0 : tensor<16xi32>) {
  ^bb0(%a: i8, %acc: i32):
    %w = arith.extsi %a : i8 to i32
    %r = arith.addi %acc, %w : i32
    linalg.yield %r : i32
  } -> tensor<16xi32>
  return %s : tensor<16xi32>
}

// Columns summed (the reduction is the outer dimension). With 2048 of
// them, a thread per column keeps the GPU busy and a warp reads 32
// neighbours at a time (a launch for the fill, one for the sums) ...
// CHECK: many_columns: 2 launches, outputs match
func.func private @many_columns(%x: tensor<64x2048xf32>) -> tensor<2048xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<2048xf32>) -> tensor<2048xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(k, c) -> (k, c)>, affine_map<(k, c) -> (c)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<64x2048xf32>) outs(%s0 : tensor<2048xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<2048xf32>
  return %s : tensor<2048xf32>
}

// ... with 64 (a global average pool of few channels), a thread per column
// would leave the GPU idle: a block per column, though its threads read
// terms a row apart.
// CHECK: few_columns: 1 launch (1 synchronizing), outputs match
func.func private @few_columns(%x: tensor<384x64xf32>) -> tensor<64xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(k, c) -> (k, c)>, affine_map<(k, c) -> (c)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<384x64xf32>) outs(%s0 : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// Rows shorter than a warp keep a thread per row.
// CHECK: short_rows: 2 launches, outputs match
func.func private @short_rows(%x: tensor<64x16xf32>) -> tensor<64xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x16xf32>) outs(%s0 : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// The accumulator takes part in more than the combining op (the running
// maximum's index of an ArgMax): no identity to start the threads from, so
// a thread per row.
// CHECK: arg_max: 3 launches, outputs match
func.func private @arg_max(%x: tensor<64x384xf32>) -> tensor<64xi32> attributes {tessel.kernel} {
  %lowest = arith.constant 0xFF800000 : f32
  %none = arith.constant 0 : i32
  %e0 = tensor.empty() : tensor<64xf32>
  %m0 = linalg.fill ins(%lowest : f32) outs(%e0 : tensor<64xf32>) -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xi32>
  %i0 = linalg.fill ins(%none : i32) outs(%e1 : tensor<64xi32>) -> tensor<64xi32>
  %m:2 = linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x384xf32>) outs(%m0, %i0 : tensor<64xf32>, tensor<64xi32>) {
  ^bb0(%a: f32, %best: f32, %at: i32):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i32
    %greater = arith.cmpf ogt, %a, %best : f32
    %v = arith.select %greater, %a, %best : f32
    %i = arith.select %greater, %ki, %at : i32
    linalg.yield %v, %i : f32, i32
  } -> (tensor<64xf32>, tensor<64xi32>)
  return %m#1 : tensor<64xi32>
}

// The op after the sums reads another block's row (row 63 - r): it waits
// for a launch of its own.
// CHECK: read_across_rows: 2 launches (1 synchronizing), outputs match
func.func private @read_across_rows(%x: tensor<64x384xf32>) -> tensor<64x384xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x384xf32>) outs(%s0 : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64x384xf32>
  %y = linalg.generic {indexing_maps = [#rows, #mirrored, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<64x384xf32>, tensor<64xf32>) outs(%e1 : tensor<64x384xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<64x384xf32>
  return %y : tensor<64x384xf32>
}

// The op after the sums has longer rows than the reduction's terms (64
// terms, 4096 elements): the block sized for the sums would take them
// slowly, so it is a launch of its own.
// CHECK: longer_rows: 2 launches (1 synchronizing), outputs match
func.func private @longer_rows(%x: tensor<64x64xf32>, %w: tensor<64x4096xf32>) -> tensor<64x4096xf32> attributes {tessel.kernel} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x64xf32>) outs(%s0 : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64x4096xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%w, %s : tensor<64x4096xf32>, tensor<64xf32>) outs(%e1 : tensor<64x4096xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.mulf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<64x4096xf32>
  return %y : tensor<64x4096xf32>
}

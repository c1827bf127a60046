// RUN: tessel-opt %s --split-input-file --verify-diagnostics
// Each op's verifier or result-type inference rejects what ONNX forbids.

func.func @add_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{operand shapes [2, 3] and [4] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mul_element_types(%a: tensor<2xf32>, %b: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error @+1 {{operands and result must share an element type}}
  %0 = tessel.mul %a, %b : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @sub_wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @relu_int(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{must be ranked tensor of floating-point or uniform quantized type values}}
  %0 = tessel.relu %a : tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @clip_bound_type(%a: tensor<2xf32>, %b: tensor<i32>) -> tensor<2xf32> {
  // expected-error @+1 {{bounds must be single 'f32' values, got 'tensor<i32>'}}
  %0 = tessel.clip %a max(%b : tensor<i32>) : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @clip_bound_shape(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{bounds must be single 'f32' values, got 'tensor<2xf32>'}}
  %0 = tessel.clip %a min(%b : tensor<2xf32>) : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @matmul_mismatch(%a: tensor<2x8xf32>, %b: tensor<7x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+2 {{operand shapes [2, 8] and [7, 4] are not compatible for a matrix product}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.matmul %a, %b : (tensor<2x8xf32>, tensor<7x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @gemm_reduction(%a: tensor<2x8xf32>, %b: tensor<7x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{reduction extents differ: A has 8, B has 7}}
  %0 = tessel.gemm %a, %b : (tensor<2x8xf32>, tensor<7x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @gemm_bias(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>, %c: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{C of shape [3] does not broadcast to the result shape [2, 4]}}
  %0 = tessel.gemm %a, %b, %c : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+1 {{input has 4 channels but the weight expects 3 per group x 1 groups}}
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @conv_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+2 {{pads has 2 entries, expected 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error @+1 {{bias must be a vector of 8 elements}}
  %0 = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @conv_group(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error @+1 {{input has 4 channels but the weight expects 2 per group x 4 groups}}
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

func.func @max_pool_window(%x: tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32> {
  // expected-error @+2 {{the window is larger than the padded input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                           pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32>
  return %0 : tensor<1x3x1x1xf32>
}

// -----

func.func @max_pool_pads(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x10x10xf32> {
  // expected-error @+1 {{pads must be smaller than the window on axis 0}}
  %0 = tessel.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                           pads = array<i64: 2, 0, 2, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>) -> tensor<1x3x11x7xf32>
  return %0 : tensor<1x3x11x7xf32>
}

// -----

func.func @average_pool_strides(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{strides must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.average_pool %x {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>,
                               kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 0, 2>}
      : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @global_pool_rank(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{input must have rank 3 or more}}
  %0 = tessel.global_average_pool %x : (tensor<3x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @batch_norm_params(%x: tensor<1x4x2x2xf32>, %p: tensor<3xf32>) -> tensor<1x4x2x2xf32> {
  // expected-error @+1 {{parameters must be vectors of 4 elements, one per channel}}
  %0 = tessel.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<1x4x2x2xf32>, tensor<3xf32>
  return %0 : tensor<1x4x2x2xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<2x10xf32>, %scale: tensor<2x10xf32>) -> tensor<2x10xf32> {
  // expected-error @+1 {{scale and bias must be vectors of 10 elements, the last axis}}
  %0 = tessel.layer_norm %x, %scale {epsilon = 1.0e-05 : f32} : (tensor<2x10xf32>, tensor<2x10xf32>) -> tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

func.func @softmax_axis(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tessel.softmax %x {axis = 2 : i64} : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

func.func @flatten_axis(%x: tensor<2x10xf32>) -> tensor<20x1xf32> {
  // expected-error @+1 {{axis 3 is out of range}}
  %0 = tessel.flatten %x {axis = 3 : i64} : (tensor<2x10xf32>) -> tensor<20x1xf32>
  return %0 : tensor<20x1xf32>
}

// -----

func.func @reshape_count(%x: tensor<2x10xf32>) -> tensor<3x7xf32> {
  // expected-error @+1 {{cannot reshape 20 elements into 21 elements}}
  %0 = tessel.reshape %x : tensor<2x10xf32> -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{perm is not a permutation of the axes}}
  %0 = tessel.transpose %x {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @concat_mismatch(%a: tensor<1x2xf32>, %b: tensor<2x3xf32>) -> tensor<1x5xf32> {
  // expected-error @+2 {{inputs differ on axis 0, which is not the concat axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tessel.concat %a, %b {axis = 1 : i64} : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x5xf32>
  return %0 : tensor<1x5xf32>
}

// -----

func.func @celu_zero_alpha(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{alpha must not be 0 (the input is divided by it)}}
  %0 = tessel.celu %a {alpha = 0.0 : f32} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @exp_int(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = tessel.exp %a : tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @cast_shape(%a: tensor<2xf32>) -> tensor<3xi32> {
  // expected-error @+1 {{input and result shapes differ: 'tensor<2xf32>' vs 'tensor<3xi32>'}}
  %0 = tessel.cast %a : tensor<2xf32> -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @pow_int(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{needs a floating-point base, got 'i32'}}
  %0 = tessel.pow %a, %a : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @compare_predicate(%a: tensor<2xf32>) -> tensor<2xi1> {
  // expected-error @+1 {{unknown predicate 'ne' (expected eq, lt, le, gt or ge)}}
  %0 = tessel.compare "ne", %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @and_float(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{must be ranked tensor of integer values}}
  %0 = tessel.and %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_kind(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{kind must be sum, prod, max or min, not 'mean'}}
  %0 = tessel.reduce "mean", %a {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_axis_twice(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{axis 1 is reduced twice}}
  %0 = tessel.reduce "sum", %a {axes = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @arg_reduce_axis(%a: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tessel.arg_reduce "max", %a {axis = 2 : i64, select_last = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @count_out_of_range_tuple_extents(%i: tensor<3x2xi64>) -> tensor<i64> {
  // expected-error @+1 {{several extents need indices whose innermost axis has one entry per extent}}
  %0 = tessel.count_out_of_range %i {extents = array<i64: 5, 4, 3>} : tensor<3x2xi64> -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

func.func @count_out_of_range_negative_extent(%i: tensor<3xi32>) -> tensor<i64> {
  // expected-error @+1 {{extents must be one or more sizes >= 0}}
  %0 = tessel.count_out_of_range %i {extents = array<i64: -1>} : tensor<3xi32> -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// Products may widen bf16 operands to an f32 result (--precision bf16), and
// nothing else.
func.func @matmul_widening_f16(%a: tensor<2x3xf16>, %b: tensor<3x4xf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{operands and result must share an element type, or be bf16 operands with an f32 result}}
  %0 = tessel.matmul %a, %b : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @conv_widening_one_operand(%x: tensor<1x2x4x4xbf16>, %w: tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{operands and result must share an element type, or be bf16 operands with an f32 result}}
  %0 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xbf16>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @scan_state_types(%h: tensor<1x8xf32>, %c: tensor<1x4xf32>, %x: tensor<3x1x8xf32>) -> tensor<3x2x1x8xf32> {
  // expected-error @+1 {{states must share one type}}
  %0 = tessel.scan invariants() states(%h, %c) scanned(%x)
      : (tensor<1x8xf32>, tensor<1x4xf32>, tensor<3x1x8xf32>) -> tensor<3x2x1x8xf32> {
  ^bb0(%a: tensor<1x8xf32>, %b: tensor<1x4xf32>, %xt: tensor<1x8xf32>):
    tessel.yield %a, %b : tensor<1x8xf32>, tensor<1x4xf32>
  }
  return %0 : tensor<3x2x1x8xf32>
}

// -----

func.func @scan_result(%h: tensor<1x8xf32>, %x: tensor<3x1x8xf32>) -> tensor<3x1x8xf32> {
  // expected-error @+1 {{result must stack the states of every step as [steps, states, ...], expected 'tensor<3x1x1x8xf32>', got 'tensor<3x1x8xf32>'}}
  %0 = tessel.scan invariants() states(%h) scanned(%x)
      : (tensor<1x8xf32>, tensor<3x1x8xf32>) -> tensor<3x1x8xf32> {
  ^bb0(%a: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    tessel.yield %a : tensor<1x8xf32>
  }
  return %0 : tensor<3x1x8xf32>
}

// -----

func.func @scan_steps(%h: tensor<1x8xf32>, %x: tensor<4x1x8xf32>) -> tensor<3x1x1x8xf32> {
  // expected-error @+1 {{scanned operand 'tensor<4x1x8xf32>' must have 3 steps along its leading axis}}
  %0 = tessel.scan invariants() states(%h) scanned(%x)
      : (tensor<1x8xf32>, tensor<4x1x8xf32>) -> tensor<3x1x1x8xf32> {
  ^bb0(%a: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    tessel.yield %a : tensor<1x8xf32>
  }
  return %0 : tensor<3x1x1x8xf32>
}

// -----

func.func @scan_arguments(%h: tensor<1x8xf32>, %x: tensor<3x1x8xf32>) -> tensor<3x1x1x8xf32> {
  // expected-error @+1 {{body arguments must be the invariants, the states and one step of each scanned operand}}
  %0 = tessel.scan invariants() states(%h) scanned(%x)
      : (tensor<1x8xf32>, tensor<3x1x8xf32>) -> tensor<3x1x1x8xf32> {
  ^bb0(%a: tensor<1x8xf32>, %xt: tensor<3x1x8xf32>):
    tessel.yield %a : tensor<1x8xf32>
  }
  return %0 : tensor<3x1x1x8xf32>
}

// -----

func.func @scan_yield(%h: tensor<1x8xf32>, %x: tensor<3x1x8xf32>) -> tensor<3x1x1x8xf32> {
  // expected-error @+1 {{body must yield the next value of every state}}
  %0 = tessel.scan invariants() states(%h) scanned(%x)
      : (tensor<1x8xf32>, tensor<3x1x8xf32>) -> tensor<3x1x1x8xf32> {
  ^bb0(%a: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    tessel.yield %a, %xt : tensor<1x8xf32>, tensor<1x8xf32>
  }
  return %0 : tensor<3x1x1x8xf32>
}

// -----

func.func @scan_length(%h: tensor<1x8xf32>, %x: tensor<3x1x8xf32>, %n: tensor<1xi64>) -> tensor<3x1x1x8xf32> {
  // expected-error @+1 {{length must be a 0-d i64 tensor, got 'tensor<1xi64>'}}
  %0 = tessel.scan invariants() states(%h) scanned(%x) length(%n)
      : (tensor<1x8xf32>, tensor<3x1x8xf32>, tensor<1xi64>) -> tensor<3x1x1x8xf32> {
  ^bb0(%a: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    tessel.yield %xt : tensor<1x8xf32>
  }
  return %0 : tensor<3x1x1x8xf32>
}

// -----

func.func @loop_trip_count(%m: tensor<1xi64>, %acc0: tensor<3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{trip count must be a 0-d i64 tensor, got 'tensor<1xi64>'}}
  %0 = tessel.loop trip_count(%m) invariants() states(%acc0)
      : (tensor<1xi64>, tensor<3xf32>) -> tensor<1x3xf32> {
  ^bb0(%i: tensor<i64>, %acc: tensor<3xf32>):
    tessel.yield %acc : tensor<3xf32>
  }
  return %0 : tensor<1x3xf32>
}

// -----

func.func @loop_result(%m: tensor<i64>, %acc0: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{result must stack the final states as [states, ...], expected 'tensor<1x3xf32>', got 'tensor<3xf32>'}}
  %0 = tessel.loop trip_count(%m) invariants() states(%acc0)
      : (tensor<i64>, tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%i: tensor<i64>, %acc: tensor<3xf32>):
    tessel.yield %acc : tensor<3xf32>
  }
  return %0 : tensor<3xf32>
}

// -----

func.func @loop_arguments(%m: tensor<i64>, %acc0: tensor<3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{body arguments must be the iteration number, the invariants and the states}}
  %0 = tessel.loop trip_count(%m) invariants() states(%acc0)
      : (tensor<i64>, tensor<3xf32>) -> tensor<1x3xf32> {
  ^bb0(%acc: tensor<3xf32>):
    tessel.yield %acc : tensor<3xf32>
  }
  return %0 : tensor<1x3xf32>
}

// -----

func.func @loop_condition(%m: tensor<i64>, %acc0: tensor<3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{body must yield the condition (a 0-d i1 tensor) and the next value of every state}}
  %0 = tessel.loop conditional trip_count(%m) invariants() states(%acc0)
      : (tensor<i64>, tensor<3xf32>) -> tensor<1x3xf32> {
  ^bb0(%i: tensor<i64>, %acc: tensor<3xf32>):
    tessel.yield %acc : tensor<3xf32>
  }
  return %0 : tensor<1x3xf32>
}

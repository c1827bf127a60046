// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// Every tessel op survives a print/parse round trip.

// CHECK-LABEL: @constant
func.func @constant() -> tensor<2xf32> {
  // CHECK: tessel.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK-LABEL: @binary
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xui8>) -> (tensor<2x3xf32>, tensor<4xui8>) {
  // CHECK: tessel.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = tessel.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: tessel.sub
  %1 = tessel.sub %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: tessel.mul
  %2 = tessel.mul %1, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: tessel.div
  %3 = tessel.div %2, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: tessel.add %{{.*}} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %4 = tessel.add %i, %i : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %3, %4 : tensor<2x3xf32>, tensor<4xui8>
}

// CHECK-LABEL: @activations
func.func @activations(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: tessel.relu %{{.*}} : tensor<8xf32>
  %0 = tessel.relu %x : tensor<8xf32>
  // CHECK: tessel.sigmoid
  %1 = tessel.sigmoid %0 : tensor<8xf32>
  // CHECK: tessel.tanh
  %2 = tessel.tanh %1 : tensor<8xf32>
  // CHECK: tessel.clip %{{.*}} min(%{{.*}} : tensor<f32>) max(%{{.*}} : tensor<f32>) : tensor<8xf32>
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %six = tessel.constant dense<6.0> : tensor<f32>
  %3 = tessel.clip %2 min(%zero : tensor<f32>) max(%six : tensor<f32>) : tensor<8xf32>
  // CHECK: tessel.clip %{{.*}} max(%{{.*}} : tensor<f32>) : tensor<8xf32>
  %4 = tessel.clip %3 max(%six : tensor<f32>) : tensor<8xf32>
  return %4 : tensor<8xf32>
}

// CHECK-LABEL: @linear_algebra
func.func @linear_algebra(%a: tensor<2x8x16xf32>, %b: tensor<16x4xf32>, %m: tensor<1x512xf32>,
                          %w: tensor<1000x512xf32>, %c: tensor<1000xf32>) -> (tensor<2x8x4xf32>, tensor<1x1000xf32>) {
  // CHECK: tessel.matmul %{{.*}}, %{{.*}} : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
  %0 = tessel.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
  // CHECK: tessel.gemm %{{.*}}, %{{.*}}, %{{.*}} {trans_b = true}
  %1 = tessel.gemm %m, %w, %c {trans_b = true} : (tensor<1x512xf32>, tensor<1000x512xf32>, tensor<1000xf32>) -> tensor<1x1000xf32>
  return %0, %1 : tensor<2x8x4xf32>, tensor<1x1000xf32>
}

// CHECK-LABEL: @windows
func.func @windows(%x: tensor<1x3x32x32xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>,
                   %dw: tensor<3x1x3x3xf32>) -> (tensor<1x8x32x32xf32>, tensor<1x3x16x16xf32>, tensor<1x3x16x16xf32>, tensor<1x3x1x1xf32>, tensor<1x3x32x32xf32>) {
  // CHECK: tessel.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
  %0 = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x32x32xf32>
  // CHECK: tessel.max_pool
  %1 = tessel.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>,
                           pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<1x3x32x32xf32>) -> tensor<1x3x16x16xf32>
  // CHECK: tessel.average_pool
  %2 = tessel.average_pool %x {ceil_mode = true, count_include_pad = false, dilations = array<i64: 1, 1>,
                               kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x3x32x32xf32>) -> tensor<1x3x16x16xf32>
  // CHECK: tessel.global_average_pool %{{.*}} : (tensor<1x3x32x32xf32>) -> tensor<1x3x1x1xf32>
  %3 = tessel.global_average_pool %x : (tensor<1x3x32x32xf32>) -> tensor<1x3x1x1xf32>
  // CHECK: tessel.conv %{{.*}}, %{{.*}} {{{.*}}group = 3 : i64
  %4 = tessel.conv %x, %dw {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<1x3x32x32xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x32x32xf32>
  return %0, %1, %2, %3, %4 : tensor<1x8x32x32xf32>, tensor<1x3x16x16xf32>, tensor<1x3x16x16xf32>, tensor<1x3x1x1xf32>, tensor<1x3x32x32xf32>
}

// CHECK-LABEL: @normalization
func.func @normalization(%x: tensor<1x4x2x2xf32>, %p: tensor<4xf32>, %s: tensor<2x10xf32>) -> (tensor<1x4x2x2xf32>, tensor<2x10xf32>) {
  // CHECK: tessel.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : tensor<1x4x2x2xf32>, tensor<4xf32>
  %0 = tessel.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<1x4x2x2xf32>, tensor<4xf32>
  // CHECK: tessel.softmax %{{.*}} {axis = 1 : i64} : tensor<2x10xf32>
  %1 = tessel.softmax %s {axis = 1 : i64} : tensor<2x10xf32>
  return %0, %1 : tensor<1x4x2x2xf32>, tensor<2x10xf32>
}

// CHECK-LABEL: @layer_norm
func.func @layer_norm(%x: tensor<2x10xf32>, %scale: tensor<10xf32>) -> (tensor<2x10xf32>, tensor<2x10xf32>) {
  // CHECK: tessel.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<2x10xf32>, tensor<10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  %0 = tessel.layer_norm %x, %scale, %scale {epsilon = 1.0e-05 : f32} : (tensor<2x10xf32>, tensor<10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  // CHECK: tessel.layer_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f32} : (tensor<2x10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  %1 = tessel.layer_norm %x, %scale {epsilon = 1.0e-03 : f32} : (tensor<2x10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  return %0, %1 : tensor<2x10xf32>, tensor<2x10xf32>
}

// CHECK-LABEL: @data_movement
func.func @data_movement(%x: tensor<1x512x1x1xf32>, %t: tensor<1x3x4x5xf32>, %a: tensor<1x2xf32>, %b: tensor<1x3xf32>)
    -> (tensor<1x512xf32>, tensor<512xf32>, tensor<1x4x5x3xf32>, tensor<1x5xf32>) {
  // CHECK: tessel.flatten %{{.*}} {axis = 1 : i64} : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
  %0 = tessel.flatten %x {axis = 1 : i64} : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
  // CHECK: tessel.reshape %{{.*}} : tensor<1x512x1x1xf32> -> tensor<512xf32>
  %1 = tessel.reshape %x : tensor<1x512x1x1xf32> -> tensor<512xf32>
  // CHECK: tessel.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>}
  %2 = tessel.transpose %t {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
  // CHECK: tessel.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  %3 = tessel.concat %a, %b {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  return %0, %1, %2, %3 : tensor<1x512xf32>, tensor<512xf32>, tensor<1x4x5x3xf32>, tensor<1x5xf32>
}

// CHECK-LABEL: @math_and_activations
func.func @math_and_activations(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  // CHECK: tessel.abs %{{.*}} : tensor<2x3xf64>
  %0 = tessel.abs %x : tensor<2x3xf64>
  // CHECK: tessel.atanh
  %1 = tessel.atanh %0 : tensor<2x3xf64>
  // CHECK: tessel.hard_swish
  %2 = tessel.hard_swish %1 : tensor<2x3xf64>
  // CHECK: tessel.celu %{{.*}} {alpha = 2.000000e+00 : f32} : tensor<2x3xf64>
  %3 = tessel.celu %2 {alpha = 2.0 : f32} : tensor<2x3xf64>
  // CHECK: tessel.gelu %{{.*}} {tanh = false} : tensor<2x3xf64>
  %4 = tessel.gelu %3 {tanh = false} : tensor<2x3xf64>
  return %4 : tensor<2x3xf64>
}

// CHECK-LABEL: @cast
func.func @cast(%x: tensor<2x3xf32>) -> tensor<2x3xui8> {
  // CHECK: tessel.cast %{{.*}} : tensor<2x3xf32> -> tensor<2x3xui8>
  %0 = tessel.cast %x : tensor<2x3xf32> -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// Products of bf16 operands may accumulate into f32 (--precision bf16).
// CHECK-LABEL: @bf16_products
func.func @bf16_products(%a: tensor<2x16xbf16>, %b: tensor<16x4xbf16>, %c: tensor<4xf32>,
                         %x: tensor<1x3x8x8xbf16>, %w: tensor<5x3x3x3xbf16>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x5x6x6xf32>, tensor<2x4xbf16>) {
  // CHECK: tessel.matmul %{{.*}}, %{{.*}} : (tensor<2x16xbf16>, tensor<16x4xbf16>) -> tensor<2x4xf32>
  %0 = tessel.matmul %a, %b : (tensor<2x16xbf16>, tensor<16x4xbf16>) -> tensor<2x4xf32>
  // CHECK: tessel.gemm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x16xbf16>, tensor<16x4xbf16>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = tessel.gemm %a, %b, %c : (tensor<2x16xbf16>, tensor<16x4xbf16>, tensor<4xf32>) -> tensor<2x4xf32>
  // CHECK: tessel.conv %{{.*}}, %{{.*}} {{.*}} -> tensor<1x5x6x6xf32>
  %2 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xbf16>, tensor<5x3x3x3xbf16>) -> tensor<1x5x6x6xf32>
  // A bf16 model's own products stay bf16.
  // CHECK: tessel.matmul %{{.*}}, %{{.*}} : (tensor<2x16xbf16>, tensor<16x4xbf16>) -> tensor<2x4xbf16>
  %3 = tessel.matmul %a, %b : (tensor<2x16xbf16>, tensor<16x4xbf16>) -> tensor<2x4xbf16>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x5x6x6xf32>, tensor<2x4xbf16>
}

// CHECK-LABEL: @scan
// CHECK: tessel.scan reverse invariants(%arg0) states(%arg1) scanned(%arg2) : (tensor<8x8xf32>, tensor<1x8xf32>, tensor<5x1x8xf32>) -> tensor<5x1x1x8xf32> {
// CHECK: ^bb0(%{{.+}}: tensor<8x8xf32>, %{{.+}}: tensor<1x8xf32>, %{{.+}}: tensor<1x8xf32>):
// CHECK: tessel.yield %{{.+}} : tensor<1x8xf32>
func.func @scan(%r: tensor<8x8xf32>, %h0: tensor<1x8xf32>, %x: tensor<5x1x8xf32>) -> tensor<5x1x1x8xf32> {
  %0 = tessel.scan reverse invariants(%r) states(%h0) scanned(%x)
      : (tensor<8x8xf32>, tensor<1x8xf32>, tensor<5x1x8xf32>) -> tensor<5x1x1x8xf32> {
  ^bb0(%rt: tensor<8x8xf32>, %h: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    %p = tessel.matmul %h, %rt : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
    %s = tessel.add %xt, %p : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
    %n = tessel.tanh %s : tensor<1x8xf32>
    tessel.yield %n : tensor<1x8xf32>
  }
  return %0 : tensor<5x1x1x8xf32>
}

// CHECK-LABEL: @scan_to_length
// CHECK: tessel.scan invariants() states(%arg0) scanned(%arg1) length(%arg2) : (tensor<1x8xf32>, tensor<5x1x8xf32>, tensor<i64>) -> tensor<5x1x1x8xf32> {
func.func @scan_to_length(%h0: tensor<1x8xf32>, %x: tensor<5x1x8xf32>, %n: tensor<i64>) -> tensor<5x1x1x8xf32> {
  %0 = tessel.scan invariants() states(%h0) scanned(%x) length(%n)
      : (tensor<1x8xf32>, tensor<5x1x8xf32>, tensor<i64>) -> tensor<5x1x1x8xf32> {
  ^bb0(%h: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    %s = tessel.add %xt, %h : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
    tessel.yield %s : tensor<1x8xf32>
  }
  return %0 : tensor<5x1x1x8xf32>
}

// CHECK-LABEL: @loop
// CHECK: tessel.loop trip_count(%arg0) invariants(%arg1) states(%arg2) : (tensor<i64>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32> {
// CHECK: ^bb0(%{{.+}}: tensor<i64>, %{{.+}}: tensor<3xf32>, %{{.+}}: tensor<3xf32>):
func.func @loop(%m: tensor<i64>, %step: tensor<3xf32>, %acc0: tensor<3xf32>) -> tensor<1x3xf32> {
  %0 = tessel.loop trip_count(%m) invariants(%step) states(%acc0)
      : (tensor<i64>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32> {
  ^bb0(%i: tensor<i64>, %d: tensor<3xf32>, %acc: tensor<3xf32>):
    %next = tessel.add %acc, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    tessel.yield %next : tensor<3xf32>
  }
  return %0 : tensor<1x3xf32>
}

// RUN: tessel-opt %s --tessel-x86-lower-vectors --split-input-file | FileCheck %s

// A 16 x 16 block of f32 (an NCHW <-> NHWC transpose's) is transposed in
// registers: 32 unpacks, then 32 permutes of 128-bit lanes, no element
// moved on its own.
// CHECK-LABEL: func.func @square_f32
// CHECK-COUNT-64: vector.shuffle
// CHECK-NOT: vector.shuffle
// CHECK-NOT: vector.extract {{.*}} : f32 from
// CHECK: return
func.func @square_f32(%block: vector<16x16xf32>) -> vector<16x16xf32> {
  %t = vector.transpose %block, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
  return %t : vector<16x16xf32>
}

// -----

// Other shapes of 32-bit blocks are one flat shuffle.
// CHECK-LABEL: func.func @narrow_f32
// CHECK: vector.shuffle {{.*}} [0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 1, 4,
// CHECK-NOT: vector.extract {{.*}} : f32 from
// CHECK: return
func.func @narrow_f32(%block: vector<16x3xf32>) -> vector<3x16xf32> {
  %t = vector.transpose %block, [1, 0] : vector<16x3xf32> to vector<3x16xf32>
  return %t : vector<3x16xf32>
}

// -----

// Bytes stay element by element (as one shuffle, an INT8 image's 16 x 3
// blocks ran slower).
// CHECK-LABEL: func.func @narrow_i8
// CHECK-NOT: vector.shuffle
// CHECK-COUNT-48: vector.extract {{.*}} : i8 from
// CHECK: return
func.func @narrow_i8(%block: vector<16x3xi8>) -> vector<3x16xi8> {
  %t = vector.transpose %block, [1, 0] : vector<16x3xi8> to vector<3x16xi8>
  return %t : vector<3x16xi8>
}

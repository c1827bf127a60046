// RUN: tessel-opt %s --tessel-x86-rounded-quotients | FileCheck %s

// A quotient by a constant that is only rounded to an integer takes a
// multiply by the rounded reciprocal and two FMAs (the remainder, then the
// correction), keeping the estimate where the correction is NaN.
// CHECK-LABEL: func.func @quantize
// CHECK-DAG: %[[C:.*]] = arith.constant dense<2.000000e-02> : vector<16xf32>
// CHECK-DAG: %[[R:.*]] = arith.constant dense<5.000000e+01> : vector<16xf32>
// CHECK: %[[Q:.*]] = arith.mulf %[[X:.*]], %[[R]]
// CHECK: %[[N:.*]] = arith.negf %[[Q]]
// CHECK: %[[E:.*]] = math.fma %[[N]], %[[C]], %[[X]]
// CHECK: %[[Q2:.*]] = math.fma %[[E]], %[[R]], %[[Q]]
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[Q2]], %[[Q2]]
// CHECK: %[[S:.*]] = arith.select %[[NAN]], %[[Q]], %[[Q2]]
// CHECK: math.roundeven %[[S]]
// CHECK-NOT: arith.divf
func.func @quantize(%x: vector<16xf32>) -> vector<16xf32> {
  %c = arith.constant dense<0.02> : vector<16xf32>
  %q = arith.divf %x, %c : vector<16xf32>
  %r = math.roundeven %q : vector<16xf32>
  return %r : vector<16xf32>
}

// A quotient used as it is must be the division's, subnormal results
// included: it stays a division.
// CHECK-LABEL: func.func @unrounded
// CHECK: arith.divf
func.func @unrounded(%x: f32) -> (f32, f32) {
  %c = arith.constant 0.02 : f32
  %q = arith.divf %x, %c : f32
  %r = math.roundeven %q : f32
  return %q, %r : f32, f32
}

// So does one by a divisor that is not a constant, or whose reciprocal is
// not normal.
// CHECK-LABEL: func.func @variable
// CHECK-COUNT-2: arith.divf
func.func @variable(%x: f32, %c: f32) -> (f32, f32) {
  %q = arith.divf %x, %c : f32
  %r = math.roundeven %q : f32
  %huge = arith.constant 3.0e38 : f32
  %p = arith.divf %x, %huge : f32
  %s = math.roundeven %p : f32
  return %r, %s : f32, f32
}

// RUN: tessel-opt %s --tessel-number-constants | FileCheck %s

// Constant globals are renamed and reordered by first use, whatever names
// and order bufferization gave them; a mutable global is left alone.
// CHECK: memref.global "private" constant @__constant_0 : memref<2xf32> = dense<2.000000e+00>
// CHECK: memref.global "private" constant @__constant_1 : memref<2xf32> = dense<1.000000e+00>
// CHECK: memref.global "private" @state
// CHECK-LABEL: func.func @kernel
// CHECK: memref.get_global @__constant_0
// CHECK: memref.get_global @__constant_1
// CHECK: memref.get_global @__constant_0
memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<1.0>
memref.global "private" constant @__constant_2xf32_0 : memref<2xf32> = dense<2.0>
memref.global "private" @state : memref<2xf32> = uninitialized
func.func @kernel() -> (memref<2xf32>, memref<2xf32>, memref<2xf32>) {
  %0 = memref.get_global @__constant_2xf32_0 : memref<2xf32>
  %1 = memref.get_global @__constant_2xf32 : memref<2xf32>
  %2 = memref.get_global @__constant_2xf32_0 : memref<2xf32>
  return %0, %1, %2 : memref<2xf32>, memref<2xf32>, memref<2xf32>
}

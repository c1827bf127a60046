// RUN: tessel-opt %s --tessel-x86-scratch --split-input-file --verify-diagnostics | FileCheck %s

// A temporary whose size varies (a tile clipped at both ends of its padded
// input: max(0, min(...))) takes from scratch the most it may need, 8 rows
// of 41 i16 (656 bytes, 704 aligned), and its view keeps the dynamic size.
// CHECK-LABEL: func.func private @clipped
// CHECK-SAME: %[[SCRATCH:[^:]+]]: memref<704xi8>
// CHECK-SAME: tessel.scratch_bytes = 704 : i64
// CHECK-COUNT-2: affine.min
// CHECK-NEXT: %[[ROWS:[^ ]+]] = affine.max
// CHECK: memref.view %[[SCRATCH]][%{{.+}}][%[[ROWS]]] : memref<704xi8> to memref<?x41xi16>
// CHECK-NOT: memref.alloc
func.func private @clipped(%i: index, %out: memref<41xi16>) {
  %low = affine.max affine_map<(d0) -> (-d0 + 1, 0)>(%i)
  %high = affine.max affine_map<(d0) -> (0, d0 - 1)>(%i)
  %clipped = affine.min affine_map<(d0) -> (16, d0)>(%high)
  %unclamped = affine.min affine_map<(d0, d1) -> (-d0 + 16, -d1 + 8)>(%clipped, %low)
  %rows = affine.max affine_map<(d0) -> (0, d0)>(%unclamped)
  %tmp = memref.alloc(%rows) : memref<?x41xi16>
  %c0 = arith.constant 0 : index
  %v = memref.load %tmp[%c0, %c0] : memref<?x41xi16>
  memref.store %v, %out[%c0] : memref<41xi16>
  return
}

// -----

// One with no bound is refused.
func.func private @unbounded(%n: index) {
  // expected-error @+1 {{kernel temporaries must have a bounded shape}}
  %tmp = memref.alloc(%n) : memref<?xf32>
  return
}

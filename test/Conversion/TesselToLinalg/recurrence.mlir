// RUN: tessel-opt %s --convert-tessel-to-linalg | FileCheck %s

// A scan is one loop over its steps: step t's slice of the scanned input,
// the body lowered in place, the next state stored over the previous one
// and into result[t]. In reverse, t counts down from the last step.
// CHECK-LABEL: @scan
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<5x1x1x8xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C5:.+]] = arith.constant 5 : index
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[I:.+]] = %[[C0]] to %[[C5]] step %[[C1]] iter_args(%[[H:.+]] = %arg1, %[[ALL:.+]] = %[[EMPTY]])
// CHECK:   %[[C4:.+]] = arith.constant 4 : index
// CHECK:   %[[T:.+]] = arith.subi %[[C4]], %[[I]] : index
// CHECK:   %[[X:.+]] = tensor.extract_slice %arg2[%[[T]], 0, 0] [1, 1, 8] [1, 1, 1] : tensor<5x1x8xf32> to tensor<1x8xf32>
// CHECK:   linalg.generic {{.*}} ins(%[[H]], %arg0 : tensor<1x8xf32>, tensor<8x8xf32>)
// CHECK:     arith.addf
// CHECK:   linalg.generic
// CHECK:     arith.addf
// CHECK:   %[[NEXT:.+]] = linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   math.tanh
// CHECK:   %[[STORED:.+]] = tensor.insert_slice %[[NEXT]] into %[[ALL]][%[[T]], 0, 0, 0] [1, 1, 1, 8] [1, 1, 1, 1] : tensor<1x8xf32> into tensor<5x1x1x8xf32>
// CHECK:   %[[STATE:.+]] = bufferization.materialize_in_destination %[[NEXT]] in %[[H]]
// CHECK:   scf.yield %[[STATE]], %[[STORED]]
// CHECK: return %[[LOOP]]#1
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

// RUN: tessel-opt %s --convert-tessel-to-linalg | FileCheck %s

// A scan is one loop over its steps: step t's slice of the scanned input,
// the body lowered in place, the next state stored over the previous one
// and into result[t]. In reverse, t counts down from the last step.
// CHECK-LABEL: @scan
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<5x1x1x8xf32>
// CHECK-DAG: %[[C5:.+]] = arith.constant 5 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[LAST:.+]] = arith.subi %[[C5]], %[[C1]] : index
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[I:.+]] = %[[C0]] to %[[C5]] step %[[C1]] iter_args(%[[H:.+]] = %arg1, %[[ALL:.+]] = %[[EMPTY]])
// CHECK:   %[[T:.+]] = arith.subi %[[LAST]], %[[I]] : index
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

// With a length, the loop stops at it (clamped to the steps), and a second
// loop writes the final states into the rows of the steps it skipped.
// CHECK-LABEL: @scan_to_length
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<5x1x1x8xf32>
// CHECK: %[[C5:.+]] = arith.constant 5 : index
// CHECK: %[[GIVEN:.+]] = tensor.extract %arg3[] : tensor<i64>
// CHECK: %[[INDEX:.+]] = arith.index_cast %[[GIVEN]] : i64 to index
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[ABOVE:.+]] = arith.maxsi %[[INDEX]], %[[C0]] : index
// CHECK: %[[STEPS:.+]] = arith.minsi %[[ABOVE]], %[[C5]] : index
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[I:.+]] = %{{.+}} to %[[STEPS]] step %{{.+}} iter_args(%[[H:.+]] = %arg1, %[[ALL:.+]] = %[[EMPTY]])
// CHECK:   tensor.extract_slice %arg2[%[[I]], 0, 0] [1, 1, 8]
// CHECK:   math.tanh
// CHECK: %[[REST:.+]] = scf.for %[[J:.+]] = %[[STEPS]] to %[[C5]] step %{{.+}} iter_args(%[[ROWS:.+]] = %[[LOOP]]#1)
// CHECK:   %[[ROW:.+]] = tensor.insert_slice %[[LOOP]]#0 into %[[ROWS]][%[[J]], 0, 0, 0] [1, 1, 1, 8]
// CHECK:   scf.yield %[[ROW]]
// CHECK: return %[[REST]]
func.func @scan_to_length(%r: tensor<8x8xf32>, %h0: tensor<1x8xf32>, %x: tensor<5x1x8xf32>,
                          %n: tensor<i64>) -> tensor<5x1x1x8xf32> {
  %0 = tessel.scan invariants(%r) states(%h0) scanned(%x) length(%n)
      : (tensor<8x8xf32>, tensor<1x8xf32>, tensor<5x1x8xf32>, tensor<i64>) -> tensor<5x1x1x8xf32> {
  ^bb0(%rt: tensor<8x8xf32>, %h: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    %n2 = tessel.tanh %xt : tensor<1x8xf32>
    tessel.yield %n2 : tensor<1x8xf32>
  }
  return %0 : tensor<5x1x1x8xf32>
}

// In reverse, the rows of the steps skipped come first and hold the initial
// states; the steps then run from length - 1 down to 0.
// CHECK-LABEL: @reverse_scan_to_length
// CHECK: %[[STEPS:.+]] = arith.minsi
// CHECK: %[[INITIAL:.+]] = scf.for %[[J:.+]] = %[[STEPS]] to %{{.+}} step %{{.+}} iter_args(%[[ROWS:.+]] = %{{.+}})
// CHECK:   %[[H:.+]] = tensor.insert_slice %arg0 into %[[ROWS]][%[[J]], 0, 0, 0]
// CHECK:   %[[C:.+]] = tensor.insert_slice %arg1 into %[[H]][%[[J]], 1, 0, 0]
// CHECK:   scf.yield %[[C]]
// CHECK: %[[LAST:.+]] = arith.subi %[[STEPS]], %{{.+}} : index
// CHECK: %[[LOOP:.+]]:3 = scf.for %[[I:.+]] = %{{.+}} to %[[STEPS]] step %{{.+}} iter_args(%{{.+}} = %arg0, %{{.+}} = %arg1, %{{.+}} = %[[INITIAL]])
// CHECK:   %[[T:.+]] = arith.subi %[[LAST]], %[[I]] : index
// CHECK:   tensor.extract_slice %arg2[%[[T]], 0, 0]
// CHECK: return %[[LOOP]]#2
func.func @reverse_scan_to_length(%h0: tensor<1x8xf32>, %c0: tensor<1x8xf32>, %x: tensor<5x1x8xf32>,
                                  %n: tensor<i64>) -> tensor<5x2x1x8xf32> {
  %0 = tessel.scan reverse invariants() states(%h0, %c0) scanned(%x) length(%n)
      : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<5x1x8xf32>, tensor<i64>) -> tensor<5x2x1x8xf32> {
  ^bb0(%h: tensor<1x8xf32>, %c: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
    %t = tessel.tanh %xt : tensor<1x8xf32>
    %s = tessel.add %h, %c : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
    tessel.yield %t, %s : tensor<1x8xf32>, tensor<1x8xf32>
  }
  return %0 : tensor<5x2x1x8xf32>
}

// A loop is one scf.for up to its trip count, read from the tensor and
// kept at least 0, the iteration number a 0-d tensor; its final states
// are stacked after it.
// CHECK-LABEL: @loop
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[GIVEN:.+]] = tensor.extract %arg0[] : tensor<i64>
// CHECK: %[[INDEX:.+]] = arith.index_cast %[[GIVEN]] : i64 to index
// CHECK: %[[COUNT:.+]] = arith.maxsi %[[INDEX]], %{{.+}} : index
// CHECK: %[[LOOP:.+]] = scf.for %[[I:.+]] = %[[C0]] to %[[COUNT]] step %[[C1]] iter_args(%[[ACC:.+]] = %arg2)
// CHECK:   %[[NUMBER:.+]] = arith.index_cast %[[I]] : index to i64
// CHECK:   tensor.from_elements %[[NUMBER]] : tensor<i64>
// CHECK:     arith.sitofp
// CHECK:     arith.mulf
// CHECK:   %[[NEXT:.+]] = linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.addf
// CHECK:   %[[STORED:.+]] = bufferization.materialize_in_destination %[[NEXT]] in %[[ACC]]
// CHECK:   scf.yield %[[STORED]]
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<1x3xf32>
// CHECK: %[[STACKED:.+]] = tensor.insert_slice %[[LOOP]] into %[[EMPTY]][0, 0] [1, 3] [1, 1]
// CHECK: return %[[STACKED]]
func.func @loop(%m: tensor<i64>, %step: tensor<3xf32>, %acc0: tensor<3xf32>) -> tensor<1x3xf32> {
  %0 = tessel.loop trip_count(%m) invariants(%step) states(%acc0)
      : (tensor<i64>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32> {
  ^bb0(%i: tensor<i64>, %d: tensor<3xf32>, %acc: tensor<3xf32>):
    %f = tessel.cast %i : tensor<i64> -> tensor<f32>
    %s = tessel.mul %d, %f : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %next = tessel.add %acc, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    tessel.yield %next : tensor<3xf32>
  }
  return %0 : tensor<1x3xf32>
}

// A conditional loop is an scf.while carrying the states, the iteration
// number and the condition: it goes on while the number is below the trip
// count and the last iteration's condition held.
// CHECK-LABEL: @conditional_loop
// CHECK: %[[COUNT:.+]] = arith.maxsi
// CHECK: %[[TRUE:.+]] = arith.constant true
// CHECK: %[[LOOP:.+]]:3 = scf.while (%[[ACC:.+]] = %arg1, %[[I:.+]] = %{{.+}}, %[[GOING:.+]] = %[[TRUE]]) : (tensor<3xf32>, index, i1) -> (tensor<3xf32>, index, i1) {
// CHECK:   %[[WITHIN:.+]] = arith.cmpi slt, %[[I]], %[[COUNT]] : index
// CHECK:   %[[GO:.+]] = arith.andi %[[WITHIN]], %[[GOING]] : i1
// CHECK:   scf.condition(%[[GO]]) %[[ACC]], %[[I]], %[[GOING]]
// CHECK: } do {
// CHECK: ^bb0(%[[ACC2:.+]]: tensor<3xf32>, %[[I2:.+]]: index, %{{.+}}: i1):
// CHECK:   %[[NEXT:.+]] = linalg.generic
// CHECK:     arith.cmpf olt
// CHECK:   %[[COND:.+]] = tensor.collapse_shape
// CHECK:   %[[STORED:.+]] = bufferization.materialize_in_destination %[[NEXT]] in %[[ACC2]]
// CHECK:   %[[I3:.+]] = arith.addi %[[I2]], %{{.+}} : index
// CHECK:   %[[FLAG:.+]] = tensor.extract %[[COND]][] : tensor<i1>
// CHECK:   scf.yield %[[STORED]], %[[I3]], %[[FLAG]]
// CHECK: tensor.insert_slice %[[LOOP]]#0
func.func @conditional_loop(%m: tensor<i64>, %acc0: tensor<3xf32>, %limit: tensor<3xf32>) -> tensor<1x3xf32> {
  %0 = tessel.loop conditional trip_count(%m) invariants(%limit) states(%acc0)
      : (tensor<i64>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32> {
  ^bb0(%i: tensor<i64>, %l: tensor<3xf32>, %acc: tensor<3xf32>):
    %next = tessel.add %acc, %acc : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %less = tessel.compare "lt", %next, %l : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %first = tessel.slice %less {starts = array<i64: 0>, steps = array<i64: 1>} : tensor<3xi1> -> tensor<1xi1>
    %c = tessel.reshape %first : tensor<1xi1> -> tensor<i1>
    tessel.yield %c, %next : tensor<i1>, tensor<3xf32>
  }
  return %0 : tensor<1x3xf32>
}

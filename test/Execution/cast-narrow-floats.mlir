// Cast to and from 8- and 4-bit floats and 4- and 2-bit integers on CPU
// (lib/Conversion/ONNXToLinalg/NarrowFloat.cpp): round to nearest even,
// ONNX's overflow rules with and without `saturate`, signs the formats lack,
// float8e8m0's round modes, and narrow integers (0 outside their range).
// vram-run prints each narrow value as the number it holds.
// RUN: vram-run %s --print | FileCheck %s

func.func @main() -> (tensor<9xf8E4M3FN>, tensor<3xf8E4M3FN>, tensor<4xf8E5M2>,
                      tensor<3xf8E5M2>, tensor<3xf8E4M3FNUZ>, tensor<5xf4E2M1FN>,
                      tensor<3xf8E8M0FNU>, tensor<3xf8E8M0FNU>, tensor<3xf8E8M0FNU>,
                      tensor<4xi4>, tensor<3xui2>, tensor<3xf32>, tensor<4xf32>) {
  // e4m3fn: 1.0625 lies halfway between 1 (mantissa 000) and 1.125 (001),
  // 1.1875 between 1.125 (001) and 1.25 (010): the even mantissa wins.
  // 2^-10 is half the smallest subnormal 2^-9 (to 0, the even code); 0.0015
  // is nearer 2^-9 = 0.001953125. 464 is halfway between the largest, 448,
  // and the 480 beyond it: 448 (even). 1e6 saturates to 448.
  %a = onnx.Constant() {value = dense<[1.0, 1.0625, 1.1875, 0.0009765625, 0.0015, 464.0, 1.0e6, -0.0, 0x7FC00000]> : tensor<9xf32>} : () -> tensor<9xf32>
  %e4m3 = onnx.Cast(%a) {to = 17 : i64} : (tensor<9xf32>) -> tensor<9xf8E4M3FN>
  // Without saturate what overflows is NaN of its sign (e4m3fn has no
  // infinity); 464 still rounds to 448, 465 does not.
  %b = onnx.Constant() {value = dense<[464.0, 465.0, -1.0e6]> : tensor<3xf32>} : () -> tensor<3xf32>
  %e4m3Wide = onnx.Cast(%b) {to = 17 : i64, saturate = 0 : i64} : (tensor<3xf32>) -> tensor<3xf8E4M3FN>
  // e5m2's largest is 57344 (code 0x7B); 61440 is halfway to 65536 (0x7C,
  // even): it overflows. Saturating: 57344, and infinity too.
  %c = onnx.Constant() {value = dense<[61440.0, 0x7F800000, 0xFF800000, 0.75]> : tensor<4xf32>} : () -> tensor<4xf32>
  %e5m2 = onnx.Cast(%c) {to = 19 : i64} : (tensor<4xf32>) -> tensor<4xf8E5M2>
  %d = onnx.Constant() {value = dense<[61440.0, 1.0e6, -1.0e6]> : tensor<3xf32>} : () -> tensor<3xf32>
  %e5m2Wide = onnx.Cast(%d) {to = 19 : i64, saturate = 0 : i64} : (tensor<3xf32>) -> tensor<3xf8E5M2>
  // e4m3fnuz: no negative zero (-0 and a negative value rounding to 0 give
  // +0), largest 240.
  %e = onnx.Constant() {value = dense<[-0.0, -0.0001, 1000.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %fnuz = onnx.Cast(%e) {to = 18 : i64} : (tensor<3xf32>) -> tensor<3xf8E4M3FNUZ>
  // e2m1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6: 0.25 ties to 0, 0.75 to 1, 5 to
  // 4 (even codes), 100 saturates to 6, NaN becomes -0 (ONNX's reference).
  %f = onnx.Constant() {value = dense<[0.25, 0.75, 5.0, 100.0, 0x7FC00000]> : tensor<5xf32>} : () -> tensor<5xf32>
  %e2m1 = onnx.Cast(%f) {to = 23 : i64} : (tensor<5xf32>) -> tensor<5xf4E2M1FN>
  // e8m0 holds the powers of two: round_mode up (the default), down,
  // nearest.
  %g = onnx.Constant() {value = dense<[0.3, 2.9, 3.1]> : tensor<3xf32>} : () -> tensor<3xf32>
  %up = onnx.Cast(%g) {to = 24 : i64} : (tensor<3xf32>) -> tensor<3xf8E8M0FNU>
  %down = onnx.Cast(%g) {to = 24 : i64, round_mode = "down"} : (tensor<3xf32>) -> tensor<3xf8E8M0FNU>
  %nearest = onnx.Cast(%g) {to = 24 : i64, round_mode = "nearest"} : (tensor<3xf32>) -> tensor<3xf8E8M0FNU>
  // Narrow integers truncate toward zero; out of range is 0.
  %h = onnx.Constant() {value = dense<[7.9, 8.0, -8.5, -9.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %i4 = onnx.Cast(%h) {to = 22 : i64} : (tensor<4xf32>) -> tensor<4xi4>
  %k = onnx.Constant() {value = dense<[3.7, -1.0, 2.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %u2 = onnx.Cast(%k) {to = 25 : i64} : (tensor<3xf32>) -> tensor<3xui2>
  // And back to f32: e4m3fn codes 0x7E (448) and 0x7F / 0xFF (NaN); the
  // i4 values sign-extended.
  %back = onnx.Cast(%e4m3Wide) {to = 1 : i64} : (tensor<3xf8E4M3FN>) -> tensor<3xf32>
  %i4Back = onnx.Cast(%i4) {to = 1 : i64} : (tensor<4xi4>) -> tensor<4xf32>
  return %e4m3, %e4m3Wide, %e5m2, %e5m2Wide, %fnuz, %e2m1, %up, %down, %nearest, %i4, %u2, %back, %i4Back
      : tensor<9xf8E4M3FN>, tensor<3xf8E4M3FN>, tensor<4xf8E5M2>, tensor<3xf8E5M2>,
        tensor<3xf8E4M3FNUZ>, tensor<5xf4E2M1FN>, tensor<3xf8E8M0FNU>,
        tensor<3xf8E8M0FNU>, tensor<3xf8E8M0FNU>, tensor<4xi4>, tensor<3xui2>,
        tensor<3xf32>, tensor<4xf32>
}

// CHECK:      output 0 'result0': tensor<9xf8E4M3FN>
// CHECK-NEXT: [1, 1, 1.25, 0, 0.001953125, 448, 448, -0, nan]
// CHECK:      output 1 'result1': tensor<3xf8E4M3FN>
// CHECK-NEXT: [448, nan, -nan]
// CHECK:      output 2 'result2': tensor<4xf8E5M2>
// CHECK-NEXT: [57344, 57344, -57344, 0.75]
// CHECK:      output 3 'result3': tensor<3xf8E5M2>
// CHECK-NEXT: [inf, inf, -inf]
// CHECK:      output 4 'result4': tensor<3xf8E4M3FNUZ>
// CHECK-NEXT: [0, 0, 240]
// CHECK:      output 5 'result5': tensor<5xf4E2M1FN>
// CHECK-NEXT: [0, 1, 4, 6, -0]
// CHECK:      output 6 'result6': tensor<3xf8E8M0FNU>
// CHECK-NEXT: [0.5, 4, 4]
// CHECK:      output 7 'result7': tensor<3xf8E8M0FNU>
// CHECK-NEXT: [0.25, 2, 2]
// CHECK:      output 8 'result8': tensor<3xf8E8M0FNU>
// CHECK-NEXT: [0.25, 2, 4]
// CHECK:      output 9 'result9': tensor<4xi4>
// CHECK-NEXT: [7, 0, -8, 0]
// CHECK:      output 10 'result10': tensor<3xui2>
// CHECK-NEXT: [3, 0, 2]
// CHECK:      output 11 'result11': tensor<3xf32>
// CHECK-NEXT: [448, nan, -nan]
// CHECK:      output 12 'result12': tensor<4xf32>
// CHECK-NEXT: [7, 0, -8, 0]

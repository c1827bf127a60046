//===- HostBf16Throughput.h - VDPBF16PS or FMAs, as measured ----*- C++ -*-===//
//
// A CPU with AVX512-BF16 is not always faster with it: on the Sapphire
// Rapids class Xeons Tessel's machines have, VDPBF16PS sustains under half
// the bf16 pairs per second of two FMAs of the widened halves, while Zen 4
// and Zen 5 are said to do the opposite. Neither the feature bits nor
// LLVM's scheduling models tell (they rate VDPBF16PS slower on every CPU),
// so when the compiler generates code for the machine it runs on, it times
// both. Both compute the same sums (HostBf16Throughput changes speed, not
// results; see DotProduct.h).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_HOSTBF16THROUGHPUT_H
#define TESSEL_TARGETS_X86_HOSTBF16THROUGHPUT_H

namespace tessel::x86 {

/// Whether this CPU has AVX512-BF16 and multiplies bf16 pairs faster with
/// 512-bit VDPBF16PS than with two 512-bit FMAs: timed once per process
/// (a few milliseconds).
bool hostPrefersDpbf16ps();

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_HOSTBF16THROUGHPUT_H

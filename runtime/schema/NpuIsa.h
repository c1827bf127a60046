//===- NpuIsa.h - The NPU's instructions and their encoding -----*- C++ -*-===//
//
// docs/npu/isa.md defines the Tessel NPU's instructions; this header is that
// definition's encoding, shared by the compiler, which writes command
// streams, and the runtime's simulator, which reads them. Each instruction
// kind lists its fields once (its `visit` member: bit position and member),
// and that one list serves encoding, decoding and the check that reserved
// bits are zero, so the three cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SCHEMA_NPUISA_H
#define TESSEL_RUNTIME_SCHEMA_NPUISA_H

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <variant>

namespace tessel::schema::npu {

inline constexpr uint32_t kIsaVersion = 1;
inline constexpr size_t kInstructionWords = 4;
using Words = std::array<uint64_t, kInstructionWords>;

enum class Opcode : uint8_t { Load = 1, Store = 2, Gemm = 3, Post = 4, Add = 5, Pool = 6, DwConv = 7 };

/// The engine whose queue runs an opcode.
enum class Queue : uint8_t { Load = 0, Execute = 1, Store = 2 };

inline Queue queueOf(Opcode opcode) {
  switch (opcode) {
  case Opcode::Load:
    return Queue::Load;
  case Opcode::Store:
    return Queue::Store;
  default:
    return Queue::Execute;
  }
}

/// The opcode's name in docs/npu/isa.md.
inline const char *opcodeName(Opcode opcode) {
  switch (opcode) {
  case Opcode::Load:
    return "LOAD";
  case Opcode::Store:
    return "STORE";
  case Opcode::Gemm:
    return "GEMM";
  case Opcode::Post:
    return "POST";
  case Opcode::Add:
    return "ADD";
  case Opcode::Pool:
    return "POOL";
  case Opcode::DwConv:
    return "DWCONV";
  }
  return "?";
}

/// `width` bits from bit `low` of word `word`; `name` is the field's name
/// in docs/npu/isa.md, which the `npu` dialect's ops use as attribute
/// names.
struct Field {
  uint8_t word, low, width;
  const char *name;
};

/// Local memories a DMA reaches.
enum class Memory : uint8_t { Scratchpad = 0, Parameters = 1, Lut = 2 };

struct Dependencies {
  bool popPrevious = false, popNext = false, pushPrevious = false, pushNext = false;

  template <typename Visit> void visit(Visit &&visit) {
    visit(Field{0, 8, 1, "pop_prev"}, popPrevious);
    visit(Field{0, 9, 1, "pop_next"}, popNext);
    visit(Field{0, 10, 1, "push_prev"}, pushPrevious);
    visit(Field{0, 11, 1, "push_next"}, pushNext);
  }
};

/// LOAD (DRAM to local memory) and STORE (scratchpad to DRAM).
struct Dma {
  Memory memory = Memory::Scratchpad;
  uint8_t binding = 0;
  uint64_t dram = 0;
  uint32_t local = 0, rows = 1, rowBytes = 1;
  uint32_t dramStride = 0, localStride = 0;

  template <typename Visit> void visit(Visit &&visit) {
    visit(Field{0, 12, 2, "memory"}, memory);
    visit(Field{0, 16, 8, "binding"}, binding);
    visit(Field{0, 24, 40, "dram"}, dram);
    visit(Field{1, 0, 24, "local"}, local);
    visit(Field{1, 24, 16, "rows"}, rows);
    visit(Field{1, 40, 24, "row_bytes"}, rowBytes);
    visit(Field{2, 0, 32, "dram_stride"}, dramStride);
    visit(Field{2, 32, 24, "local_stride"}, localStride);
  }
};

/// A LOAD's or STORE's body: `rows` rows of `rowBytes` between DRAM binding
/// `binding` at `dram` and local memory `memory` at `local`.
inline Dma dma(uint8_t binding, uint64_t dram, uint32_t local, uint32_t rows, uint32_t rowBytes,
               uint32_t dramStride = 0, uint32_t localStride = 0,
               Memory memory = Memory::Scratchpad) {
  Dma result;
  result.memory = memory;
  result.binding = binding;
  result.dram = dram;
  result.local = local;
  result.rows = rows;
  result.rowBytes = rowBytes;
  result.dramStride = dramStride;
  result.localStride = localStride;
  return result;
}

/// A convolution window over a tile: kernel, strides, dilations, padding.
struct Window {
  uint8_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, padTop = 0, padLeft = 0;
};

struct Gemm {
  bool accumulate = false, inputUnsigned = false, weightUnsigned = false, im2col = false;
  uint32_t weights = 0, K = 1, N = 1;
  uint32_t input = 0, T = 1, acc = 0;
  uint32_t rowStride = 0; // dense
  uint32_t k0 = 0, Hi = 1, Wi = 1, Ci = 1, Wo = 1;
  uint8_t padValue = 0;
  Window window;

  template <typename Visit> void visit(Visit &&visit) {
    visit(Field{0, 12, 1, "accumulate"}, accumulate);
    visit(Field{0, 13, 1, "input_unsigned"}, inputUnsigned);
    visit(Field{0, 14, 1, "weight_unsigned"}, weightUnsigned);
    visit(Field{0, 15, 1, "im2col"}, im2col);
    visit(Field{0, 16, 24, "weights"}, weights);
    visit(Field{0, 40, 15, "K"}, K);
    visit(Field{0, 55, 9, "N"}, N);
    visit(Field{1, 0, 24, "input"}, input);
    visit(Field{1, 24, 20, "T"}, T);
    visit(Field{1, 44, 20, "acc"}, acc);
    if (!im2col) {
      visit(Field{2, 0, 24, "row_stride"}, rowStride);
      return;
    }
    visit(Field{2, 0, 16, "k0"}, k0);
    visit(Field{2, 16, 12, "Hi"}, Hi);
    visit(Field{2, 28, 12, "Wi"}, Wi);
    visit(Field{2, 40, 12, "Ci"}, Ci);
    visit(Field{2, 52, 8, "pad_value"}, padValue);
    visit(Field{3, 0, 12, "Wo"}, Wo);
    visit(Field{3, 12, 4, "kh"}, window.kh);
    visit(Field{3, 16, 4, "kw"}, window.kw);
    visit(Field{3, 20, 4, "sh"}, window.sh);
    visit(Field{3, 24, 4, "sw"}, window.sw);
    visit(Field{3, 28, 4, "dh"}, window.dh);
    visit(Field{3, 32, 4, "dw"}, window.dw);
    visit(Field{3, 36, 4, "pad_top"}, window.padTop);
    visit(Field{3, 40, 4, "pad_left"}, window.padLeft);
  }
};

struct Post {
  bool outputUnsigned = false, lut = false;
  uint32_t output = 0, acc = 0, T = 1, N = 1, outputStride = 0, param = 0;
  int16_t zeroPoint = 0, clampMin = -128, clampMax = 127;

  template <typename Visit> void visit(Visit &&visit) {
    visit(Field{0, 12, 1, "output_unsigned"}, outputUnsigned);
    visit(Field{0, 13, 1, "lut"}, lut);
    visit(Field{0, 16, 24, "output"}, output);
    visit(Field{0, 40, 20, "acc"}, acc);
    visit(Field{1, 0, 20, "T"}, T);
    visit(Field{1, 20, 12, "N"}, N);
    visit(Field{1, 32, 24, "output_stride"}, outputStride);
    visit(Field{2, 0, 16, "param"}, param);
    visit(Field{2, 16, 16, "zero_point"}, zeroPoint);
    visit(Field{2, 32, 16, "clamp_min"}, clampMin);
    visit(Field{2, 48, 16, "clamp_max"}, clampMax);
  }
};

struct Add {
  bool aUnsigned = false, bUnsigned = false, outputUnsigned = false;
  uint32_t a = 0, b = 0, output = 0, count = 1;
  // Raw bytes, read in their tensor's signedness.
  uint8_t aZero = 0, bZero = 0, outputZero = 0, clampMin = 0x80, clampMax = 0x7f;
  float aScale = 1.0f, bScale = 1.0f, outputScale = 1.0f;

  template <typename Visit> void visit(Visit &&visit) {
    visit(Field{0, 12, 1, "a_unsigned"}, aUnsigned);
    visit(Field{0, 13, 1, "b_unsigned"}, bUnsigned);
    visit(Field{0, 14, 1, "output_unsigned"}, outputUnsigned);
    visit(Field{0, 16, 24, "a"}, a);
    visit(Field{0, 40, 24, "b"}, b);
    visit(Field{1, 0, 24, "output"}, output);
    visit(Field{1, 24, 24, "count"}, count);
    visit(Field{1, 48, 8, "a_zero"}, aZero);
    visit(Field{1, 56, 8, "b_zero"}, bZero);
    visit(Field{2, 0, 8, "output_zero"}, outputZero);
    visit(Field{2, 8, 8, "clamp_min"}, clampMin);
    visit(Field{2, 16, 8, "clamp_max"}, clampMax);
    visit(Field{2, 32, 32, "a_scale"}, aScale);
    visit(Field{3, 0, 32, "b_scale"}, bScale);
    visit(Field{3, 32, 32, "output_scale"}, outputScale);
  }
};

struct Pool {
  bool isUnsigned = false;
  uint32_t input = 0, output = 0, Hi = 1, Wi = 1, C = 1, Ho = 1, Wo = 1;
  Window window;

  template <typename Visit> void visit(Visit &&visit) {
    visit(Field{0, 12, 1, "unsigned"}, isUnsigned);
    visit(Field{0, 16, 24, "input"}, input);
    visit(Field{0, 40, 24, "output"}, output);
    visit(Field{1, 0, 12, "Hi"}, Hi);
    visit(Field{1, 12, 12, "Wi"}, Wi);
    visit(Field{1, 24, 12, "C"}, C);
    visit(Field{1, 36, 12, "Ho"}, Ho);
    visit(Field{1, 48, 12, "Wo"}, Wo);
    visit(Field{2, 0, 4, "kh"}, window.kh);
    visit(Field{2, 4, 4, "kw"}, window.kw);
    visit(Field{2, 8, 4, "sh"}, window.sh);
    visit(Field{2, 12, 4, "sw"}, window.sw);
    visit(Field{2, 16, 4, "dh"}, window.dh);
    visit(Field{2, 20, 4, "dw"}, window.dw);
    visit(Field{2, 24, 4, "pad_top"}, window.padTop);
    visit(Field{2, 28, 4, "pad_left"}, window.padLeft);
  }
};

struct DwConv {
  bool accumulate = false, inputUnsigned = false, weightUnsigned = false;
  uint32_t input = 0, weights = 0, acc = 0, Hi = 1, Wi = 1, C = 1, Ho = 1, Wo = 1;
  uint8_t padValue = 0;
  Window window;

  template <typename Visit> void visit(Visit &&visit) {
    visit(Field{0, 12, 1, "accumulate"}, accumulate);
    visit(Field{0, 13, 1, "input_unsigned"}, inputUnsigned);
    visit(Field{0, 14, 1, "weight_unsigned"}, weightUnsigned);
    visit(Field{0, 16, 24, "input"}, input);
    visit(Field{0, 40, 24, "weights"}, weights);
    visit(Field{1, 0, 20, "acc"}, acc);
    visit(Field{1, 20, 12, "Hi"}, Hi);
    visit(Field{1, 32, 12, "Wi"}, Wi);
    visit(Field{1, 44, 12, "C"}, C);
    visit(Field{1, 56, 8, "pad_value"}, padValue);
    visit(Field{2, 0, 12, "Ho"}, Ho);
    visit(Field{2, 12, 12, "Wo"}, Wo);
    visit(Field{2, 24, 4, "kh"}, window.kh);
    visit(Field{2, 28, 4, "kw"}, window.kw);
    visit(Field{2, 32, 4, "sh"}, window.sh);
    visit(Field{2, 36, 4, "sw"}, window.sw);
    visit(Field{2, 40, 4, "dh"}, window.dh);
    visit(Field{2, 44, 4, "dw"}, window.dw);
    visit(Field{2, 48, 4, "pad_top"}, window.padTop);
    visit(Field{2, 52, 4, "pad_left"}, window.padLeft);
  }
};

using Body = std::variant<Dma, Gemm, Post, Add, Pool, DwConv>;

struct Instruction {
  Opcode opcode = Opcode::Load;
  Dependencies dependencies;
  Body body;
};

namespace detail {

inline uint64_t fieldMask(const Field &field) {
  return field.width == 64 ? ~uint64_t(0) : ((uint64_t(1) << field.width) - 1) << field.low;
}

/// A member's bits in a field: unsigned values as they are, signed ones in
/// two's complement, floats as their IEEE bits.
template <typename T> uint64_t bitsOf(T value) {
  if constexpr (std::is_same_v<T, float>) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
  } else if constexpr (std::is_enum_v<T> || std::is_same_v<T, bool>) {
    return static_cast<uint64_t>(value);
  } else {
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(value));
  }
}

template <typename T> T valueOf(uint64_t bits, const Field &field) {
  if constexpr (std::is_same_v<T, float>) {
    uint32_t narrow = static_cast<uint32_t>(bits);
    float value;
    std::memcpy(&value, &narrow, sizeof(value));
    return value;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(bits);
  } else if constexpr (std::is_same_v<T, bool>) {
    return bits != 0;
  } else if constexpr (std::is_signed_v<T>) {
    uint64_t sign = uint64_t(1) << (field.width - 1);
    return static_cast<T>(static_cast<int64_t>((bits ^ sign) - sign));
  } else {
    return static_cast<T>(bits);
  }
}

/// Whether `bits` (of a member of type T) fit `field`.
template <typename T> bool fits(uint64_t bits, const Field &field) {
  if (field.width >= 64)
    return true;
  if constexpr (std::is_signed_v<T> && !std::is_same_v<T, float>) {
    int64_t value = static_cast<int64_t>(static_cast<std::make_signed_t<T>>(bits));
    int64_t limit = int64_t(1) << (field.width - 1);
    return value >= -limit && value < limit;
  } else {
    return (bits >> field.width) == 0;
  }
}

} // namespace detail

/// The 32 bytes of `instruction`; false, saying which field, when a value
/// does not fit its field.
inline bool encode(Instruction instruction, Words &words, std::string *error = nullptr) {
  words = {};
  bool ok = true;
  auto put = [&](const Field &field, auto &member) {
    using T = std::decay_t<decltype(member)>;
    uint64_t bits = detail::bitsOf(member);
    if (!detail::fits<T>(bits, field)) {
      if (ok && error)
        *error = "value " + std::to_string(bits) + " does not fit the " +
                 std::to_string(field.width) + "-bit field at word " +
                 std::to_string(field.word) + " bit " + std::to_string(field.low);
      ok = false;
      return;
    }
    words[field.word] |= (bits << field.low) & detail::fieldMask(field);
  };
  uint8_t opcode = static_cast<uint8_t>(instruction.opcode);
  put(Field{0, 0, 8, "opcode"}, opcode);
  instruction.dependencies.visit(put);
  std::visit([&](auto &body) { body.visit(put); }, instruction.body);
  return ok;
}

/// Decodes the instruction at `words`; false, saying why, for an unknown
/// opcode or a reserved bit that is set. Field values are not checked
/// against any configuration here (the simulator's verifier does that).
inline bool decode(const uint64_t *words, Instruction &instruction, std::string &error) {
  uint8_t opcode = static_cast<uint8_t>(words[0] & 0xff);
  if (opcode == uint8_t(Opcode::Load) || opcode == uint8_t(Opcode::Store))
    instruction.body = Dma();
  else if (opcode == uint8_t(Opcode::Gemm))
    instruction.body = Gemm();
  else if (opcode == uint8_t(Opcode::Post))
    instruction.body = Post();
  else if (opcode == uint8_t(Opcode::Add))
    instruction.body = Add();
  else if (opcode == uint8_t(Opcode::Pool))
    instruction.body = Pool();
  else if (opcode == uint8_t(Opcode::DwConv))
    instruction.body = DwConv();
  else {
    error = "unknown opcode " + std::to_string(opcode);
    return false;
  }
  instruction.opcode = static_cast<Opcode>(opcode);
  Words used = {};
  used[0] = 0xff;
  auto get = [&](const Field &field, auto &member) {
    using T = std::decay_t<decltype(member)>;
    uint64_t bits = (words[field.word] & detail::fieldMask(field)) >> field.low;
    member = detail::valueOf<T>(bits, field);
    used[field.word] |= detail::fieldMask(field);
  };
  instruction.dependencies.visit(get);
  // GEMM's im2col bit decides which fields follow: read it first.
  if (auto *gemm = std::get_if<Gemm>(&instruction.body))
    gemm->im2col = (words[0] >> 15) & 1;
  std::visit([&](auto &body) { body.visit(get); }, instruction.body);
  for (size_t word = 0; word < kInstructionWords; ++word)
    if (uint64_t reserved = words[word] & ~used[word]) {
      int bit = __builtin_ctzll(reserved);
      error = "reserved bit " + std::to_string(bit) + " of word " + std::to_string(word) +
              " is set";
      return false;
    }
  return true;
}

/// A channel record's multiplier and shift (docs/npu/isa.md section 3.3).
struct Requantization {
  int32_t multiplier = 0, shift = 0;
};

/// The record fields with which POST computes acc * scale exactly:
/// scale = multiplier * 2^-shift, the multiplier the 24-bit significand of
/// the positive binary32 `scale`. False when the scale is not a positive
/// finite number or its exponent puts the shift outside [0, 62].
inline bool requantizationOf(float scale, Requantization &record) {
  if (!(scale > 0) || !std::isfinite(scale))
    return false;
  int exponent;
  float fraction = std::frexp(scale, &exponent); // scale = fraction * 2^exponent
  int shift = 24 - exponent;
  if (shift < 0 || shift > 62)
    return false;
  record.multiplier = static_cast<int32_t>(std::ldexp(fraction, 24)); // exact
  record.shift = shift;
  return true;
}

} // namespace tessel::schema::npu

#endif // TESSEL_RUNTIME_SCHEMA_NPUISA_H

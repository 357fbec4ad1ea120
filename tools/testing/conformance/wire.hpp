// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The conformance suite's own MetaRoCE codec, written from Documentation/metaroce/headers.rst,
// ack.rst and connection.rst (never from drivers/metaroce/core/).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conf {

using Bytes = std::vector<uint8_t>;

// Sizes and limits of constants.rst.
inline constexpr uint8_t kVersion = 1;
inline constexpr uint16_t kUdpPort = 64791;
inline constexpr size_t kBthLen = 32, kMsghLen = 8, kRethLen = 16, kAtomicEthLen = 32,
                        kAtomicAhLen = 8, kImmhLen = 4, kIethLen = 4, kUdhLen = 8, kAckhLen = 48,
                        kMsgAckLen = 8, kNakhLen = 8, kConnhLen = 40, kCloseLen = 8;
inline constexpr unsigned kMaxPaths = 16, kSackBits = 256, kMaxMsgAcks = 16;
inline constexpr uint32_t kPsnJumpMax = 1u << 24;
inline constexpr uint64_t kMaxMsgLen = 1ull << 31;

enum Opcode : uint8_t {
  kSend = 0x01,
  kWrite = 0x02,
  kReadReq = 0x03,
  kReadResp = 0x04,
  kAtomicCas = 0x05,
  kAtomicFadd = 0x06,
  kAtomicResp = 0x07,
  kUdSend = 0x08,
  kAck = 0x10,
  kNak = 0x11,
  kProbe = 0x12,
  kConnectReq = 0x20,
  kConnectResp = 0x21,
  kClose = 0x22,
  kCloseAck = 0x23,
};

enum Flag : uint16_t {
  kAckReq = 1 << 0,
  kLast = 1 << 1,
  kRetx = 1 << 2,
  kSolicited = 1 << 3,
  kImm = 1 << 4,
  kInv = 1 << 5,
  kMsgProbe = 1 << 6,  // [MR-REL-11] a message probe
};

enum NakCode : uint8_t {
  kNakRnr = 1,
  kNakInvalidRequest = 2,
  kNakBadRkey = 3,
  kNakBounds = 4,
  kNakAccess = 5,
  kNakRemoteOpError = 6,
};

struct Bth {
  uint8_t version = kVersion;
  uint8_t opcode = 0;
  uint16_t flags = 0;
  uint32_t conn_id = 0;
  uint16_t path_id = 0;
  uint16_t payload_len = 0;
  uint32_t psn = 0;
  uint32_t stream = 0;
  uint32_t msn = 0;
  uint32_t offset = 0;
  uint32_t timestamp = 0;
};

struct Msgh {
  uint32_t msg_len = 0;
  uint32_t rsn = 0;
};

struct Reth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
};

struct AtomicEth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
};

struct MsgAck {
  uint32_t stream = 0;
  uint32_t msn_cum = 0;
};

struct Ackh {
  uint32_t cum_psn = 0;
  uint32_t ts_echo = 0;
  uint16_t rate_hint = 0;
  uint16_t ce_count = 0;
  uint16_t pkt_count = 0;
  std::array<uint8_t, 32> sack{};
  std::vector<MsgAck> msg_acks;

  // [MR-ACK-2]: bit i reports PSN cum_psn + 1 + i, bit i is 1 << (i % 8) of byte i / 8.
  bool sack_bit(unsigned i) const { return sack[i / 8] & (1u << (i % 8)); }
  void set_sack_bit(unsigned i) { sack[i / 8] |= uint8_t(1u << (i % 8)); }
  // Whether this ACK reports PSN psn as received (cumulatively or by SACK bit).
  bool reports(uint32_t psn) const;
};

struct Nakh {
  uint8_t code = 0;
  uint32_t info = 0;
};

struct Connh {
  uint8_t ver_min = kVersion;
  uint8_t ver_max = kVersion;
  uint8_t max_paths = 8;
  uint32_t src_conn_id = 0;
  uint64_t incarnation = 0;
  uint16_t pmtu = 1024;
  uint32_t link_mbps = 0;
  uint64_t peer_incarnation = 0;
  uint32_t initial_psn = 0;
};

// One packet: the base header, the extension headers its opcode and flags call for, the
// payload.  Encoding derives nothing: payload_len and the rest are written as given, so
// the tests can craft invalid packets.
struct Packet {
  Bth bth;
  Msgh msgh;
  Reth reth;
  AtomicEth aeth;
  uint64_t atomic_orig = 0;
  uint32_t imm = 0;
  uint32_t inv_rkey = 0;
  uint32_t ud_qkey = 0, ud_src_qpn = 0;
  Ackh ack;
  Nakh nak;
  Connh conn;
  uint32_t close_reason = 0;
  Bytes payload;
  // Set by parse(): a reserved field or reserved UDH/stream bits were not zero
  // ([MR-GEN-4]: senders MUST send zero; receivers ignore them, so parsing succeeds).
  bool reserved_nonzero = false;

  Bytes encode() const;
  std::string describe() const;
};

// Whether the opcode consumes a path PSN ([MR-WIRE-3]).
bool is_sequenced(uint8_t opcode);
bool is_known_opcode(uint8_t opcode);

// Parses a datagram (the UDP payload) with every check of [MR-WIRE-12]; nullopt when the
// bytes are not a valid packet, with the reason in *why.
std::optional<Packet> parse(const uint8_t *p, size_t len, std::string *why = nullptr);
inline std::optional<Packet> parse(const Bytes &b, std::string *why = nullptr) {
  return parse(b.data(), b.size(), why);
}

// Serial-number comparison of [MR-GEN-3].
inline bool psn_before(uint32_t a, uint32_t b) { return int32_t(b - a) > 0; }

// [MR-CC-10] rate hint encoding.
uint16_t encode_rate_hint(uint32_t mbps);
uint32_t decode_rate_hint(uint16_t hint);

}  // namespace conf

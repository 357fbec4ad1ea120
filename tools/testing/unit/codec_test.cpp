// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Header codec: the shared vectors, round trips, and clause-level properties of the parser.
#include <gtest/gtest.h>

#include <array>
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "core.hpp"

namespace {

struct CodecCase : testing::TestWithParam<size_t> {};
struct ValidCodecCase : testing::TestWithParam<size_t> {};

std::vector<u8> Bytes(const mr_codec_case &c)
{
	std::vector<u8> b(MR_CODEC_CASE_MAX);
	u32 n = mr_codec_case_bytes(&c, b.data(), static_cast<u32>(b.size()));

	EXPECT_LE(n, b.size()) << c.name;
	b.resize(std::min<size_t>(n, b.size()));
	return b;
}

std::vector<size_t> ValidCaseIndices()
{
	std::vector<size_t> idx;

	for (size_t i = 0; i < MR_CODEC_NR_CASES; i++)
		if (mr_codec_cases[i].expect == MR_PARSE_OK)
			idx.push_back(i);
	return idx;
}

std::string CaseName(const testing::TestParamInfo<size_t> &info)
{
	const mr_codec_case &c = mr_codec_cases[info.param];
	std::string name = std::string(c.clause) + "_" + c.name;
	for (char &ch : name)
		if (!std::isalnum(static_cast<unsigned char>(ch)))
			ch = '_';
	return name + "_" + std::to_string(info.param);
}

// [MR-WIRE-12] every vector parses to its expected verdict and fields.
TEST_P(CodecCase, ParsesToExpectedVerdictAndFields)
{
	const mr_codec_case &c = mr_codec_cases[GetParam()];
	std::vector<u8> b = Bytes(c);
	mr_pkt pkt;
	enum mr_parse_result res = mr_pkt_parse(b.data(), static_cast<u32>(b.size()), &pkt);

	EXPECT_EQ(res, c.expect) << c.name << ": got " << mr_parse_result_name(res);
	if (c.expect != MR_PARSE_OK)
		return;
	EXPECT_EQ(pkt.bth.opcode, c.opcode);
	EXPECT_EQ(pkt.bth.psn, c.psn);
	EXPECT_EQ(pkt.bth.stream, c.stream);
	EXPECT_EQ(pkt.bth.msn, c.msn);
	EXPECT_EQ(pkt.bth.offset, c.offset);
	EXPECT_EQ(pkt.bth.payload_len, c.payload_len);
	EXPECT_EQ(pkt.bth.timestamp, static_cast<u32>(MR_TS));
	EXPECT_EQ(mr_codec_case_key(&pkt), c.key);
	EXPECT_EQ(mr_codec_case_key2(&pkt), c.key2);
}

// [MR-GEN-2] building a parsed valid vector reproduces its bytes exactly (all big-endian).
TEST_P(ValidCodecCase, BuildReproducesValidVectorBytes)
{
	const mr_codec_case &c = mr_codec_cases[GetParam()];
	std::vector<u8> b = Bytes(c);
	mr_pkt pkt;
	std::array<u8, MR_CODEC_CASE_MAX> out{};

	ASSERT_EQ(mr_pkt_parse(b.data(), static_cast<u32>(b.size()), &pkt), MR_PARSE_OK);
	ASSERT_EQ(mr_pkt_build(&pkt, out.data(), out.size()), b.size());
	EXPECT_EQ(0, std::memcmp(out.data(), b.data(), b.size()));
}

// [MR-GEN-5] [MR-SEC-6] every strict prefix of a valid packet is rejected.
TEST_P(ValidCodecCase, EveryTruncationIsRejected)
{
	const mr_codec_case &c = mr_codec_cases[GetParam()];
	std::vector<u8> b = Bytes(c);
	mr_pkt pkt;

	for (u32 len = 0; len < b.size(); len++) {
		std::vector<u8> copy(b.begin(), b.begin() + len);
		EXPECT_NE(mr_pkt_parse(copy.data(), len, &pkt), MR_PARSE_OK) << "prefix " << len;
	}
}

// The parser reads no byte past mr_pkt_header_need()'s count: a receiver may keep the
// payload elsewhere (the kernel leaves it in the skb's pages). Every vector parses to the
// same verdict and fields when every byte after that count is changed.
TEST_P(CodecCase, ParserReadsOnlyTheHeaderBytesItNeeds)
{
	const mr_codec_case &c = mr_codec_cases[GetParam()];
	std::vector<u8> b = Bytes(c);
	const u32 len = static_cast<u32>(b.size());
	const u32 need = mr_pkt_header_need(b.data(), std::min<u32>(len, MR_PEEK_LEN));
	mr_pkt a{}, x{};

	EXPECT_GE(need, static_cast<u32>(MR_PEEK_LEN));
	EXPECT_LE(need, static_cast<u32>(MR_MAX_HDR_LEN));
	std::vector<u8> other(b);
	for (u32 i = need; i < len; i++)
		other[i] = static_cast<u8>(~other[i]);
	enum mr_parse_result ra = mr_pkt_parse(b.data(), len, &a);
	enum mr_parse_result rx = mr_pkt_parse(other.data(), len, &x);
	ASSERT_EQ(ra, rx) << c.name;
	if (ra != MR_PARSE_OK)
		return;
	EXPECT_EQ(need, std::max<u32>(len - a.bth.payload_len, MR_PEEK_LEN)) << c.name;
	a.payload = x.payload = nullptr;
	EXPECT_EQ(0, std::memcmp(&a, &x, sizeof(a))) << c.name;
}

// The parser defines every field of the packet it returns, whatever the struct held
// before, but for the SACK and MSGACK lists of a packet that is not an ACK (struct
// mr_pkt): an ACK's are written in full, its MSGACKs up to n_msg_acks.
TEST_P(CodecCase, ParserDefinesEveryFieldItReturns)
{
	const mr_codec_case &c = mr_codec_cases[GetParam()];
	std::vector<u8> b = Bytes(c);
	const u32 len = static_cast<u32>(b.size());
	mr_pkt clean, dirty;

	std::memset(&clean, 0, sizeof(clean));
	std::memset(&dirty, 0xa5, sizeof(dirty));
	enum mr_parse_result rc = mr_pkt_parse(b.data(), len, &clean);
	ASSERT_EQ(rc, mr_pkt_parse(b.data(), len, &dirty)) << c.name;
	EXPECT_EQ(0, std::memcmp(&clean, &dirty, offsetof(mr_pkt, ack.sack))) << c.name;
	if (rc != MR_PARSE_OK || clean.bth.opcode != MR_OP_ACK)
		return;
	EXPECT_EQ(0, std::memcmp(clean.ack.sack, dirty.ack.sack, sizeof(clean.ack.sack))) << c.name;
	EXPECT_EQ(0, std::memcmp(clean.ack.msg_acks, dirty.ack.msg_acks,
				 clean.ack.n_msg_acks * sizeof(clean.ack.msg_acks[0])))
		<< c.name;
}

// Only the payloads the engine hands to placement untouched (Write, Send, Read response)
// may stay out of the receiver's contiguous bytes; never judged before MR_PEEK_LEN bytes.
TEST_P(CodecCase, OnlyPlacedPayloadsMayStayWhereTheyArrived)
{
	const mr_codec_case &c = mr_codec_cases[GetParam()];
	std::vector<u8> b = Bytes(c);
	const u32 len = static_cast<u32>(b.size());
	mr_pkt pkt;

	EXPECT_FALSE(mr_pkt_payload_placed(b.data(), std::min<u32>(len, MR_PEEK_LEN - 1)));
	if (mr_pkt_parse(b.data(), len, &pkt) != MR_PARSE_OK)
		return;
	const bool placed = pkt.bth.opcode == MR_OP_WRITE || pkt.bth.opcode == MR_OP_SEND ||
			    pkt.bth.opcode == MR_OP_READ_RESP;
	EXPECT_EQ(mr_pkt_payload_placed(b.data(), len), placed && len >= MR_PEEK_LEN) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Vectors, CodecCase, testing::Range<size_t>(0, MR_CODEC_NR_CASES),
			 CaseName);
INSTANTIATE_TEST_SUITE_P(Vectors, ValidCodecCase, testing::ValuesIn(ValidCaseIndices()),
			 CaseName);

// [MR-CONST-1] header sizes are the static sizes of the constants table.
TEST(Codec, HeaderSizesMatchConstantsTable_MR_CONST_1)
{
	EXPECT_EQ(mr_pkt_header_len(MR_OP_PROBE, 0, 0), 32u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_SEND, 0, 0), 40u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_SEND, MR_F_LAST | MR_F_IMM, 0), 44u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_WRITE, 0, 0), 48u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_ATOMIC_CAS, 0, 0), 64u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_ATOMIC_RESP, 0, 0), 40u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_UD_SEND, 0, 0), 40u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_ACK, 0, 16), static_cast<u32>(MR_MAX_HDR_LEN));
	EXPECT_EQ(mr_pkt_header_len(MR_OP_NAK, 0, 0), 40u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_CONNECT_REQ, 0, 0), 72u);
	EXPECT_EQ(mr_pkt_header_len(MR_OP_CLOSE, 0, 0), 40u);
	EXPECT_EQ(mr_pkt_header_len(0x7f, 0, 0), 0u);
}

// [MR-WIRE-3] sequenced opcodes are exactly those of the opcode table.
TEST(Codec, SequencedOpcodesAreThoseOfTheTable_MR_WIRE_3)
{
	for (int op = 0; op < 256; op++) {
		bool seq = op == MR_OP_SEND || op == MR_OP_WRITE || op == MR_OP_READ_REQ ||
			   op == MR_OP_READ_RESP || op == MR_OP_ATOMIC_CAS ||
			   op == MR_OP_ATOMIC_FADD || op == MR_OP_ATOMIC_RESP || op == MR_OP_PROBE;
		EXPECT_EQ(mr_opcode_sequenced(static_cast<u8>(op)), seq) << op;
	}
}

// [MR-WIRE-2] only the 15 opcodes of the table are known.
TEST(Codec, OnlyTableOpcodesAreKnown_MR_WIRE_2)
{
	int known = 0;

	for (int op = 0; op < 256; op++)
		known += mr_opcode_known(static_cast<u8>(op));
	EXPECT_EQ(known, 15);
}

// [MR-WIRE-4] any reserved flag bit makes any opcode invalid.
TEST(Codec, ReservedFlagBitsAreRejectedOnEveryOpcode_MR_WIRE_4)
{
	for (int op = 0; op < 256; op++) {
		if (!mr_opcode_known(static_cast<u8>(op)))
			continue;
		for (int bit = 7; bit < 16; bit++) {	// bit 6 is MSG_PROBE
			mr_pkt pkt{};
			std::array<u8, MR_MAX_HDR_LEN> buf{};
			mr_pkt out;

			pkt.bth.version = MR_VERSION;
			pkt.bth.opcode = static_cast<u8>(op);
			pkt.bth.flags = static_cast<u16>(1u << bit);
			u32 len = mr_pkt_build(&pkt, buf.data(), buf.size());
			ASSERT_GT(len, 0u);
			EXPECT_EQ(mr_pkt_parse(buf.data(), len, &out), MR_PARSE_BAD_FLAGS);
		}
	}
}

// [MR-WIRE-10] [MR-WIRE-11] a message cut at PMTU parses packet by packet, LAST on the end.
TEST(Codec, MessageCutAtPmtuParsesWithLastOnlyOnTheFinalPacket_MR_WIRE_11)
{
	const u32 pmtu = 1024, msg_len = 5000;
	std::vector<u8> payload(pmtu, 0x5a);

	for (u32 off = 0; off < msg_len; off += pmtu) {
		mr_pkt pkt{};
		std::array<u8, 2048> buf{};
		mr_pkt out;
		u32 plen = std::min(pmtu, msg_len - off);

		pkt.bth.version = MR_VERSION;
		pkt.bth.opcode = MR_OP_SEND;
		pkt.bth.flags = off + plen == msg_len ? MR_F_LAST : 0;
		pkt.bth.payload_len = static_cast<u16>(plen);
		pkt.bth.offset = off;
		pkt.msgh.msg_len = msg_len;
		pkt.payload = payload.data();
		u32 len = mr_pkt_build(&pkt, buf.data(), buf.size());
		ASSERT_EQ(mr_pkt_parse(buf.data(), len, &out), MR_PARSE_OK);
		EXPECT_EQ(out.bth.offset, off);
		EXPECT_EQ(out.payload, buf.data() + 40);
		/* flipping LAST makes it invalid */
		buf[3] ^= MR_F_LAST;
		EXPECT_EQ(mr_pkt_parse(buf.data(), len, &out), MR_PARSE_BAD_LAST);
	}
}

// [MR-GEN-5] the builder refuses a buffer too small and never writes past it.
// The kernel builds the headers of a data packet and copies its payload straight from
// memory: the header builder leaves the payload's bytes alone (zeroing them first was a
// second pass over every packet), and both builders agree on the headers.
TEST(Codec, HeaderBuilderLeavesThePayloadToTheCaller)
{
	mr_pkt pkt{};
	pkt.bth.version = MR_VERSION;
	pkt.bth.opcode = MR_OP_WRITE;
	pkt.bth.flags = MR_F_LAST;
	pkt.bth.payload_len = 100;
	pkt.reth.length = 100;
	std::array<u8, 256> a{}, b{};
	b.fill(0xa5);
	u32 len = mr_pkt_build(&pkt, a.data(), a.size());
	ASSERT_EQ(mr_pkt_build_header(&pkt, b.data(), b.size()), len);
	const u32 hdr = len - 100;
	EXPECT_TRUE(std::equal(a.begin(), a.begin() + hdr, b.begin()));
	EXPECT_TRUE(std::all_of(b.begin() + hdr, b.begin() + len, [](u8 x) { return x == 0xa5; }));
	EXPECT_TRUE(std::all_of(a.begin() + hdr, a.begin() + len, [](u8 x) { return x == 0; }));
	EXPECT_EQ(mr_pkt_build_header(&pkt, b.data(), len - 1), 0u);
}

TEST(Codec, BuilderRespectsCapacity_MR_GEN_5)
{
	std::vector<u8> b = Bytes(mr_codec_cases[0]);
	u32 len = static_cast<u32>(b.size());
	mr_pkt pkt;
	std::array<u8, 64> buf{};

	ASSERT_EQ(mr_pkt_parse(b.data(), len, &pkt), MR_PARSE_OK);
	EXPECT_EQ(mr_pkt_build(&pkt, buf.data(), len - 1), 0u);
	EXPECT_EQ(mr_pkt_build(&pkt, buf.data(), len), len);
}

TEST(Codec, NullBufferIsTruncated_MR_SEC_6)
{
	mr_pkt pkt;

	EXPECT_EQ(mr_pkt_parse(nullptr, 100, &pkt), MR_PARSE_TRUNCATED);
}

} // namespace

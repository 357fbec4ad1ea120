// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// libFuzzer target: the parser is total and build(parse(x)) is a fixed point ([MR-SEC-6]).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "core/codec.h"
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mr_pkt pkt, again;
	u8 out[MR_MAX_HDR_LEN + 65536];
	u8 out2[MR_MAX_HDR_LEN + 65536];

	if (size > 0xffffffffu)
		return 0;
	/* A private copy so that ASan sees any read past the end of the packet. */
	std::vector<u8> copy(data, data + size);
	enum mr_parse_result res = mr_pkt_parse(copy.data(), static_cast<u32>(size), &pkt);
	if (res >= MR_PARSE_NR_RESULTS)
		abort();
	if (res != MR_PARSE_OK)
		return 0;
	u32 len = mr_pkt_build(&pkt, out, sizeof(out));
	if (len != size)
		abort();
	if (mr_pkt_parse(out, len, &again) != MR_PARSE_OK)
		abort();
	if (mr_pkt_build(&again, out2, sizeof(out2)) != len || memcmp(out, out2, len) != 0)
		abort();
	return 0;
}

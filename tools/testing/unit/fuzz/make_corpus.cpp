// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Writes every valid codec vector into a directory as the fuzzer's seed corpus.
#include <cstdio>
#include <fstream>
#include <string>

extern "C" {
#include "core/tests/codec_cases.h"
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	int n = 0;
	for (size_t i = 0; i < MR_CODEC_NR_CASES; i++) {
		const mr_codec_case &c = mr_codec_cases[i];
		std::string path = std::string(argv[1]) + "/" + (c.expect == MR_PARSE_OK ? "ok" : "bad") +
				   "-" + std::to_string(i);
		u8 buf[MR_CODEC_CASE_MAX];
		u32 len = mr_codec_case_bytes(&c, buf, sizeof(buf));
		if (len > sizeof(buf))
			return 1;
		std::ofstream f(path, std::ios::binary);
		f.write(reinterpret_cast<const char *>(buf), len);
		n++;
	}
	std::printf("%d files\n", n);
	return 0;
}

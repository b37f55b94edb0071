// Hidden driver for cpp-debug-project: runs the pipeline on the grader's batches and prints the summaries.
// It judges nothing; the grader recomputes every summary itself.
//
// Every line it prints is signed (HMAC-SHA256) with a key it reads from `.key` and deletes first thing in
// main, before any project code runs (the grader refuses project code that would run earlier: constructors,
// destructors, ifuncs, definitions that replace C library or runtime functions). So project code that prints
// summaries and an end marker itself, and exits before the buggy code runs, writes lines the grader rejects.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace {

struct Sha256 {
    std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char buf[64];
    std::size_t used = 0;
    std::uint64_t total = 0;

    static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

    void block(const unsigned char* p) {
        static const std::uint32_t k[64] = {
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
            0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
            0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
            0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
            0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
            0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
            0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
        std::uint32_t w[64];
        for (int i = 0; i < 16; ++i)
            w[i] = (std::uint32_t(p[4 * i]) << 24) | (std::uint32_t(p[4 * i + 1]) << 16) |
                   (std::uint32_t(p[4 * i + 2]) << 8) | std::uint32_t(p[4 * i + 3]);
        for (int i = 16; i < 64; ++i) {
            std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int i = 0; i < 64; ++i) {
            std::uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
            std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    }

    void update(const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        total += n;
        while (n) {
            std::size_t take = std::min(n, sizeof(buf) - used);
            std::memcpy(buf + used, p, take);
            used += take; p += take; n -= take;
            if (used == sizeof(buf)) { block(buf); used = 0; }
        }
    }

    void digest(unsigned char out[32]) {
        std::uint64_t bits = total * 8;
        unsigned char pad = 0x80;
        update(&pad, 1);
        unsigned char zero = 0;
        while (used != 56) update(&zero, 1);
        unsigned char len[8];
        for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
        update(len, 8);
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<unsigned char>(h[i] >> (24 - 8 * j));
    }
};

std::string hex(const unsigned char* p, std::size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) { s += digits[p[i] >> 4]; s += digits[p[i] & 15]; }
    return s;
}

std::string hmac_hex(const std::vector<unsigned char>& key, const std::string& msg) {
    unsigned char k[64] = {0}, inner[32], outer[32];
    std::memcpy(k, key.data(), std::min<std::size_t>(key.size(), 64));
    unsigned char ipad[64], opad[64];
    for (int i = 0; i < 64; ++i) { ipad[i] = k[i] ^ 0x36; opad[i] = k[i] ^ 0x5c; }
    Sha256 a;
    a.update(ipad, 64); a.update(msg.data(), msg.size()); a.digest(inner);
    Sha256 b;
    b.update(opad, 64); b.update(inner, 32); b.digest(outer);
    return hex(outer, 32);
}

std::vector<unsigned char> g_key;

void emit(const std::string& line) {
    const std::string tagged = hmac_hex(g_key, line) + " " + line + "\n";
    std::fwrite(tagged.data(), 1, tagged.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    {
        std::FILE* kf = std::fopen(".key", "r");
        char khex[129] = {0};
        if (!kf || std::fscanf(kf, "%128s", khex) != 1) return 2;
        std::fclose(kf);
        unlink(".key");
        for (std::size_t i = 0; khex[2 * i] && khex[2 * i + 1]; ++i) {
            unsigned v = 0;
            std::sscanf(khex + 2 * i, "%2x", &v);
            g_key.push_back(static_cast<unsigned char>(v));
        }
        std::memset(khex, 0, sizeof khex);
    }
    std::FILE* in = std::fopen(argv[1], "r");
    if (!in) return 2;
    int scenarios = 0;
    if (std::fscanf(in, "%d", &scenarios) != 1) return 2;
    for (int s = 0; s < scenarios; ++s) {
        int workers = 0;
        std::size_t n_batches = 0;
        if (std::fscanf(in, "%d %zu", &workers, &n_batches) != 2) return 2;
        std::vector<std::vector<double>> batches(n_batches);
        for (auto& batch : batches) {
            char head[32];
            if (std::fscanf(in, "%31s", head) != 1) return 2;
            if (std::strcmp(head, "g") == 0) {
                // A long batch given as a rule: value i is ((a + i*b) mod 16000 - 8000) / 8.
                long long n = 0, a = 0, b = 0;
                if (std::fscanf(in, "%lld %lld %lld", &n, &a, &b) != 3 || n < 0) return 2;
                batch.resize(static_cast<std::size_t>(n));
                for (long long i = 0; i < n; ++i)
                    batch[static_cast<std::size_t>(i)] = static_cast<double>((a + i * b) % 16000 - 8000) / 8.0;
                continue;
            }
            char* end = nullptr;
            const unsigned long long n = std::strtoull(head, &end, 10);
            if (*end != '\0') return 2;
            batch.resize(n);
            for (double& v : batch)
                if (std::fscanf(in, "%lf", &v) != 1) return 2;
        }
        const Summary r = process_all(batches, workers);
        char line[256];
        std::snprintf(line, sizeof line, "summary %d %zu %.17g %.17g %.17g %.17g", s, r.count, r.sum, r.min, r.max, r.mean);
        emit(line);
    }
#if defined(__SANITIZE_ADDRESS__)
    // Check for leaks now, before the end marker, so no exit path can skip the check and still look finished.
    __lsan_do_leak_check();
#endif
    emit("end " + std::to_string(scenarios));
    return 0;
}

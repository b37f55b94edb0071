// Hidden driver for cpp-debug-project: runs the pipeline on the grader's batches and prints the summaries.
// It judges nothing; the grader recomputes every summary itself.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    std::FILE* in = std::fopen(argv[1], "r");
    if (!in) return 2;
    unsigned long long nonce = 0;
    int scenarios = 0;
    if (std::fscanf(in, "%llu %d", &nonce, &scenarios) != 2) return 2;
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
        std::printf("summary %d %zu %.17g %.17g %.17g %.17g\n", s, r.count, r.sum, r.min, r.max, r.mean);
        std::fflush(stdout);
    }
#if defined(__SANITIZE_ADDRESS__)
    // Check for leaks now, before the end marker, so no exit path can skip the check and still look finished.
    __lsan_do_leak_check();
#endif
    std::printf("end %llu\n", nonce);
    return 0;
}

// Hidden driver for cpp-tiled-transpose. It only produces data: the grader recomputes every expected value.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


void transpose(const float* src, float* dst, std::size_t rows, std::size_t cols);

namespace {

constexpr std::size_t kGuard = 64;
constexpr float kGuardValue = -7.0f;
constexpr float kUnwritten = -1.0f;

std::uint64_t mix(std::uint64_t seed, std::uint64_t k) {
    std::uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void fill(std::vector<float>& a, std::uint64_t seed) {
    for (std::size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(mix(seed, k) & 0xFFFF);
}

// The two baselines: either loop order of the plain double loop. `noinline` keeps every call on the same
// footing; the grader compares the candidate with the faster of the two.
__attribute__((noinline)) void naive_rows(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}

__attribute__((noinline)) void naive_cols(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    for (std::size_t j = 0; j < cols; ++j)
        for (std::size_t i = 0; i < rows; ++i) dst[j * rows + i] = src[i * cols + j];
}

using Fn = void (*)(const float*, float*, std::size_t, std::size_t);

// Process CPU time, not wall time: a slice lost to another process on a busy machine is not counted,
// and work handed to extra threads is (so a parallel loop is not mistaken for a cache-friendly one).
// The raw syscall keeps a candidate's own `clock_gettime` from standing in for the real clock.
unsigned long long cpu_ns() {
    timespec ts{};
    syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<unsigned long long>(ts.tv_sec) * 1000000000ULL + static_cast<unsigned long long>(ts.tv_nsec);
}

unsigned long long timed(Fn f, const std::vector<float>& src, std::vector<float>& dst, std::size_t rows,
                         std::size_t cols) {
    std::memset(dst.data(), 0, dst.size() * sizeof(float));
    unsigned long long t0 = cpu_ns();
    f(src.data(), dst.data(), rows, cols);
    return cpu_ns() - t0;
}

std::uint64_t checksum(const float* d, std::size_t n) {
    std::uint64_t h = 0;
    for (std::size_t k = 0; k < n; ++k)
        h += static_cast<std::uint64_t>(d[k]) * (k * 2654435761ULL + 1);
    return h;
}

}  // namespace

// Input (argv[1]): seed, shape count, shapes, then the timing shape, repetitions and the two key rows.
// Output: out.bin holds, per shape, the destination with its guard zones; report.txt holds timings.
int main(int argc, char** argv) {
    if (argc < 2) return 2;
    std::FILE* in = std::fopen(argv[1], "r");
    if (!in) return 2;
    unsigned long long seed = 0;
    std::size_t n_shapes = 0;
    if (std::fscanf(in, "%llu %zu", &seed, &n_shapes) != 2) return 2;
    std::FILE* out = std::fopen("out.bin", "wb");
    std::FILE* rep = std::fopen("report.txt", "w");
    if (!out || !rep) return 2;
    for (std::size_t s = 0; s < n_shapes; ++s) {
        std::size_t rows = 0, cols = 0;
        if (std::fscanf(in, "%zu %zu", &rows, &cols) != 2) return 2;
        std::vector<float> src(rows * cols);
        fill(src, seed + s);
        std::vector<float> dst(rows * cols + 2 * kGuard, kUnwritten);
        for (std::size_t k = 0; k < kGuard; ++k) dst[k] = dst[kGuard + rows * cols + k] = kGuardValue;
        transpose(src.data(), dst.data() + kGuard, rows, cols);
        std::fwrite(dst.data(), sizeof(float), dst.size(), out);
        std::fflush(out);
        std::fprintf(rep, "shape %zu done\n", s);
        std::fflush(rep);
    }
    std::fclose(out);
    std::size_t rows = 0, cols = 0;
    int reps = 0;
    if (std::fscanf(in, "%zu %zu %d", &rows, &cols, &reps) != 3) return 2;
    std::vector<float> src(rows * cols), dst(rows * cols);
    // The timing matrix is src[i][j] = row_key[i] * cols + col_key[j] with two permutations from the
    // grader: every value is distinct and exact in a float, and the grader can compute the checksum of the
    // correct transpose in closed form, without building 16 MiB itself.
    std::vector<std::uint64_t> row_key(rows), col_key(cols);
    for (auto& k : row_key)
        if (std::fscanf(in, "%llu", reinterpret_cast<unsigned long long*>(&k)) != 1) return 2;
    for (auto& k : col_key)
        if (std::fscanf(in, "%llu", reinterpret_cast<unsigned long long*>(&k)) != 1) return 2;
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) src[i * cols + j] = static_cast<float>(row_key[i] * cols + col_key[j]);
    // Interleave baselines and candidate so background load hits all three; the grader keeps the best of
    // each. The candidate runs last in each round so the checksum after it is of its result.
    // Every timed call of the candidate is checked (dst is cleared before each), not only the last one: a
    // transpose that skips work on some calls cannot pass the timing with one honest call.
    for (int r = 0; r < reps; ++r) {
        unsigned long long a = timed(naive_rows, src, dst, rows, cols);
        unsigned long long b = timed(naive_cols, src, dst, rows, cols);
        unsigned long long c = timed(transpose, src, dst, rows, cols);
        std::fprintf(rep, "timing %llu %llu %llu %llu\n", a, b, c,
                     static_cast<unsigned long long>(checksum(dst.data(), dst.size())));
        std::fflush(rep);
    }
    std::fclose(rep);
    return 0;
}

#include <algorithm>
#include <cstddef>

// Square tiles small enough that one source tile and one destination tile stay in L1 together.
void transpose(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    constexpr std::size_t kTile = 32;
    for (std::size_t ii = 0; ii < rows; ii += kTile) {
        const std::size_t i_end = std::min(ii + kTile, rows);
        for (std::size_t jj = 0; jj < cols; jj += kTile) {
            const std::size_t j_end = std::min(jj + kTile, cols);
            for (std::size_t i = ii; i < i_end; ++i)
                for (std::size_t j = jj; j < j_end; ++j) dst[j * rows + i] = src[i * cols + j];
        }
    }
}

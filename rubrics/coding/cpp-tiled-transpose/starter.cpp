#include <cstddef>

// Transpose `src` (rows x cols, row-major) into `dst` (cols x rows, row-major): dst[j][i] = src[i][j].
// Make it cache-friendly: the naive double loop walks `dst` with a stride of `rows` floats.
void transpose(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}

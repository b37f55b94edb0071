#pragma once

#include <vector>

#include "stats.hpp"

// Summarises every sample of every batch, spreading the batches over `workers` threads.
Summary process_all(const std::vector<std::vector<double>>& batches, int workers);

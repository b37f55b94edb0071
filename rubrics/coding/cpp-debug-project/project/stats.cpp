#include "stats.hpp"

#include <algorithm>
#include <limits>

RunningStats::RunningStats()
    : count_(0), sum_(0.0), min_(std::numeric_limits<double>::max()), max_(std::numeric_limits<double>::min()) {}

void RunningStats::add(double x) {
    ++count_;
    sum_ += x;
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
}

void RunningStats::merge(const RunningStats& other) {
    count_ += other.count_;
    sum_ += other.sum_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
}

Summary RunningStats::summary() const {
    Summary s;
    s.count = count_;
    s.sum = sum_;
    s.min = min_;
    s.max = max_;
    s.mean = count_ ? sum_ / static_cast<double>(count_) : 0.0;
    return s;
}

#pragma once

#include <cstddef>

// The summary the pipeline reports for a set of samples.
struct Summary {
    std::size_t count = 0;
    double sum = 0.0;
    double min = 0.0;
    double max = 0.0;
    double mean = 0.0;
};

// Streaming statistics over doubles; two partial results combine with merge().
class RunningStats {
public:
    RunningStats();
    void add(double x);
    void merge(const RunningStats& other);
    Summary summary() const;

private:
    std::size_t count_;
    double sum_;
    double min_;
    double max_;
};

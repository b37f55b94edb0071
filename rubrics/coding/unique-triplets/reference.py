def three_sum(nums: list[int], target: int) -> list[list[int]]:
    """Distinct sorted triplets of values from different positions summing to target."""
    a = sorted(nums)
    n = len(a)
    out: list[list[int]] = []
    for i in range(n - 2):
        if i > 0 and a[i] == a[i - 1]:
            continue  # same first value: same triplets
        lo, hi = i + 1, n - 1
        while lo < hi:
            s = a[i] + a[lo] + a[hi]
            if s < target:
                lo += 1
            elif s > target:
                hi -= 1
            else:
                out.append([a[i], a[lo], a[hi]])
                lo += 1
                while lo < hi and a[lo] == a[lo - 1]:
                    lo += 1
                hi -= 1
    return out

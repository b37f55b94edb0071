def merge_intervals(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    """Union of two sorted lists of closed intervals, as sorted disjoint intervals."""
    out: list[list[int]] = []
    i = j = 0
    while i < len(a) or j < len(b):
        # Take the interval with the smaller start from either list (a two-way merge).
        if j >= len(b) or (i < len(a) and a[i][0] <= b[j][0]):
            s, e = a[i]
            i += 1
        else:
            s, e = b[j]
            j += 1
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out

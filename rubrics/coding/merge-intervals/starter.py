def merge_intervals(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    """Union of two sorted lists of closed intervals, as sorted disjoint intervals."""
    raise NotImplementedError

def three_sum(nums: list[int], target: int) -> list[list[int]]:
    """Distinct sorted triplets of values from different positions summing to target."""
    raise NotImplementedError

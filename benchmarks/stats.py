"""The summary every benchmark here prints beside a time: the median and its interquartile range."""
import statistics


def quartiles(samples):
    """(p25, median, p75) of a list of numbers; one sample is all three."""
    samples = list(samples)
    if len(samples) == 1:
        return samples[0], samples[0], samples[0]
    low, _, high = statistics.quantiles(samples, n=4)
    return low, statistics.median(samples), high

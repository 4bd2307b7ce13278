package io.handoff.bench.serving;

import java.util.SplittableRandom;

/**
 * How requests are offered: a closed loop ({@code concurrency} requests in flight, the next sent when one ends) or an
 * open loop (Poisson arrivals at {@code rate} requests/s from a seeded generator; an infinite rate sends all at once).
 */
public sealed interface Load
{
    record Closed(int concurrency)
            implements Load
    {
        public Closed
        {
            if (concurrency < 1) {
                throw new IllegalArgumentException("--concurrency must be at least 1, was " + concurrency);
            }
        }
    }

    record Open(double rate, long seed)
            implements Load
    {
        public Open
        {
            if (!(rate > 0)) {
                throw new IllegalArgumentException("--rate must be a positive number of requests per second or inf, was " + rate);
            }
        }

        /** Arrival times in seconds from the first: exponential gaps of mean 1/rate, all 0 at an infinite rate. */
        public double[] arrivals(int count)
        {
            double[] arrivals = new double[count];
            if (Double.isInfinite(rate)) {
                return arrivals;
            }
            SplittableRandom random = new SplittableRandom(seed);
            for (int i = 1; i < count; i++) {
                arrivals[i] = arrivals[i - 1] - Math.log(1 - random.nextDouble()) / rate;
            }
            return arrivals;
        }
    }

    /** {@code --rate}'s text: a positive number, or {@code inf}. */
    static double parseRate(String text)
    {
        if (text.equalsIgnoreCase("inf") || text.equalsIgnoreCase("infinity")) {
            return Double.POSITIVE_INFINITY;
        }
        try {
            return Double.parseDouble(text);
        }
        catch (NumberFormatException e) {
            throw new IllegalArgumentException("--rate must be a positive number of requests per second or inf, was '" + text + "'");
        }
    }
}

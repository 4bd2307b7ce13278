package io.handoff.chaos;

import java.util.SplittableRandom;

/**
 * Whether, when and how the soak's client aborts one request, drawn from the soak's seed and the request's index so a
 * run with the same seed aborts the same requests the same way.
 *
 * @param afterTokens for {@link Phase#DURING_DECODE}: the abort comes once this many tokens arrived (at least 1)
 */
public record AbortPlan(Phase phase, Method method, int afterTokens)
{
    /** When the abort comes. */
    public enum Phase
    {
        /** Never: the request runs to its end. */
        NONE,
        /** As soon as the router has the request: usually before the decode asked its prefill for the KV. */
        BEFORE_BOOTSTRAP,
        /** When the stream's headers arrive: the decode took the request and waits for its KV. */
        DURING_TRANSFER,
        /** After some of the output tokens arrived. */
        DURING_DECODE;

        public String label()
        {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** How the client aborts. */
    public enum Method
    {
        /** {@code POST /abort_request} to the router. */
        ABORT_REQUEST,
        /** Closing the streaming connection: the router sees its client gone. */
        DISCONNECT
    }

    public static final AbortPlan NONE = new AbortPlan(Phase.NONE, Method.ABORT_REQUEST, 0);

    /** The plan of request {@code index}: aborted with probability {@code abortRate}, in a phase and a way chosen evenly. */
    public static AbortPlan draw(long seed, int index, double abortRate, int maxNewTokens)
    {
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + index);
        if (random.nextDouble() >= abortRate) {
            return NONE;
        }
        Phase phase = Phase.values()[1 + random.nextInt(3)];
        // before bootstrap the client has no connection worth closing yet: it asks the router
        Method method = phase == Phase.BEFORE_BOOTSTRAP || random.nextBoolean() ? Method.ABORT_REQUEST : Method.DISCONNECT;
        int afterTokens = phase == Phase.DURING_DECODE ? 1 + random.nextInt(Math.max(1, maxNewTokens - 1)) : 0;
        return new AbortPlan(phase, method, afterTokens);
    }

    public boolean aborts()
    {
        return phase != Phase.NONE;
    }
}

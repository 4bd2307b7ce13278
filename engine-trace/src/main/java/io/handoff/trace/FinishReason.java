package io.handoff.trace;

/** Why a request stopped producing tokens. */
public enum FinishReason
{
    /** It produced {@code max_new_tokens}. */
    LENGTH,
    /** It produced a stop token (EOS unless ignored, or one of its stop ids). */
    STOP,
    /** A client or an operator aborted it. */
    ABORT,
    /** The engine failed it; the result's error says why. */
    ERROR
}

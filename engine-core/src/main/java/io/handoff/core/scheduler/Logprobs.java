package io.handoff.core.scheduler;

import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * The log probabilities a request asked for ({@link LogprobRequest}).
 *
 * @param inputFrom the prompt position of {@code input}'s first entry ({@code input} covers {@code inputFrom} to the
 *        prompt's end; position 0 has no log probability, so a request starting at 0 gets entries from 1)
 * @param input the prompt tokens' log probabilities, each given the tokens before it
 * @param output each output token's, in output order
 */
public record Logprobs(int inputFrom, List<TokenLogprob> input, List<TokenLogprob> output)
{
    public static final Logprobs NONE = new Logprobs(0, List.of(), List.of());

    public Logprobs
    {
        input = List.copyOf(requireNonNull(input, "input is null"));
        output = List.copyOf(requireNonNull(output, "output is null"));
    }
}

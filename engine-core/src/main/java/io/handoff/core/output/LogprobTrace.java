package io.handoff.core.output;

import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.TokenLogprob;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * The log probabilities one generation returns, position by position: the prompt's from {@link LogprobOptions#promptFrom}
 * (the first of them has none), then one per output token. An entry the engine did not deliver is null.
 *
 * @param prompt what the engine computed for the prompt (its {@link Logprobs#input()} from {@link Logprobs#inputFrom()})
 * @param output one per output token, in order
 */
public record LogprobTrace(LogprobOptions options, int[] promptIds, Logprobs prompt, List<TokenLogprob> output)
{
    public LogprobTrace
    {
        requireNonNull(options, "options is null");
        requireNonNull(promptIds, "promptIds is null");
        requireNonNull(prompt, "prompt is null");
        output = Collections.unmodifiableList(new ArrayList<>(requireNonNull(output, "output is null")));
    }

    /** The first prompt position reported, or the prompt's length when none is. */
    public int promptFrom()
    {
        return options.promptFrom() < 0 ? promptIds.length : options.promptFrom();
    }

    /** Prompt position {@code position}'s log probability; null at the first position reported. */
    public TokenLogprob promptAt(int position)
    {
        int index = position - prompt.inputFrom();
        return position == promptFrom() || index < 0 || index >= prompt.input().size() ? null : prompt.input().get(index);
    }
}

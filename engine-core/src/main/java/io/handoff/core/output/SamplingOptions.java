package io.handoff.core.output;

import io.handoff.core.grammar.Grammar;
import io.handoff.core.model.SamplingParams;

import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * How one generation samples and where it stops, as every API takes it ({@link SamplingFields}), after validation.
 *
 * @param stops stop strings: the output ends at the first one (matched in the decoded text)
 * @param stopTokenIds token ids that end the output
 * @param noStopTrim the stop string or stop token that ended the output stays in its text (SGLang's {@code no_stop_trim})
 * @param skipSpecialTokens special tokens add nothing to the text; false: they add how they are written
 * @param grammar what the output must follow (a JSON Schema, a regex, an EBNF grammar, a tool call); empty: anything
 */
public record SamplingOptions(
        SamplingParams sampling,
        List<String> stops,
        Set<Integer> stopTokenIds,
        boolean ignoreEos,
        boolean noStopTrim,
        boolean skipSpecialTokens,
        Optional<Grammar> grammar)
{
    /** Greedy, no stops, EOS ignored: the one-token generation of {@code /health_generate}. */
    public static final SamplingOptions HEALTH = new SamplingOptions(SamplingParams.GREEDY, List.of(), Set.of(), true, false, true);

    public SamplingOptions
    {
        requireNonNull(sampling, "sampling is null");
        stops = List.copyOf(requireNonNull(stops, "stops is null"));
        stopTokenIds = Set.copyOf(requireNonNull(stopTokenIds, "stopTokenIds is null"));
        requireNonNull(grammar, "grammar is null");
    }

    public SamplingOptions(SamplingParams sampling, List<String> stops, Set<Integer> stopTokenIds, boolean ignoreEos, boolean noStopTrim,
            boolean skipSpecialTokens)
    {
        this(sampling, stops, stopTokenIds, ignoreEos, noStopTrim, skipSpecialTokens, Optional.empty());
    }

    /** These options with the output constrained to {@code constraint}. */
    public SamplingOptions withGrammar(Grammar constraint)
    {
        return new SamplingOptions(sampling, stops, stopTokenIds, ignoreEos, noStopTrim, skipSpecialTokens, Optional.of(constraint));
    }
}
